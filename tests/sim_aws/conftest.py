"""Fixtures of the simulated AWS suite: one simulated AWS for the session (a scaled-down fast
profile), a network and roles to build on, and an ACTIVE EKS cluster."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.profile import get_profile
from sim.testing import aws_client, simulated_aws, wait_for

# The fast profile with shorter cluster creations: transient states (a reboot, an add-on
# update) keep windows wide enough to observe on a loaded machine.
PROFILE = replace(get_profile("fast"), name="fast-tests", hyperpod_create=1.0, eks_create=1.0)

sim = simulated_aws(profile=PROFILE, account_id="111111111111", set_env=False)


@dataclass(frozen=True)
class Network:
    vpc_id: str
    subnets: dict[str, str]  # zone id -> subnet id
    security_group: str
    role_arn: str


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def network(sim: SimulatedAws) -> Network:
    ec2 = aws_client(sim, "ec2")
    iam = aws_client(sim, "iam")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {}
    for index, zone in enumerate(["use1-az1", "use1-az2", "use1-az4"]):
        subnet = ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.0.{index * 16}.0/20", AvailabilityZoneId=zone
        )
        subnets[zone] = subnet["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="hp", Description="hyperpod", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="sim-test-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    for instance_type in ("ml.g5.8xlarge", "ml.g5.2xlarge"):
        sim.account.set_quota("sagemaker", f"{instance_type} for cluster usage", 1000)
    return Network(vpc, subnets, group, role)


def create_eks(sim: SimulatedAws, network: Network, name: str, **extra: Any) -> dict[str, Any]:
    eks = aws_client(sim, "eks")
    eks.create_cluster(
        name=name,
        roleArn=network.role_arn,
        resourcesVpcConfig={
            "subnetIds": [network.subnets["use1-az1"], network.subnets["use1-az2"]],
            "securityGroupIds": [network.security_group],
        },
        **extra,
    )
    return wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=10,
    )


@pytest.fixture(scope="session")
def shared_eks(sim: SimulatedAws, network: Network) -> dict[str, Any]:
    return create_eks(
        sim, network, "shared-eks", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}
    )


@pytest.fixture
def eks_cluster(sim: SimulatedAws, shared_eks: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The shared ACTIVE EKS cluster; a test's HyperPod cluster on it is deleted afterwards, as
    an EKS cluster orchestrates one HyperPod cluster at a time."""
    yield shared_eks
    sm = aws_client(sim, "sagemaker")
    for summary in sm.list_clusters()["ClusterSummaries"]:
        # a test's own delete may finish between the listing and these calls
        with contextlib.suppress(sm.exceptions.ResourceNotFound):
            described = sm.describe_cluster(ClusterName=summary["ClusterName"])
            orchestrator = described.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn")
            if orchestrator == shared_eks["arn"] and described["ClusterStatus"] != "Deleting":
                sm.delete_cluster(ClusterName=summary["ClusterName"])


def group_spec(
    network: Network,
    name: str = "workers",
    instance_type: str = "ml.g5.8xlarge",
    count: int = 2,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": network.role_arn,
        "LifeCycleConfig": {"SourceS3Uri": "s3://my-bucket/lifecycle", "OnCreate": "on_create.sh"},
        **extra,
    }


def create_hyperpod(
    sim: SimulatedAws,
    network: Network,
    eks_cluster: dict[str, Any],
    groups: list[dict[str, Any]] | None = None,
    *,
    subnets: list[str] | None = None,
    wait: bool = True,
    **extra: Any,
) -> str:
    """Create a HyperPod cluster on the shared EKS cluster; returns its name (InService if wait)."""
    name = unique("hp")
    sm = aws_client(sim, "sagemaker")
    sm.create_cluster(
        ClusterName=name,
        InstanceGroups=groups or [group_spec(network)],
        VpcConfig={
            "Subnets": subnets or [network.subnets["use1-az1"]],
            "SecurityGroupIds": [network.security_group],
        },
        Orchestrator={"Eks": {"ClusterArn": eks_cluster["arn"]}},
        **extra,
    )
    if wait:
        wait_for(
            lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService",
            timeout=10,
        )
    return name


def nodes(sim: SimulatedAws, name: str) -> list[dict[str, Any]]:
    sm = aws_client(sim, "sagemaker")
    result: list[dict[str, Any]] = sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    return result


@pytest.fixture
def clean_faults(sim: SimulatedAws) -> Iterator[None]:
    yield
    sim.faults.clear()
