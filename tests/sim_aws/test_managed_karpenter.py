"""HyperPod managed autoscaling: once UpdateCluster's AutoScaling (Mode Enable, AutoScalerType
Karpenter) is InService, the cluster serves managed Karpenter's HyperpodNodeClass and NodePool
kinds, as HyperPod installs Karpenter itself. Without them a caller that applies a node class
once the kinds are served (Hyperpilot's autoscaling stage) waits for ever."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_client, wait_for
from tests.sim_aws.test_faults import INSTANCE_TYPE, _hyperpod

GROUP = "karpenter.sagemaker.amazonaws.com"


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[SimulatedAws, KubeWorld]]:
    profile = get_profile("fast")
    kube = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=kube, account_id="777788880000").start()
    aws.account.set_quota("sagemaker", f"{INSTANCE_TYPE} for cluster usage", 1000)
    yield aws, kube
    aws.stop()
    kube.close()


def _served(kube: KubeWorld, eks: str) -> bool:
    registry = kube.api_server(eks).registry
    return bool(
        registry.has_crd(GROUP, "hyperpodnodeclasses")
        and registry.has_crd("karpenter.sh", "nodepools")
    )


def test_enabling_karpenter_autoscaling_serves_its_kinds(
    world: tuple[SimulatedAws, KubeWorld],
) -> None:
    sim, kube = world
    name, eks = _hyperpod(sim, "Automatic", count=1)
    assert not _served(kube, eks), "Karpenter's kinds are served before autoscaling is enabled"
    iam, sm = aws_client(sim, "iam"), aws_client(sim, "sagemaker")
    role = iam.create_role(
        RoleName=f"autoscaler-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument="{}"
    )["Role"]["Arn"]
    sm.update_cluster(
        ClusterName=name,
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        ClusterRole=role,
        NodeProvisioningMode="Continuous",
    )
    wait_for(
        lambda: sm.describe_cluster(ClusterName=name)["AutoScaling"]["Status"] == "InService",
        timeout=15,
    )
    assert _served(kube, eks)
