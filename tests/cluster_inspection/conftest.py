"""Fixtures of the inspection suite: a simulated AWS of its own account (moto keeps state per
account, so other suites in the session do not see these clusters, quotas or plans), the
Inspector pointed at it, and a spec builder."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.inspect import Inspector
from shared.contracts.cluster import ClusterSpec
from sim.aws import SimulatedAws
from sim.aws.account import ReservedCapacity
from sim.testing import aws_client, simulated_aws, wait_for

ACCOUNT_ID = "727272727272"
REGION = "us-east-1"

sim = simulated_aws(profile="fast", account_id=ACCOUNT_ID, set_env=False)


@dataclass(frozen=True)
class World:
    """What the account holds before any test asks: see `world` below."""

    vpc_id: str
    managed_hyperpod: str
    imported_hyperpod: str
    eks_name: str
    active_plan_arn: str
    expired_plan_arn: str


def spec(name: str = "llm-training", zone: str = "use1-az2", **groups: Any) -> ClusterSpec:
    """A ClusterSpec with one group per keyword (its name, `_` read as `-`)."""
    group_list = [{"name": k.replace("_", "-"), **v} for k, v in groups.items()] or [
        {"name": "workers", "instance_type": "ml.g5.8xlarge", "count": 1}
    ]
    return ClusterSpec.model_validate(
        {"name": name, "availability_zone_id": zone, "instance_groups": group_list}
    )


@pytest.fixture(autouse=True)
def full_buckets(sim: SimulatedAws) -> None:
    """Each test starts with the simulated AWS's throttling buckets full: these tests read
    through the adapters without the control plane's account limiter (which paces a running
    service under the published limits) and without botocore's retries, so a module's bursts
    would otherwise meet the Price List API's 10 at once and 5 a second (sim/aws/throttle.py;
    tests/sim_aws/test_throttle.py is where throttling is shown)."""
    sim.throttle.reset()


@pytest.fixture(scope="session")
def world(sim: SimulatedAws) -> World:
    """An account with a VPC, an EKS cluster this control plane made, two HyperPod clusters
    (one made here on it, one made elsewhere on an EKS cluster of its own), quotas set low for the types under test, and two
    training plans (one Active with capacity in use1-az2, one Expired)."""
    ec2, iam = aws_client(sim, "ec2"), aws_client(sim, "iam")
    eks, sm = aws_client(sim, "eks"), aws_client(sim, "sagemaker")
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.7.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az1", "use1-az2"))
    ]
    group = ec2.create_security_group(GroupName="inspect", Description="t", VpcId=vpc)["GroupId"]
    role = iam.create_role(RoleName="inspect-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks_arn = eks.create_cluster(
        name="made-here",
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets, "securityGroupIds": [group]},
        tags={"managed-by": "hyperpilot"},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )["cluster"]["arn"]
    # An EKS cluster orchestrates one HyperPod cluster: the one made elsewhere has its own.
    elsewhere_arn = eks.create_cluster(
        name="made-elsewhere-eks",
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets, "securityGroupIds": [group]},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )["cluster"]["arn"]
    # HyperPod accepts only an ACTIVE EKS cluster as its orchestrator.
    for made in ("made-here", "made-elsewhere-eks"):
        wait_for(lambda made=made: eks.describe_cluster(name=made)["cluster"]["status"] == "ACTIVE")
    sim.account.set_quota("sagemaker", "ml.g5.8xlarge for cluster usage", 3)
    sim.account.set_quota("sagemaker", "ml.p5.48xlarge for cluster usage", 2)
    for name, tags, count, orchestrator in (
        ("made-here-hp", [{"Key": "managed-by", "Value": "hyperpilot"}], 2, eks_arn),
        ("made-elsewhere", [{"Key": "team", "Value": "research"}], 0, elsewhere_arn),
    ):
        sm.create_cluster(
            ClusterName=name,
            InstanceGroups=[
                {
                    "InstanceGroupName": "gpu",
                    "InstanceType": "ml.g5.8xlarge",
                    "InstanceCount": count,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/lifecycle", "OnCreate": "on.sh"},
                }
            ],
            Tags=tags,
            VpcConfig={"Subnets": [subnets[1]], "SecurityGroupIds": [group]},
            Orchestrator={"Eks": {"ClusterArn": orchestrator}},
        )
    active = sim.account.add_training_plan(
        "p5-reserved", [ReservedCapacity("ml.p5.48xlarge", 4, "use1-az2")]
    )
    expired = sim.account.add_training_plan(
        "p5-last-month", [ReservedCapacity("ml.p5.48xlarge", 8, "use1-az2")], status="Expired"
    )
    return World(vpc, "made-here-hp", "made-elsewhere", "made-here", active.arn, expired.arn)


@pytest.fixture(scope="session")
def inspector(sim: SimulatedAws) -> Iterator[Inspector]:
    yield Inspector(AwsClients(REGION, sim.endpoint_url))
