"""SageMaker HyperPod task governance through raw botocore (parameter_validation=False, so the
simulator's own checks answer): cluster scheduler configs and compute quotas are refused when
their shape breaks botocore's model or AWS's rules (the cluster, the add-on, the instance types,
one policy per cluster, one quota per team, TargetVersion), and what they set appears in the
EKS cluster as the task-governance add-on renders it (namespaces, Kueue queues, priority
classes)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_client, wait_for

RAW = Config(parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1})
ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
GPU_TYPE = "ml.g5.12xlarge"
CPU_TYPE = "ml.c5.xlarge"
KUEUE = "kueue.x-k8s.io/v1beta1"


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[SimulatedAws, KubeWorld]]:
    profile = get_profile("fast")
    kube = KubeWorld(profile)
    aws = SimulatedAws(profile, kube=kube, account_id="777788889999").start()
    for itype in (GPU_TYPE, CPU_TYPE):
        aws.account.set_quota("sagemaker", f"{itype} for cluster usage", 100)
    yield aws, kube
    aws.stop()
    kube.close()


@pytest.fixture(scope="module")
def cluster(world: tuple[SimulatedAws, KubeWorld]) -> dict[str, str]:
    """A HyperPod cluster (2 x ml.g5.12xlarge, 1 x ml.c5.xlarge) on an EKS cluster of its own."""
    sim, _ = world
    ec2, iam, eks, sm = (aws_client(sim, s) for s in ("ec2", "iam", "eks", "sagemaker"))
    suffix = uuid.uuid4().hex[:8]
    vpc = ec2.create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.90.{i * 16}.0/20", AvailabilityZoneId=zone)[
            "Subnet"
        ]["SubnetId"]
        for i, zone in enumerate(("use1-az1", "use1-az2"))
    ]
    group = ec2.create_security_group(GroupName=f"tg-{suffix}", Description="t", VpcId=vpc)[
        "GroupId"
    ]
    role = iam.create_role(RoleName=f"tg-{suffix}", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    name = f"tg-{suffix}"
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": subnets},
        accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
    )
    eks_cluster = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c,
        timeout=15,
    )
    groups = [
        {
            "InstanceGroupName": n,
            "InstanceType": t,
            "InstanceCount": c,
            "ExecutionRole": role,
            "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
        }
        for n, t, c in (("gpu", GPU_TYPE, 2), ("cpu", CPU_TYPE, 1))
    ]
    arn = sm.create_cluster(
        ClusterName=name,
        InstanceGroups=groups,
        VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
        Orchestrator={"Eks": {"ClusterArn": eks_cluster["arn"]}},
    )["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService", 15)
    return {"name": name, "arn": arn, "eks": name}


def raw(sim: SimulatedAws) -> Any:
    return aws_client(sim, "sagemaker", config=RAW)


def refused(call: Any, **params: Any) -> tuple[str, str]:
    with pytest.raises(ClientError) as err:
        call(**params)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return err.value.response["Error"]["Code"], err.value.response["Error"]["Message"]


def quota_params(arn: str, team: str, **config: Any) -> dict[str, Any]:
    return {
        "Name": f"{team}-quota",
        "ClusterArn": arn,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [{"InstanceType": GPU_TYPE, "Count": 1}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 100},
            "PreemptTeamTasks": "LowerPriority",
            **config,
        },
        "ComputeQuotaTarget": {"TeamName": team, "FairShareWeight": 10},
        "ActivationState": "Enabled",
    }


def policy(arn: str, *classes: tuple[str, int]) -> dict[str, Any]:
    return {
        "Name": "policy",
        "ClusterArn": arn,
        "SchedulerConfig": {
            "PriorityClasses": [{"Name": n, "Weight": w} for n, w in classes],
            "FairShare": "Enabled",
        },
    }


def kube_object(kube: KubeWorld, eks: str, kind: str, name: str, ns: str = "") -> Any:
    return kube.api_server(eks).get("v1" if kind == "Namespace" else KUEUE, kind, name, ns)


def test_refused_without_the_add_on(
    world: tuple[SimulatedAws, KubeWorld], cluster: dict[str, str]
) -> None:
    sim, _ = world
    code, message = refused(raw(sim).create_compute_quota, **quota_params(cluster["arn"], "early"))
    assert code == "ValidationException"
    assert f"The Amazon EKS add-on {ADDON} is not installed on EKS cluster" in message
    assert "install it" in message
    code, message = refused(
        raw(sim).create_cluster_scheduler_config, **policy(cluster["arn"], ("training", 50))
    )
    assert code == "ValidationException" and ADDON in message


@pytest.fixture(scope="module")
def governed(world: tuple[SimulatedAws, KubeWorld], cluster: dict[str, str]) -> dict[str, str]:
    sim, _ = world
    eks = aws_client(sim, "eks")
    eks.create_addon(clusterName=cluster["eks"], addonName=ADDON)
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=cluster["eks"], addonName=ADDON)["addon"]["status"]
            == "ACTIVE"
        ),
        timeout=15,
    )
    return cluster


def test_the_model_refuses_bad_shapes(
    world: tuple[SimulatedAws, KubeWorld], governed: dict[str, str]
) -> None:
    sim, _ = world
    sm = raw(sim)
    good = quota_params(governed["arn"], "shapes")
    cases = [
        (dict(good, Name="bad_name!"), "'name' failed to satisfy constraint"),
        ({k: v for k, v in good.items() if k != "ComputeQuotaTarget"}, "computeQuotaTarget"),
        (
            dict(
                good,
                ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": "ml.x9.huge"}]},
            ),
            "computeQuotaConfig.computeQuotaResources.1.member.instanceType",
        ),
        (
            dict(
                good,
                ComputeQuotaConfig=dict(
                    good["ComputeQuotaConfig"],
                    ResourceSharingConfig={"Strategy": "Share"},
                ),
            ),
            "Member must satisfy enum value set: [Lend, DontLend, LendAndBorrow]",
        ),
        (
            dict(good, ComputeQuotaTarget={"TeamName": "Team_A"}),
            "computeQuotaTarget.teamName",
        ),
        (dict(good, ActivationState=True), "Member must be of type string"),
    ]
    for params, expected in cases:
        code, message = refused(sm.create_compute_quota, **params)
        assert code == "ValidationException", (params, message)
        assert expected in message, message
    code, message = refused(
        sm.update_cluster_scheduler_config, ClusterSchedulerConfigId="abc", TargetVersion="1"
    )
    assert code == "ValidationException"
    assert "clusterSchedulerConfigId" in message and "targetVersion" in message
    assert not sm.list_compute_quotas(ClusterArn=governed["arn"])["ComputeQuotaSummaries"]


def test_rules_the_model_cannot_say(
    world: tuple[SimulatedAws, KubeWorld], governed: dict[str, str]
) -> None:
    sim, _ = world
    sm = raw(sim)
    arn = governed["arn"]
    missing = arn[:-12] + "000000000000"
    cases = [
        (quota_params(missing, "x"), "does not exist"),
        (
            quota_params(
                arn, "x", ComputeQuotaResources=[{"InstanceType": "ml.p5.48xlarge", "Count": 1}]
            ),
            f"has no instance group of type ml.p5.48xlarge (its instance groups run {CPU_TYPE}, "
            f"{GPU_TYPE})",
        ),
        (
            quota_params(
                arn, "x", ComputeQuotaResources=[{"InstanceType": CPU_TYPE, "Accelerators": 2}]
            ),
            f"{CPU_TYPE} has no accelerators",
        ),
        (
            quota_params(
                arn,
                "x",
                ComputeQuotaResources=[
                    {"InstanceType": GPU_TYPE, "Count": 1},
                    {"InstanceType": GPU_TYPE, "Accelerators": 2},
                ],
            ),
            "listed twice",
        ),
        (
            quota_params(arn, "x", ComputeQuotaResources=[{"InstanceType": GPU_TYPE}]),
            "give Count (whole instances) or Accelerators, VCpu or MemoryInGiB",
        ),
        (
            quota_params(
                arn,
                "x",
                ComputeQuotaResources=[{"InstanceType": GPU_TYPE, "Count": 1, "Accelerators": 4}],
            ),
            "cannot be combined with Accelerators",
        ),
        (
            quota_params(
                arn,
                "x",
                ComputeQuotaResources=[
                    {
                        "InstanceType": GPU_TYPE,
                        "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 2},
                    }
                ],
            ),
            "does not support MIG partitions",
        ),
        (
            quota_params(
                arn, "x", ResourceSharingConfig={"Strategy": "LendAndBorrow", "BorrowLimit": 600}
            ),
            "BorrowLimit 600 is out of range: it is a percentage of the team's quota from 1 to 500",
        ),
    ]
    for params, expected in cases:
        code, message = refused(sm.create_compute_quota, **params)
        assert code == "ValidationException", (params, message)
        assert expected in message, message
    many = policy(arn, *((f"class-{n}", n) for n in range(11)))
    code, message = refused(sm.create_cluster_scheduler_config, **many)
    assert code == "ValidationException"
    assert (
        "'schedulerConfig.priorityClasses' failed to satisfy constraint: Member must have "
        in message
    )
    code, message = refused(
        sm.create_cluster_scheduler_config, **policy(arn, ("training", 1), ("training", 2))
    )
    assert "names training more than once" in message
    assert not sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]
    assert not sm.list_cluster_scheduler_configs(ClusterArn=arn)["ClusterSchedulerConfigSummaries"]


def test_scheduler_config_lifecycle_and_priority_classes(
    world: tuple[SimulatedAws, KubeWorld], governed: dict[str, str]
) -> None:
    sim, kube = world
    sm = raw(sim)
    arn = governed["arn"]
    created = sm.create_cluster_scheduler_config(
        **policy(arn, ("inference", 100), ("training", 50))
    )
    config_id = created["ClusterSchedulerConfigId"]
    assert created["ClusterSchedulerConfigArn"].endswith(f":cluster-scheduler-config/{config_id}")
    first = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    assert first["Status"] == "Creating" and first["ClusterSchedulerConfigVersion"] == 1
    wait_for(
        lambda: (
            sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)["Status"]
            == "Created"
        )
    )
    wpc = wait_for(
        lambda: kube_object(kube, governed["eks"], "WorkloadPriorityClass", "inference-priority")
    )
    assert wpc["value"] == 100
    code, message = refused(sm.create_cluster_scheduler_config, **policy(arn, ("other", 1)))
    assert (
        code == "ConflictException"
        and f"already has cluster scheduler config {config_id}" in message
    )
    code, message = refused(
        sm.update_cluster_scheduler_config,
        ClusterSchedulerConfigId=config_id,
        TargetVersion=7,
        SchedulerConfig={"PriorityClasses": [{"Name": "training", "Weight": 60}]},
    )
    assert code == "ConflictException"
    assert "TargetVersion 7 does not match the current version 1" in message
    updated = sm.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id,
        TargetVersion=1,
        SchedulerConfig={
            "PriorityClasses": [
                {"Name": "inference", "Weight": 90},
                {"Name": "training", "Weight": 60},
            ]
        },
    )
    assert updated["ClusterSchedulerConfigVersion"] == 2
    assert (
        sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)["Status"]
        == "Updating"
    )
    code, _ = refused(
        sm.update_cluster_scheduler_config, ClusterSchedulerConfigId=config_id, TargetVersion=2
    )
    assert code == "ConflictException"  # still Updating
    wait_for(
        lambda: (
            (
                kube_object(kube, governed["eks"], "WorkloadPriorityClass", "training-priority")
                or {}
            ).get("value")
            == 60
        )
    )
    latest = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    assert latest["Status"] == "Updated" and latest["SchedulerConfig"]["FairShare"] == "Enabled"
    old = sm.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=config_id, ClusterSchedulerConfigVersion=1
    )
    assert [c["Weight"] for c in old["SchedulerConfig"]["PriorityClasses"]] == [100, 50]
    listed = sm.list_cluster_scheduler_configs(ClusterArn=arn)["ClusterSchedulerConfigSummaries"]
    assert [s["ClusterSchedulerConfigId"] for s in listed] == [config_id]
    assert not sm.list_cluster_scheduler_configs(NameContains="nothing")[
        "ClusterSchedulerConfigSummaries"
    ]
    code, _ = refused(sm.describe_cluster_scheduler_config, ClusterSchedulerConfigId="zzzzzzzzzzzz")
    assert code == "ResourceNotFound"

    # deleted: Deleting, then gone from the list and from Describe
    sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=config_id)
    wait_for(
        lambda: (
            not sm.list_cluster_scheduler_configs(ClusterArn=arn)["ClusterSchedulerConfigSummaries"]
        )
    )
    code, _ = refused(sm.describe_cluster_scheduler_config, ClusterSchedulerConfigId=config_id)
    assert code == "ResourceNotFound"


def test_compute_quota_lifecycle_renders_the_team(
    world: tuple[SimulatedAws, KubeWorld], governed: dict[str, str]
) -> None:
    sim, kube = world
    sm = raw(sim)
    arn, eks = governed["arn"], governed["eks"]
    quota_id = sm.create_compute_quota(**quota_params(arn, "team-a"))["ComputeQuotaId"]
    assert sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Creating"
    code, message = refused(
        sm.create_compute_quota, **dict(quota_params(arn, "team-a"), Name="another-name")
    )
    assert code == "ConflictException"
    assert "Team team-a already has compute quota team-a-quota" in message
    code, message = refused(
        sm.create_compute_quota,
        **dict(quota_params(arn, "team-z"), Name="team-a-quota"),
    )
    assert code == "ConflictException" and "already has compute quota team-a-quota" in message
    wait_for(lambda: sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Created")
    described = sm.describe_compute_quota(ComputeQuotaId=quota_id)
    assert described["ComputeQuotaTarget"] == {"TeamName": "team-a", "FairShareWeight": 10}
    assert described["ComputeQuotaConfig"]["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow",
        "BorrowLimit": 100,
    }
    assert described["ComputeQuotaVersion"] == 1 and described["ActivationState"] == "Enabled"
    ns = wait_for(lambda: kube_object(kube, eks, "Namespace", "hyperpod-ns-team-a"))
    assert ns["metadata"]["labels"]["sagemaker.amazonaws.com/compute-quota-id"] == quota_id
    lq = kube_object(kube, eks, "LocalQueue", "hyperpod-ns-team-a-localqueue", "hyperpod-ns-team-a")
    assert lq["spec"]["clusterQueue"] == "hyperpod-ns-team-a-clusterqueue"

    def gpus() -> Any:
        cq = kube_object(kube, eks, "ClusterQueue", "hyperpod-ns-team-a-clusterqueue")
        resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        return next(r for r in resources if r["name"] == "nvidia.com/gpu")

    assert gpus() == {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 4}
    code, message = refused(
        sm.update_compute_quota,
        ComputeQuotaId=quota_id,
        TargetVersion=1,
        ComputeQuotaTarget={"TeamName": "team-b"},
    )
    assert code == "ValidationException" and "TeamName cannot change" in message
    version = sm.update_compute_quota(
        ComputeQuotaId=quota_id,
        TargetVersion=1,
        ComputeQuotaConfig={
            "ComputeQuotaResources": [{"InstanceType": GPU_TYPE, "Accelerators": 6}],
            "ResourceSharingConfig": {"Strategy": "Lend"},
        },
    )["ComputeQuotaVersion"]
    assert version == 2
    wait_for(lambda: gpus() == {"name": "nvidia.com/gpu", "nominalQuota": 6, "borrowingLimit": 0})
    # a disabled quota holds its queue: nothing new is admitted from it
    wait_for(lambda: sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Updated")
    sm.update_compute_quota(ComputeQuotaId=quota_id, TargetVersion=2, ActivationState="Disabled")
    wait_for(
        lambda: (
            kube_object(kube, eks, "ClusterQueue", "hyperpod-ns-team-a-clusterqueue")["spec"][
                "stopPolicy"
            ]
            == "Hold"
        )
    )
    wait_for(lambda: sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Updated")
    listed = sm.list_compute_quotas(ClusterArn=arn)["ComputeQuotaSummaries"]
    assert [(q["Name"], q["ComputeQuotaVersion"], q["ActivationState"]) for q in listed] == [
        ("team-a-quota", 3, "Disabled")
    ]
    sm.delete_compute_quota(ComputeQuotaId=quota_id)
    assert sm.describe_compute_quota(ComputeQuotaId=quota_id)["Status"] == "Deleting"
    wait_for(
        lambda: kube_object(kube, eks, "ClusterQueue", "hyperpod-ns-team-a-clusterqueue") is None
    )
    code, _ = refused(sm.describe_compute_quota, ComputeQuotaId=quota_id)
    assert code == "ResourceNotFound"
    # the team's namespace stays, with whatever runs in it
    assert kube_object(kube, eks, "Namespace", "hyperpod-ns-team-a") is not None
    assert (
        kube_object(kube, eks, "LocalQueue", "hyperpod-ns-team-a-localqueue", "hyperpod-ns-team-a")
        is None
    )
