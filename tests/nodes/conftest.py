"""A simulated AWS whose EKS clusters get an emulated Kubernetes API, and one HyperPod cluster
of 30 nodes on an ACTIVE EKS cluster, made with boto3 (what the node adapter runs against)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_client, wait_for

ACCOUNT = "444455556666"
INSTANCE_TYPE = "ml.g5.2xlarge"
NODE_COUNT = 30


@dataclass(frozen=True)
class HyperPodCluster:
    name: str
    arn: str
    eks: dict[str, Any]


@pytest.fixture(scope="session")
def sim() -> Iterator[SimulatedAws]:
    profile = get_profile("fast")
    world = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=world, account_id=ACCOUNT).start()
    yield aws
    aws.stop()
    world.close()


@pytest.fixture(scope="module")
def hyperpod(sim: SimulatedAws) -> HyperPodCluster:
    ec2, iam, eks, sm = (aws_client(sim, s) for s in ("ec2", "iam", "eks", "sagemaker"))
    suffix = uuid.uuid4().hex[:8]
    vpc = ec2.create_vpc(CidrBlock="10.70.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.70.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az2", "use1-az4"))
    ]
    group = ec2.create_security_group(GroupName=f"n-{suffix}", Description="n", VpcId=vpc)[
        "GroupId"
    ]
    role = iam.create_role(RoleName=f"nodes-{suffix}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    sim.account.set_quota("sagemaker", f"{INSTANCE_TYPE} for cluster usage", 1000)
    name = f"nodes-{suffix}"
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )
    cluster = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=15,
    )
    arn = sm.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": INSTANCE_TYPE,
                "InstanceCount": NODE_COUNT,
                "ExecutionRole": role,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
            }
        ],
        VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
        Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        NodeRecovery="None",
    )["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService", 15)
    return HyperPodCluster(name=name, arn=arn, eks=cluster)
