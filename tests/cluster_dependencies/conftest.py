"""Fixtures of the dependency stages: a simulated AWS whose EKS clusters get a real (emulated)
Kubernetes API, and one ACTIVE EKS cluster created with boto3 on a network made for it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_client, wait_for

ACCOUNT = "333344445555"
REGION = "us-east-1"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatedAws]:
    profile = get_profile("fast")
    world = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=world, account_id=ACCOUNT).start()
    yield aws
    aws.stop()
    world.close()


def make_eks_cluster(sim: SimulatedAws) -> dict[str, Any]:
    """A new ACTIVE EKS cluster (DescribeCluster's `cluster`), as the eks_cluster stage leaves it."""
    ec2, iam, eks = aws_client(sim, "ec2"), aws_client(sim, "iam"), aws_client(sim, "eks")
    vpc = ec2.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.60.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az2", "use1-az4"))
    ]
    role = iam.create_role(RoleName=unique("eks"), AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    name = unique("deps")
    eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
    cluster: dict[str, Any] = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=15,
    )
    return cluster


@pytest.fixture
def eks_cluster(sim: SimulatedAws) -> dict[str, Any]:
    """A cluster of the test's own."""
    return make_eks_cluster(sim)


@pytest.fixture(scope="module")
def shared_cluster(sim: SimulatedAws) -> dict[str, Any]:
    """A cluster the tests of one module share."""
    return make_eks_cluster(sim)
