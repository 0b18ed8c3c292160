"""The SageMaker adapter's instance-group methods and the stages, against the simulated AWS
through unmodified boto3: describe reads every member back, UpdateCluster carries exactly one
group, an unchanged request makes no call."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.ec2 import Ec2Network
from cluster_svc.adapters.inspect import Inspector
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.domain.instance_groups.described import DescribedCluster, group_request
from cluster_svc.domain.instance_groups.stages import (
    add_stages,
    delete_stages,
    software_stages,
    update_stages,
)
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    InstanceGroupChange,
    NewInstanceGroup,
    SoftwareUpdateSpec,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.errors import PermanentError
from shared.stages import Submitted
from sim.aws import SimulatedAws
from sim.testing import aws_client, simulated_aws
from tests.cluster_network.helpers import by_name, context, drive
from tests.instance_groups.test_decisions import assert_valid

ACCOUNT = "333344445555"
REGION = "us-east-1"

sim = simulated_aws(profile="fast", account_id=ACCOUNT, set_env=False)


@pytest.fixture(scope="module")
def hyperpod(sim: SimulatedAws) -> Iterator[str]:
    """A HyperPod cluster with two groups, made with boto3 and InService."""
    ec2 = aws_client(sim, "ec2")
    iam = aws_client(sim, "iam")
    sagemaker = aws_client(sim, "sagemaker")
    vpc = ec2.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.60.16.0/20", AvailabilityZoneId="use1-az2")
    group = ec2.create_security_group(GroupName="efa", Description="efa", VpcId=vpc)["GroupId"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = iam.create_role(RoleName="ig-exec", AssumeRolePolicyDocument=json.dumps(trust))
    name = f"ig-{uuid.uuid4().hex[:8]}"

    def spec(group_name: str, count: int, **extra: Any) -> dict[str, Any]:
        return {
            "InstanceGroupName": group_name,
            "InstanceType": "ml.g5.8xlarge",
            "InstanceCount": count,
            "ExecutionRole": role["Role"]["Arn"],
            "LifeCycleConfig": {
                "SourceS3Uri": "s3://ig-bucket/lifecycle/",
                "OnCreate": "on_create.sh",
            },
            "ThreadsPerCore": 1,
            "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 300}}],
            "NetworkInterface": {"InterfaceType": "efa"},
            **extra,
        }

    sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[
            spec(
                "gpu",
                1,
                CapacityRequirements={"Spot": {}},
                OnStartDeepHealthChecks=["InstanceStress"],
                KubernetesConfig={
                    "Labels": {"team": "nlp"},
                    "Taints": [{"Key": "gpu", "Value": "yes", "Effect": "NoSchedule"}],
                },
            ),
            spec("cpu", 1, CapacityRequirements={"OnDemand": {}}),
        ],
        VpcConfig={"SecurityGroupIds": [group], "Subnets": [subnet["Subnet"]["SubnetId"]]},
    )
    deadline = time.monotonic() + 20
    while sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] != "InService":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    yield name
    sagemaker.delete_cluster(ClusterName=name)


@pytest.fixture(scope="module")
def api(sim: SimulatedAws) -> SageMakerClusters:
    return SageMakerClusters(AwsClients(REGION, endpoint_url=sim.endpoint_url))


def _updates(sim: SimulatedAws, name: str) -> list[dict[str, Any]]:
    return [
        c["params"]
        for c in sim.call_log("sagemaker", "UpdateCluster")
        if c["params"]["ClusterName"] == name
    ]


def _update(name: str, group: str, **fields: Any) -> dict[str, Any]:
    return UpdateInstanceGroup(
        cluster="mine",
        hyperpod_cluster=name,
        region=REGION,
        group=group,
        change=InstanceGroupChange(**fields),
    ).model_dump(mode="json")


async def test_describe_reads_every_member_back_as_a_valid_entry(
    api: SageMakerClusters, hyperpod: str
) -> None:
    described = await api.describe_cluster_groups(hyperpod)
    assert described is not None and described.status == "InService"
    assert sorted(described.groups) == ["cpu", "gpu"]
    entry = group_request(described.groups["gpu"])
    assert entry["KubernetesConfig"] == {
        "Labels": {"team": "nlp"},
        "Taints": [{"Key": "gpu", "Value": "yes", "Effect": "NoSchedule"}],
    }
    assert entry["CapacityRequirements"] == {"Spot": {}}
    assert entry["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert_valid("UpdateCluster", {"ClusterName": hyperpod, "InstanceGroups": [entry]})
    assert await api.describe_cluster_groups("no-such-cluster") is None


async def test_scale_sends_one_group_and_keeps_every_member(
    sim: SimulatedAws, api: SageMakerClusters, hyperpod: str
) -> None:
    stage = by_name(update_stages(api, Ec2Network(api.aws), Inspector(api.aws)))["update_group"]
    before = _updates(sim, hyperpod)
    done = await drive(stage, _update(hyperpod, "gpu", count=2), timeout=20)
    assert not done.noop and done.outputs["target_count"] == 2
    [request] = _updates(sim, hyperpod)[len(before) :]
    assert [g["InstanceGroupName"] for g in request["InstanceGroups"]] == ["gpu"]
    gpu = aws_client(sim, "sagemaker").describe_cluster(ClusterName=hyperpod)["InstanceGroups"]
    after = {g["InstanceGroupName"]: g for g in gpu}
    assert after["gpu"]["CurrentCount"] == 2
    assert after["gpu"]["CapacityRequirements"] == {"Spot": {}}
    assert after["gpu"]["KubernetesConfig"]["DesiredLabels"] == {"team": "nlp"}
    assert after["cpu"]["TargetCount"] == 1


async def test_unchanged_values_make_no_call(
    sim: SimulatedAws, api: SageMakerClusters, hyperpod: str
) -> None:
    stage = by_name(update_stages(api, Ec2Network(api.aws), Inspector(api.aws)))["update_group"]
    before = len(_updates(sim, hyperpod))
    done = await drive(stage, _update(hyperpod, "cpu", count=1, capacity_type="on-demand"))
    assert done.noop
    assert len(_updates(sim, hyperpod)) == before


async def test_a_second_update_while_updating_is_a_conflict_with_the_next_step(
    sim: SimulatedAws, api: SageMakerClusters, hyperpod: str
) -> None:
    described = await api.describe_cluster_groups(hyperpod)
    assert described is not None
    entry = group_request(described.groups["cpu"])
    await api.update_cluster({"ClusterName": hyperpod, "InstanceGroups": [entry]})
    with pytest.raises(PermanentError) as conflict:
        await api.update_cluster({"ClusterName": hyperpod, "InstanceGroups": [entry]})
    assert conflict.value.code == "ConflictException"
    assert "retry once it is InService" in (conflict.value.hint or "")
    deadline = time.monotonic() + 20
    while (
        current := await api.describe_cluster_groups(hyperpod)
    ) and current.status != "InService":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)


async def test_software_update_then_delete_a_group(
    sim: SimulatedAws, api: SageMakerClusters, hyperpod: str
) -> None:
    software = by_name(software_stages(api))["update_software"]
    command = UpdateClusterSoftware(
        cluster="mine",
        hyperpod_cluster=hyperpod,
        region=REGION,
        spec=SoftwareUpdateSpec(instance_groups=["cpu"], wait_interval_seconds=5),
    ).model_dump(mode="json")
    done = await drive(software, command, timeout=20)
    assert done.outputs["instance_groups"] == ["cpu"]
    [call] = [
        c["params"]
        for c in sim.call_log("sagemaker", "UpdateClusterSoftware")
        if c["params"]["ClusterName"] == hyperpod
    ]
    assert call["DeploymentConfig"]["WaitIntervalInSeconds"] == 5

    delete = by_name(delete_stages(api))["delete_group"]
    command = DeleteInstanceGroup(
        cluster="mine", hyperpod_cluster=hyperpod, region=REGION, group="cpu"
    ).model_dump(mode="json")
    await drive(delete, command, timeout=20)
    assert _updates(sim, hyperpod)[-1] == {
        "ClusterName": hyperpod,
        "InstanceGroupsToDelete": ["cpu"],
    }
    described = await api.describe_cluster_groups(hyperpod)
    assert described is not None and sorted(described.groups) == ["gpu"]
    with pytest.raises(PermanentError) as last:
        await drive(delete, {**command, "group": "gpu"})
    assert "only instance group" in last.value.message


class CountingClusters(SageMakerClusters):
    """The SageMaker adapter, counting its DescribeCluster calls."""

    describes = 0

    async def describe_cluster_groups(self, name: str) -> DescribedCluster | None:
        self.describes += 1
        return await super().describe_cluster_groups(name)


async def test_an_add_describes_the_cluster_once_before_it_waits(
    sim: SimulatedAws, hyperpod: str
) -> None:
    """validate reads DescribeCluster and passes it to compute_subnet and add_group of the
    same pass; only the wait for the nodes reads it again."""
    aws = AwsClients(REGION, endpoint_url=sim.endpoint_url)
    counting = CountingClusters(aws)
    stages = by_name(add_stages(counting, Ec2Network(aws), Inspector(aws)))
    command = AddInstanceGroup(
        cluster="mine",
        hyperpod_cluster=hyperpod,
        region=REGION,
        group=NewInstanceGroup(
            name="extra", instance_type="ml.g5.8xlarge", count=1, availability_zone_id="use1-az2"
        ),
        cluster_zone_id="use1-az2",
    ).model_dump(mode="json")
    operation = uuid.uuid4()
    outputs: dict[str, dict[str, Any]] = {}
    for name in ("validate", "compute_subnet"):
        done = await drive(stages[name], command, outputs, operation_id=operation)
        outputs[name] = done.outputs
    assert counting.describes == 1
    submitted = await stages["add_group"].run(
        context("add_group", command, outputs, operation_id=operation)
    )
    assert counting.describes == 1 and isinstance(submitted, Submitted)
    [added] = [
        u
        for u in _updates(sim, hyperpod)
        if (u.get("InstanceGroups") or [{}])[0].get("InstanceGroupName") == "extra"
    ]
    assert added["InstanceGroups"][0]["InstanceCount"] == 1
    # A second pass (a retry, a redelivery) reads the cluster afresh.
    again = await stages["validate"].run(
        context("validate", command, {}, operation_id=uuid.uuid4())
    )
    assert again.noop and counting.describes == 2


async def test_efa_support_is_read_from_ec2(api: SageMakerClusters) -> None:
    assert await api.efa_supported("ml.p5.48xlarge") is True
    assert await api.efa_supported("ml.c5.xlarge") is False
