"""Fixtures of the control-plane stages: a simulated AWS of its own account, the networking and
roles the stages build on (made here with boto3, as the network and identity stages would), and
helpers that run a stage the way the engine does."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from cluster_svc.adapters.aws import AwsClients
from shared.contracts.cluster import ClusterSpec, InstanceGroupSpec, StorageSpec
from shared.contracts.commands import CreateCluster
from shared.stages import Done, Pending, Stage, StageContext, Submitted
from sim.aws import SimulatedAws
from sim.testing import aws_client, simulated_aws
from tests.cluster_network.helpers import parsed

ACCOUNT = "222233334444"
REGION = "us-east-1"
COMPUTE_ZONE = "use1-az2"
OTHER_ZONE = "use1-az4"

sim = simulated_aws(profile="fast", account_id=ACCOUNT, set_env=False)


@dataclass(frozen=True)
class Prereqs:
    """What the network, security_group, compute_subnet and role stages would have output."""

    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _role(iam: Any, name: str, service: str) -> dict[str, Any]:
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    return {"role_arn": role["Arn"], "role_name": name, "created": True}


@pytest.fixture(scope="session")
def prereqs(sim: SimulatedAws) -> Prereqs:
    ec2 = aws_client(sim, "ec2")
    iam = aws_client(sim, "iam")
    vpc = ec2.create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]

    def subnet(cidr: str, zone: str) -> str:
        made = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone)
        return str(made["Subnet"]["SubnetId"])

    public = [subnet("10.50.0.0/24", "use1-az1"), subnet("10.50.1.0/24", COMPUTE_ZONE)]
    private = [subnet("10.50.2.0/24", "use1-az1"), subnet("10.50.3.0/24", COMPUTE_ZONE)]
    compute = subnet("10.50.16.0/20", COMPUTE_ZONE)
    compute_other = subnet("10.50.32.0/20", OTHER_ZONE)
    group = ec2.create_security_group(
        GroupName="hyperpilot-efa", Description="EFA self-referencing", VpcId=vpc
    )["GroupId"]
    return Prereqs(
        {
            "network": {
                "vpc_id": vpc,
                "public_subnet_ids": public,
                "private_subnet_ids": private,
                "zone_ids": ["use1-az1", COMPUTE_ZONE],
            },
            "security_group": {"security_group_id": group, "created": True},
            "compute_subnet": {
                "subnet_id": compute,
                "cidr": "10.50.16.0/20",
                "availability_zone_id": COMPUTE_ZONE,
                "subnets": {COMPUTE_ZONE: compute, OTHER_ZONE: compute_other},
                "created": True,
            },
            "eks_role": _role(iam, "cp-test-eks", "eks.amazonaws.com"),
            "execution_role": _role(iam, "cp-test-execution", "sagemaker.amazonaws.com"),
            "dependencies": {"components": {}},
        }
    )


@pytest.fixture(scope="session")
def aws(sim: SimulatedAws) -> AwsClients:
    return AwsClients(REGION, endpoint_url=sim.endpoint_url)


def cluster_command(
    name: str,
    *,
    groups: list[InstanceGroupSpec] | None = None,
    fsx_capacity_gib: int | None = None,
    bucket: str | None = None,
) -> dict[str, Any]:
    spec = ClusterSpec(
        name=name,
        availability_zone_id=COMPUTE_ZONE,
        instance_groups=groups
        or [InstanceGroupSpec(name="workers", instance_type="ml.g5.8xlarge", count=2)],
        storage=StorageSpec(fsx_capacity_gib=fsx_capacity_gib),
        tags={"team": "research"},
    )
    command = CreateCluster(spec=spec, region=REGION, bucket=bucket or f"{name}-data")
    return command.model_dump(mode="json")


def context(
    command: dict[str, Any],
    outputs: dict[str, dict[str, Any]] | None = None,
    *,
    operation_id: uuid.UUID | None = None,
    stage: str = "stage",
    external_id: str | None = None,
    own: dict[str, Any] | None = None,
) -> StageContext[Any]:
    async def report(message: str) -> None:
        return None

    return StageContext(
        operation_id=operation_id or uuid.uuid4(),
        stage=stage,
        command=command,
        outputs=dict(outputs or {}),
        external_id=external_id,
        own_outputs=dict(own or {}),
        _report=report,
        _parsed=parsed(command),
    )


@dataclass
class Driven:
    done: Done
    submitted: Submitted | None
    progress: list[str]


async def drive(stage: Stage, ctx: StageContext[Any], timeout: float = 20.0) -> Driven:
    """Run a stage as the engine does: run once, persist the submission, poll to Done."""
    result = await stage.run(ctx)
    if isinstance(result, Done):
        return Driven(result, None, [])
    ctx.external_id = result.external_id
    ctx.own_outputs = {**ctx.own_outputs, **result.outputs}
    assert stage.poll is not None
    progress: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        polled = await stage.poll(ctx)
        if isinstance(polled, Done):
            merged = Done({**ctx.own_outputs, **polled.outputs}, polled.noop)
            return Driven(merged, result, progress)
        assert isinstance(polled, Pending)
        if polled.progress:
            progress.append(polled.progress)
        if loop.time() > deadline:
            raise AssertionError(f"{stage.name} still pending after {timeout}s: {progress[-1:]}")
        await asyncio.sleep(0.1)


def by_name(stages: list[Stage]) -> dict[str, Stage]:
    return {s.name: s for s in stages}
