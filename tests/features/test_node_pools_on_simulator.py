"""The features adapter lists the NodePools and HyperpodNodeClasses Hyperpilot made (by its
component label) from the Kubernetes emulator, with the official client: what the node-pool
diff and the removal of undeclared pools are computed from."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.features import LiveFeatures
from cluster_svc.adapters.ports import build_ports
from cluster_svc.domain.features.objects import node_class, node_pool
from cluster_svc.domain.features.plan import actual_pools
from cluster_svc.domain.features.steps import Apply
from shared.contracts.features import (
    FeaturesChange,
    FeatureTarget,
    NodePoolSpec,
    UpdateFeatures,
)
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.cluster_dependencies.conftest import REGION


@pytest.fixture(scope="module")
def live(sim: SimulatedAws) -> LiveFeatures:
    aws = AwsClients(REGION, sim.endpoint_url)
    return LiveFeatures(aws, build_ports(aws))


async def test_observe_lists_the_managed_pools_only(
    live: LiveFeatures, eks: dict[str, Any], sim: SimulatedAws
) -> None:
    command = UpdateFeatures(
        cluster=eks["name"],
        region=REGION,
        target=FeatureTarget(eks_cluster=eks["name"], hyperpod_cluster=None, bucket="b"),
        changes=FeaturesChange(autoscaling={"enabled": True}),  # type: ignore[arg-type]
    )
    names = await live.names(command)
    before = await live.observe(names)
    assert before.pools == {} and before.classes == {}  # Karpenter's kinds are not served yet
    kube = sim.ctx.kube
    assert isinstance(kube, KubeWorld)
    server = kube.api_server(eks["name"])
    server.install("karpenter")
    pool = NodePoolSpec(name="gpus", instance_groups=["gpu"], weight=10, gpu_limit=16)
    await live.execute(names, Apply(node_class(["gpu"], "gpus")))
    await live.execute(names, Apply(node_pool(pool)))
    # a NodePool someone else made is not Hyperpilot's to diff or remove
    server.apply(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "theirs"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.sagemaker.amazonaws.com",
                            "kind": "HyperpodNodeClass",
                            "name": "theirs",
                        },
                        "requirements": [],
                    }
                }
            },
        }
    )
    after = await live.observe(names)
    assert set(after.pools) == {"gpus"} and set(after.classes) == {"gpus"}
    assert actual_pools(after) == [
        {
            "name": "gpus",
            "instance_groups": ["gpu"],
            "weight": 10,
            "gpu_limit": 16,
            "consolidation": "WhenEmpty",
            "consolidate_after": "5m",
        }
    ]
