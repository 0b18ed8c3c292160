"""HyperPod clusters as the simulation serves them to unmodified boto3."""

from __future__ import annotations

import re
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.aws.account import ReservedCapacity, cluster_instance_types
from sim.profile import get_profile
from sim.testing import AdminClient, aws_client, inject_fault, wait_for
from tests.sim_aws.conftest import Network, create_eks, create_hyperpod, group_spec, nodes

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{17}$")


def test_fast_profile_cluster_is_creating_then_in_service_after_the_configured_delay(
    network: Network, eks_cluster: dict[str, Any]
) -> None:
    """The proof at the real `fast` profile, on its own account."""
    profile = get_profile("fast")
    with SimulatedAws(profile, account_id="444444444444") as sim:
        ec2, iam = aws_client(sim, "ec2"), aws_client(sim, "iam")
        vpc = ec2.create_vpc(CidrBlock="10.4.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(
            VpcId=vpc, CidrBlock="10.4.0.0/20", AvailabilityZoneId="use1-az2"
        )["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        sm = aws_client(sim, "sagemaker")
        started = time.monotonic()
        arn = sm.create_cluster(
            ClusterName="slurm",
            InstanceGroups=[
                {
                    "InstanceGroupName": "c",
                    "InstanceType": "ml.c5.xlarge",
                    "InstanceCount": 1,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://x/y", "OnCreate": "a.sh"},
                }
            ],
            VpcConfig={"Subnets": [subnet], "SecurityGroupIds": [group]},
        )["ClusterArn"]
        assert re.match(r"^arn:aws:sagemaker:us-east-1:444444444444:cluster/[a-z0-9]{12}$", arn)
        assert sm.describe_cluster(ClusterName="slurm")["ClusterStatus"] == "Creating"
        time.sleep(profile.hyperpod_create * 0.5)
        assert sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "Creating"
        wait_for(
            lambda: sm.describe_cluster(ClusterName="slurm")["ClusterStatus"] == "InService",
            timeout=10,
        )
        assert profile.hyperpod_create <= time.monotonic() - started < profile.hyperpod_create + 1.0
        node = nodes(sim, "slurm")[0]
        assert node["InstanceStatus"]["Status"] == "Running"
        placement = sm.describe_cluster_node(ClusterName="slurm", NodeId=node["InstanceId"])[
            "NodeDetails"
        ]["Placement"]
        assert placement == {"AvailabilityZone": "us-east-1c", "AvailabilityZoneId": "use1-az2"}


def test_describe_returns_what_was_set_and_nodes_move(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, count=3, ThreadsPerCore=1)],
        wait=False,
        NodeRecovery="Automatic",
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
        ClusterRole=network.role_arn,
        AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"},
        NodeProvisioningMode="Continuous",
        Tags=[{"Key": "team", "Value": "ml"}],
    )
    described = sm.describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "Creating"
    assert described["Orchestrator"] == {"Eks": {"ClusterArn": eks_cluster["arn"]}}
    assert described["NodeRecovery"] == "Automatic"
    assert described["TieredStorageConfig"] == {
        "Mode": "Enable",
        "InstanceMemoryAllocationPercentage": 20,
    }
    assert (
        described["AutoScaling"]["Mode"] == "Enable"
        and described["AutoScaling"]["AutoScalerType"] == "Karpenter"
    )
    assert described["AutoScaling"]["Status"] == "Creating"
    assert described["ClusterRole"] == network.role_arn
    assert described["NodeProvisioningMode"] == "Continuous"
    first = nodes(sim, name)
    assert len(first) == 3
    assert all(INSTANCE_ID.match(n["InstanceId"]) for n in first)
    assert {n["InstanceStatus"]["Status"] for n in first} == {"Pending"}
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    assert {n["InstanceStatus"]["Status"] for n in nodes(sim, name)} == {"Running"}
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert (
        group["CurrentCount"],
        group["TargetCount"],
        group["Status"],
        group["ThreadsPerCore"],
    ) == (3, 3, "InService", 1)
    assert sm.describe_cluster(ClusterName=name)["AutoScaling"]["Status"] == "InService"
    assert sm.list_tags(ResourceArn=described["ClusterArn"])["Tags"] == [
        {"Key": "team", "Value": "ml"}
    ]
    summaries = sm.list_clusters(NameContains=name)["ClusterSummaries"]
    assert [(c["ClusterName"], c["ClusterStatus"]) for c in summaries] == [(name, "InService")]


def test_every_cluster_instance_type_of_botocore_is_accepted(sim: SimulatedAws) -> None:
    types = cluster_instance_types()
    assert "ml.p5.48xlarge" in types and len(types) > 100
    quota_names = {
        q["QuotaName"]
        for q in aws_client(sim, "service-quotas").list_service_quotas(
            ServiceCode="sagemaker", MaxResults=100
        )["Quotas"]
    }
    assert "ml.p4d.24xlarge for cluster usage" in quota_names


def test_update_scales_adds_and_deletes_groups(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, "a", count=1), group_spec(network, "b", count=1)],
    )
    sm.update_cluster(
        ClusterName=name,
        InstanceGroups=[
            group_spec(network, "a", count=3),
            group_spec(network, "c", "ml.g5.2xlarge", count=1),
        ],
        InstanceGroupsToDelete=["b"],
        NodeRecovery="None",
        TieredStorageConfig={"Mode": "Disable"},
    )
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Updating"
    with pytest.raises(ClientError) as err:
        sm.update_cluster(ClusterName=name, NodeRecovery="Automatic")
    assert err.value.response["Error"]["Code"] == "ConflictException"
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    described = sm.describe_cluster(ClusterName=name)
    groups = {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}
    assert set(groups) == {"a", "c"}
    assert groups["a"]["TargetCount"] == 3 and groups["c"]["InstanceType"] == "ml.g5.2xlarge"
    assert described["NodeRecovery"] == "None"
    assert described["TieredStorageConfig"] == {"Mode": "Disable"}
    wait_for(
        lambda: (
            sorted(
                n["InstanceGroupName"]
                for n in nodes(sim, name)
                if n["InstanceStatus"]["Status"] == "Running"
            )
            == ["a", "a", "a", "c"]
        )
    )
    sm.update_cluster(ClusterName=name, InstanceGroups=[group_spec(network, "a", count=1)])
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    assert sorted(n["InstanceGroupName"] for n in nodes(sim, name)) == ["a", "c"]
    with pytest.raises(ClientError) as err:
        sm.update_cluster(
            ClusterName=name, InstanceGroups=[group_spec(network, "a", "ml.g5.2xlarge", count=1)]
        )
    assert err.value.response["Error"]["Code"] == "ValidationException"


def test_batch_node_operations(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=3)])
    first, second, third = (n["InstanceId"] for n in nodes(sim, name))

    rebooted = sm.batch_reboot_cluster_nodes(
        ClusterName=name, NodeIds=[first, "i-00000000000000000"]
    )
    assert rebooted["Successful"] == [first]
    assert rebooted["Failed"][0]["NodeId"] == "i-00000000000000000"
    assert rebooted["Failed"][0]["ErrorCode"] == "InstanceIdNotFound"
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeId=first)["NodeDetails"]["InstanceStatus"][
            "Status"
        ]
        == "Pending"
    )
    wait_for(
        lambda: (
            sm.describe_cluster_node(ClusterName=name, NodeId=first)["NodeDetails"][
                "InstanceStatus"
            ]["Status"]
            == "Running"
        )
    )

    replaced = sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[second])
    assert replaced["Successful"] == [second]
    logical = sm.describe_cluster_node(ClusterName=name, NodeId=second)["NodeDetails"][
        "NodeLogicalId"
    ]
    new_id = wait_for(
        lambda: next(
            (
                n["InstanceId"]
                for n in nodes(sim, name)
                if n["InstanceId"] not in (first, second, third)
            ),
            None,
        )
    )
    assert INSTANCE_ID.match(new_id)
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeLogicalId=logical)["NodeDetails"][
            "InstanceId"
        ]
        == new_id
    )
    with pytest.raises(ClientError) as err:
        sm.describe_cluster_node(ClusterName=name, NodeId=second)
    assert err.value.response["Error"]["Code"] == "ResourceNotFound"

    deleted = sm.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[third])
    assert deleted["Successful"] == [third]
    assert sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["TargetCount"] == 2
    wait_for(lambda: third not in {n["InstanceId"] for n in nodes(sim, name)})

    added = sm.batch_add_cluster_nodes(
        ClusterName=name,
        NodesToAdd=[
            {"InstanceGroupName": "workers", "IncrementTargetCountBy": 2},
            {"InstanceGroupName": "nope", "IncrementTargetCountBy": 1},
        ],
    )
    assert len(added["Successful"]) == 2 and added["Successful"][0]["Status"] == "Pending"
    assert added["Failed"][0]["ErrorCode"] == "InstanceGroupNotFound"
    wait_for(lambda: [n["InstanceStatus"]["Status"] for n in nodes(sim, name)] == ["Running"] * 4)
    listed = sm.list_cluster_nodes(ClusterName=name, IncludeNodeLogicalIds=True, MaxResults=3)
    assert len(listed["ClusterNodeSummaries"]) == 3 and listed["NextToken"]
    assert all(n["NodeLogicalId"] for n in listed["ClusterNodeSummaries"])
    assert (
        len(
            sm.list_cluster_nodes(ClusterName=name, NextToken=listed["NextToken"])[
                "ClusterNodeSummaries"
            ]
        )
        == 1
    )


def test_software_update_health_check_and_events(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=2)])
    sm.update_cluster_software(ClusterName=name, ImageId="ami-0123456789abcdef0")
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "SystemUpdating"
    listed = {n["InstanceStatus"]["Status"] for n in nodes(sim, name)}
    after = sm.describe_cluster(ClusterName=name)["ClusterStatus"]
    # The update takes 1 s here: nodes listed while it runs say SystemUpdating; a machine slow
    # enough for it to end before the listing sees them Running with the cluster InService.
    assert listed == {"SystemUpdating"} or (listed == {"Running"} and after == "InService"), (
        listed,
        after,
    )
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    assert all(n.get("LastSoftwareUpdateTime") for n in nodes(sim, name))
    assert (
        sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["CurrentImageId"]
        == "ami-0123456789abcdef0"
    )

    target = nodes(sim, name)[0]["InstanceId"]
    sm.start_cluster_health_check(
        ClusterName=name,
        DeepHealthCheckConfigurations=[
            {
                "InstanceGroupName": "workers",
                "InstanceIds": [target],
                "DeepHealthChecks": ["InstanceStress"],
            }
        ],
    )
    statuses = {n["InstanceId"]: n["InstanceStatus"]["Status"] for n in nodes(sim, name)}
    assert statuses[target] == "DeepHealthCheckInProgress"
    assert list(statuses.values()).count("Running") == 1
    wait_for(lambda: {n["InstanceStatus"]["Status"] for n in nodes(sim, name)} == {"Running"})

    events = sm.list_cluster_events(ClusterName=name, SortOrder="Ascending")["Events"]
    descriptions = [e["Description"] for e in events]
    assert descriptions[0] == "Cluster creation started."
    assert any("Deep health check started" in d for d in descriptions)
    detail = sm.describe_cluster_event(ClusterName=name, EventId=events[0]["EventId"])[
        "EventDetails"
    ]
    assert detail["ClusterName"] == name and detail["ResourceType"] == "Cluster"
    instance_events = sm.list_cluster_events(ClusterName=name, ResourceType="Instance")["Events"]
    assert instance_events and all(e["ResourceType"] == "Instance" for e in instance_events)


def test_on_start_deep_health_checks_precede_running(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [
            group_spec(
                network, count=1, OnStartDeepHealthChecks=["InstanceStress", "InstanceConnectivity"]
            )
        ],
        wait=False,
    )
    seen = wait_for(
        lambda: (s := nodes(sim, name)[0]["InstanceStatus"]["Status"]) != "Pending" and s
    )
    assert seen == "DeepHealthCheckInProgress"
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
    wait_for(lambda: nodes(sim, name)[0]["InstanceStatus"]["Status"] == "Running")


def test_insufficient_capacity_at_create_fails_the_cluster(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any], clean_faults: None
) -> None:
    sm = aws_client(sim, "sagemaker")
    sim.faults.inject("insufficient_capacity", instance_type="ml.p5.48xlarge")
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, "gpu", "ml.p5.48xlarge", count=2)],
        wait=False,
    )
    described = wait_for(
        lambda: (d := sm.describe_cluster(ClusterName=name))["ClusterStatus"] == "Failed" and d
    )
    assert described["FailureMessage"].startswith("InsufficientInstanceCapacity")
    assert "ml.p5.48xlarge" in described["FailureMessage"]
    assert nodes(sim, name) == []
    sm.delete_cluster(ClusterName=name)


def test_insufficient_capacity_at_scale_rolls_back(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any], clean_faults: None
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)])
    with inject_fault(sim, "insufficient_capacity", instance_type="ml.g5.8xlarge"):
        sm.update_cluster(ClusterName=name, InstanceGroups=[group_spec(network, count=4)])
        # The nodes that were launched and then rolled back may already be gone on a
        # loaded machine; the outcome below is what is promised.
        described = wait_for(
            lambda: (
                (d := sm.describe_cluster(ClusterName=name))["ClusterStatus"] == "InService" and d
            )
        )
    assert "InsufficientInstanceCapacity" in described["FailureMessage"]
    assert described["InstanceGroups"][0]["TargetCount"] == 1
    assert len(nodes(sim, name)) == 1
    assert any(
        e["EventLevel"] == "Error" for e in sm.list_cluster_events(ClusterName=name)["Events"]
    )


def test_insufficient_capacity_as_an_api_error_reaches_boto3(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any], clean_faults: None
) -> None:
    sim.faults.inject(
        "insufficient_capacity",
        mode="api",
        service="sagemaker",
        operation="CreateCluster",
        instance_type="ml.p5.48xlarge",
        times=1,
    )
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim, network, eks_cluster, [group_spec(network, "gpu", "ml.p5.48xlarge")], wait=False
        )
    assert err.value.response["Error"]["Code"] == "InsufficientInstanceCapacity"
    assert "ml.p5.48xlarge" in err.value.response["Error"]["Message"]
    calls = sim.call_log("sagemaker", "CreateCluster")
    assert calls[-1]["error"] == "InsufficientInstanceCapacity"


def test_failed_node_is_replaced_with_automatic_recovery(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(
        sim, network, eks_cluster, [group_spec(network, count=2)], NodeRecovery="Automatic"
    )
    before = {n["InstanceId"] for n in nodes(sim, name)}
    fault = sim.faults.inject("node_failure", cluster=name)
    failed = fault.node_ids[0]
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeId=failed)["NodeDetails"]["InstanceStatus"][
            "Status"
        ]
        == "Failure"
    )
    after = wait_for(
        lambda: (
            (
                ids := {
                    n["InstanceId"]
                    for n in nodes(sim, name)
                    if n["InstanceStatus"]["Status"] == "Running"
                }
            )
            != before
            and len(ids) == 2
            and ids
        )
    )
    assert failed not in after
    assert len(after & before) == 1
    assert sim.call_log("sagemaker", "BatchReplaceClusterNodes") == [] or all(
        c["params"]["ClusterName"] != name
        for c in sim.call_log("sagemaker", "BatchReplaceClusterNodes")
    )


def test_failed_node_stays_failed_without_recovery_until_replaced(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(
        sim, network, eks_cluster, [group_spec(network, count=1)], NodeRecovery="None"
    )
    failed = sim.faults.inject("node_failure", cluster=name).node_ids[0]
    time.sleep(sim.profile.node_replace * 1.5)
    node = sm.describe_cluster_node(ClusterName=name, NodeId=failed)["NodeDetails"]
    assert node["InstanceStatus"]["Status"] == "Failure"
    sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[failed])
    wait_for(
        lambda: (
            [n["InstanceStatus"]["Status"] for n in nodes(sim, name)] == ["Running"]
            and nodes(sim, name)[0]["InstanceId"] != failed
        )
    )


def test_quota_is_checked_synchronously(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    quotas = aws_client(sim, "service-quotas")
    quota = sim.account.set_quota("sagemaker", "ml.trn1.32xlarge for cluster usage", 1)
    got = quotas.get_service_quota(ServiceCode="sagemaker", QuotaCode=quota.code)["Quota"]
    assert (got["QuotaName"], got["Value"]) == ("ml.trn1.32xlarge for cluster usage", 1.0)
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim,
            network,
            eks_cluster,
            [group_spec(network, "trn", "ml.trn1.32xlarge", count=2)],
            wait=False,
        )
    assert err.value.response["Error"]["Code"] == "ResourceLimitExceeded"
    assert (
        "'ml.trn1.32xlarge for cluster usage' is 1 Instances"
        in err.value.response["Error"]["Message"]
    )
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, "trn", "ml.trn1.32xlarge", count=1)],
        wait=False,
    )
    with pytest.raises(ClientError) as err:
        aws_client(sim, "sagemaker").batch_add_cluster_nodes(
            ClusterName=name, NodesToAdd=[{"InstanceGroupName": "trn", "IncrementTargetCountBy": 1}]
        )
    assert err.value.response["Error"]["Code"] == "ResourceLimitExceeded"


def test_instance_type_must_be_offered_in_the_subnets_zones(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sim.account.set_offering("ml.p4de.24xlarge", ["use1-az4"])
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim,
            network,
            eks_cluster,
            [group_spec(network, "gpu", "ml.p4de.24xlarge", count=1)],
            wait=False,
        )
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "not supported in the Availability Zones" in err.value.response["Error"]["Message"]
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, "gpu", "ml.p4de.24xlarge", count=1)],
        subnets=[network.subnets["use1-az1"], network.subnets["use1-az4"]],
    )
    node = nodes(sim, name)[0]
    details = aws_client(sim, "sagemaker").describe_cluster_node(
        ClusterName=name, NodeId=node["InstanceId"]
    )["NodeDetails"]
    assert details["Placement"]["AvailabilityZoneId"] == "use1-az4"
    assert details["PrivatePrimaryIp"].startswith("10.0.")


def test_training_plan_capacity(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    plan = sim.account.add_training_plan(
        "p5-plan", [ReservedCapacity("ml.p5.48xlarge", 4, "use1-az2")]
    )
    listed = sm.list_training_plans()["TrainingPlanSummaries"]
    assert any(p["TrainingPlanArn"] == plan.arn for p in listed)
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim,
            network,
            eks_cluster,
            [group_spec(network, "gpu", "ml.p5.48xlarge", count=5, TrainingPlanArn=plan.arn)],
            subnets=[network.subnets["use1-az2"]],
            wait=False,
        )
    assert err.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim,
            network,
            eks_cluster,
            [group_spec(network, "gpu", "ml.p4d.24xlarge", count=1, TrainingPlanArn=plan.arn)],
            subnets=[network.subnets["use1-az2"]],
            wait=False,
        )
    assert err.value.response["Error"]["Code"] == "ValidationException"
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, "gpu", "ml.p5.48xlarge", count=3, TrainingPlanArn=plan.arn)],
        subnets=[network.subnets["use1-az1"], network.subnets["use1-az2"]],
        wait=False,
    )
    described = sm.describe_training_plan(TrainingPlanName="p5-plan")
    assert (
        described["TotalInstanceCount"],
        described["InUseInstanceCount"],
        described["AvailableInstanceCount"],
    ) == (4, 3, 1)
    assert described["ReservedCapacitySummaries"][0]["InstanceType"] == "ml.p5.48xlarge"
    assert {n["InstanceGroupName"] for n in nodes(sim, name)} == {"gpu"}
    group = sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert group["TrainingPlanArn"] == plan.arn
    assert sm.list_clusters(TrainingPlanArn=plan.arn)["ClusterSummaries"][0]["ClusterName"] == name
    with pytest.raises(ClientError) as err:
        sm.describe_training_plan(TrainingPlanName="missing")
    assert err.value.response["Error"]["Code"] == "ResourceNotFound"


def test_create_is_safe_without_threads_per_core_and_names_are_unique(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster, wait=False)
    assert (
        len(
            [
                c
                for c in sim.call_log("sagemaker", "CreateCluster")
                if c["params"]["ClusterName"] == name
            ]
        )
        == 1
    )
    with pytest.raises(ClientError) as err:
        sm.create_cluster(
            ClusterName=name,
            InstanceGroups=[group_spec(network)],
            VpcConfig={
                "Subnets": [network.subnets["use1-az1"]],
                "SecurityGroupIds": [network.security_group],
            },
        )
    assert err.value.response["Error"]["Code"] == "ResourceInUse"


def test_eks_orchestrator_must_be_active(sim: SimulatedAws, network: Network) -> None:
    with pytest.raises(ClientError) as err:
        create_hyperpod(
            sim, network, {"arn": "arn:aws:eks:us-east-1:111111111111:cluster/missing"}, wait=False
        )
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "missing" in err.value.response["Error"]["Message"]


def test_delete_goes_through_deleting(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster)
    sm.delete_cluster(ClusterName=name)
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "Deleting"
    assert {n["InstanceStatus"]["Status"] for n in nodes(sim, name)} == {"ShuttingDown"}
    with pytest.raises(ClientError) as err:
        sm.delete_cluster(ClusterName=name)
    assert err.value.response["Error"]["Code"] == "ConflictException"

    def gone() -> bool:
        try:
            sm.describe_cluster(ClusterName=name)
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "ResourceNotFound"
        return False

    wait_for(gone)


def test_mlflow_tracking_server(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker")
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName="mlflow-a",
        ArtifactStoreUri="s3://bucket/mlflow",
        RoleArn=network.role_arn,
    )["TrackingServerArn"]
    assert (
        sm.describe_mlflow_tracking_server(TrackingServerName="mlflow-a")["TrackingServerStatus"]
        == "Creating"
    )
    wait_for(
        lambda: (
            sm.describe_mlflow_tracking_server(TrackingServerName="mlflow-a")[
                "TrackingServerStatus"
            ]
            == "Created"
        )
    )
    assert arn in {
        s["TrackingServerArn"] for s in sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]
    }
    assert sm.describe_mlflow_tracking_server(TrackingServerName="mlflow-a")["IsActive"] == "Active"
    sm.delete_mlflow_tracking_server(TrackingServerName="mlflow-a")
    wait_for(
        lambda: (
            arn
            not in {
                s["TrackingServerArn"]
                for s in sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]
            }
        )
    )


def test_node_faults_over_the_admin_api(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    """Another process (an e2e test) fails a node and starts a deep health check over HTTP."""
    sm = aws_client(sim, "sagemaker")
    admin = AdminClient(sim.endpoint_url)
    name = create_hyperpod(
        sim, network, eks_cluster, [group_spec(network, count=2)], NodeRecovery="None"
    )
    checked = admin.inject_fault("deep_health_check", cluster=name, instance_group="workers")
    [checking] = checked["node_ids"]
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeId=checking)["NodeDetails"][
            "InstanceStatus"
        ]["Status"]
        == "DeepHealthCheckInProgress"
    )
    failed = admin.inject_fault("node_failure", cluster=name)
    [broken] = failed["node_ids"]
    assert broken != checking
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeId=broken)["NodeDetails"]["InstanceStatus"][
            "Status"
        ]
        == "Failure"
    )
    wait_for(
        lambda: (
            sm.describe_cluster_node(ClusterName=name, NodeId=checking)["NodeDetails"][
                "InstanceStatus"
            ]["Status"]
            == "Running"
        )
    )
    assert (
        sm.describe_cluster_node(ClusterName=name, NodeId=broken)["NodeDetails"]["InstanceStatus"][
            "Status"
        ]
        == "Failure"
    )
    rebooted = sm.batch_reboot_cluster_nodes(ClusterName=name, NodeIds=[broken])
    assert rebooted["Successful"] == [broken]
    wait_for(
        lambda: (
            sm.describe_cluster_node(ClusterName=name, NodeId=broken)["NodeDetails"][
                "InstanceStatus"
            ]["Status"]
            == "Running"
        )
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        admin.inject_fault("node_failure", cluster="no-such-cluster")
    assert err.value.code == 400


def test_concurrent_creates_of_one_name_succeed_exactly_once(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    name = f"race-{time.monotonic_ns() % 10**8}"

    def attempt(_: int) -> str:
        sm = aws_client(sim, "sagemaker")
        try:
            sm.create_cluster(
                ClusterName=name,
                InstanceGroups=[group_spec(network, count=1)],
                VpcConfig={
                    "Subnets": [network.subnets["use1-az1"]],
                    "SecurityGroupIds": [network.security_group],
                },
                Orchestrator={"Eks": {"ClusterArn": eks_cluster["arn"]}},
            )
        except ClientError as exc:
            return str(exc.response["Error"]["Code"])
        return "ok"

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = sorted(pool.map(attempt, range(6)))
    assert outcomes == ["ResourceInUse"] * 5 + ["ok"]
    applied = [
        c
        for c in sim.call_log("sagemaker", "CreateCluster")
        if c["params"]["ClusterName"] == name and c["applied"]
    ]
    assert len(applied) == 1


def test_added_nodes_boot_even_if_a_cluster_operation_follows(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)])
    sm.batch_add_cluster_nodes(
        ClusterName=name, NodesToAdd=[{"InstanceGroupName": "workers", "IncrementTargetCountBy": 1}]
    )
    sm.update_cluster(ClusterName=name, NodeRecovery="Automatic")
    wait_for(lambda: sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService")
    wait_for(
        lambda: [n["InstanceStatus"]["Status"] for n in nodes(sim, name)] == ["Running", "Running"]
    )
    assert sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["TargetCount"] == 2


def test_continuous_provisioning_stays_in_service_and_retries_capacity(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any], clean_faults: None
) -> None:
    sm = aws_client(sim, "sagemaker")
    fault = sim.faults.inject("insufficient_capacity", instance_type="ml.g5.2xlarge")
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [
            group_spec(network, "big", count=1),
            group_spec(network, "short", "ml.g5.2xlarge", count=2),
        ],
        NodeProvisioningMode="Continuous",
    )
    groups = {
        g["InstanceGroupName"]: g for g in sm.describe_cluster(ClusterName=name)["InstanceGroups"]
    }
    assert (groups["short"]["CurrentCount"], groups["short"]["TargetCount"]) == (0, 2)
    assert groups["big"]["CurrentCount"] == 1
    warnings = [
        e for e in sm.list_cluster_events(ClusterName=name)["Events"] if e["EventLevel"] == "Warn"
    ]
    assert warnings and "InsufficientInstanceCapacity" in warnings[0]["Description"]
    sim.faults.clear(fault.id)
    wait_for(
        lambda: (
            sorted(
                n["InstanceGroupName"]
                for n in nodes(sim, name)
                if n["InstanceStatus"]["Status"] == "Running"
            )
            == ["big", "short", "short"]
        )
    )

    sm.update_cluster(ClusterName=name, InstanceGroups=[group_spec(network, "big", count=3)])
    assert sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
    assert {g["Status"] for g in sm.describe_cluster(ClusterName=name)["InstanceGroups"]} == {
        "InService"
    }
    wait_for(
        lambda: (
            [
                n["InstanceGroupName"]
                for n in nodes(sim, name)
                if n["InstanceStatus"]["Status"] == "Running"
            ].count("big")
            == 3
        )
    )


def test_hyperpod_needs_api_access_and_grants_its_node_role(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks")
    config_map_only = create_eks(sim, network, f"cm-{time.monotonic_ns() % 10**8}")
    with pytest.raises(ClientError) as err:
        create_hyperpod(sim, network, config_map_only, wait=False)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "authentication mode" in err.value.response["Error"]["Message"]
    eks.delete_cluster(name=config_map_only["name"])

    iam = aws_client(sim, "iam")
    node_role = iam.create_role(
        RoleName=f"nodes-{time.monotonic_ns() % 10**8}", AssumeRolePolicyDocument="{}"
    )["Role"]["Arn"]
    name = create_hyperpod(
        sim,
        network,
        eks_cluster,
        [group_spec(network, count=1, ExecutionRole=node_role)],
        wait=False,
    )
    entry = eks.describe_access_entry(clusterName=eks_cluster["name"], principalArn=node_role)[
        "accessEntry"
    ]
    assert entry["type"] == "HYPERPOD_LINUX"
    assert entry["username"] == "system:node:hyperpod-{{SessionName}}"
    aws_client(sim, "sagemaker").delete_cluster(ClusterName=name)
    wait_for(
        lambda: (
            node_role
            not in eks.list_access_entries(clusterName=eks_cluster["name"])["accessEntries"]
        )
    )
