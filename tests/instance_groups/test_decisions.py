"""The pure decisions: explicit diff against the actual group, fixed fields, exact requests."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from pydantic import ValidationError

from cluster_svc.domain.instance_groups.decisions import (
    Placement,
    decide_add,
    decide_delete,
    decide_software,
    decide_update,
)
from cluster_svc.domain.instance_groups.described import group_request
from cluster_svc.domain.instance_groups.rules import (
    RULE_EBS_GROWS,
    RULE_FIXED,
    RULE_GROUP_EXISTS,
    RULE_GROUP_LIMIT,
    RULE_LAST_GROUP,
    RULE_MIN_COUNT,
    RULE_NAME_AVAILABLE,
)
from cluster_svc.domain.instance_groups.stages import settled
from shared.contracts.instance_groups import (
    MAX_INSTANCE_GROUPS,
    AddInstanceGroup,
    InstanceGroupChange,
    NewInstanceGroup,
    SoftwareUpdateSpec,
    UpdateClusterSoftware,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending
from tests.instance_groups.fakes import PLAN, ROLE, SCRIPTS, cluster, details

SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")


def assert_valid(operation: str, params: dict[str, Any]) -> None:
    """The request matches botocore's model of the operation (what boto3 would send)."""
    report = ParamValidator().validate(params, SAGEMAKER.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()


def change(**fields: Any) -> dict[str, Any]:
    return InstanceGroupChange(**fields).changed()


def test_the_described_group_becomes_a_complete_request_entry() -> None:
    entry = group_request(details())
    assert entry == {
        "InstanceGroupName": "gpu",
        "InstanceType": "ml.g5.8xlarge",
        "InstanceCount": 2,
        "MinInstanceCount": 1,
        "ExecutionRole": ROLE,
        "LifeCycleConfig": {"SourceS3Uri": SCRIPTS, "OnCreate": "on_create.sh"},
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "OnStartDeepHealthChecks": ["InstanceStress"],
        "NetworkInterface": {"InterfaceType": "efa"},
        "CapacityRequirements": {"Spot": {}},
        "KubernetesConfig": {
            "Labels": {"team": "nlp"},
            "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
        },
    }
    assert_valid("UpdateCluster", {"ClusterName": "hp-one", "InstanceGroups": [entry]})


def test_a_scale_changes_only_the_count_of_only_that_group() -> None:
    other = details("cpu", InstanceType="ml.c5.xlarge", TrainingPlanArn=PLAN)
    decision = decide_update(cluster(details(), other), "gpu", change(count=5))
    assert not decision.problems and not decision.noop
    assert list(decision.diff) == ["count"]
    assert decision.diff["count"].actual == 2 and decision.diff["count"].requested == 5
    [call] = decision.calls
    assert call.operation == "UpdateCluster"
    assert set(call.params) == {"ClusterName", "InstanceGroups"}  # no InstanceGroupsToDelete
    [entry] = call.params["InstanceGroups"]
    expected = group_request(details())
    expected["InstanceCount"] = 5
    assert entry == expected  # labels, taints, spot, EFA, checks, storage: all kept
    assert_valid("UpdateCluster", call.params)


def test_unchanged_values_are_a_noop_without_any_call() -> None:
    same = change(
        count=2,
        min_count=1,
        capacity_type="spot",
        interface_type="efa",
        labels={"team": "nlp"},
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        deep_health_checks=["InstanceStress"],
        ebs_volume_gb=500,
        instance_type="ml.g5.8xlarge",
    )
    decision = decide_update(cluster(), "gpu", same)
    assert decision.noop and decision.calls == [] and decision.diff == {}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("capacity_type", "on-demand"),
        ("capacity_type", "training-plan"),
        ("interface_type", "efa-only"),
        ("instance_type", "ml.p5.48xlarge"),
    ],
)
def test_fixed_fields_are_refused_with_the_rule_and_the_way_out(field: str, value: str) -> None:
    fields: dict[str, Any] = {field: value}
    if value == "training-plan":
        fields["training_plan_arn"] = PLAN
    decision = decide_update(cluster(), "gpu", change(**fields))
    assert decision.calls == []
    problem = decision.problems[0]
    assert problem.field == field and problem.rule == RULE_FIXED
    assert "new group" in problem.hint and "DELETE" in problem.hint


def test_efa_only_groups_stay_efa_only() -> None:
    efa_only = details(NetworkInterface={"InterfaceType": "efa-only"})
    decision = decide_update(cluster(efa_only), "gpu", change(interface_type="efa"))
    assert [p.rule for p in decision.problems] == [RULE_FIXED]


def test_a_volume_cannot_shrink_and_min_count_stays_below_count() -> None:
    shrink = decide_update(cluster(), "gpu", change(ebs_volume_gb=100))
    assert [p.rule for p in shrink.problems] == [RULE_EBS_GROWS]
    below = decide_update(cluster(), "gpu", change(count=0))
    assert [(p.field, p.rule) for p in below.problems] == [("count", RULE_MIN_COUNT)]
    grow = decide_update(cluster(), "gpu", change(ebs_volume_gb=1000))
    entry = grow.calls[0].params["InstanceGroups"][0]
    assert entry["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 1000}}]


def test_labels_change_alone_keeps_the_taints() -> None:
    decision = decide_update(cluster(), "gpu", change(labels={"team": "cv"}))
    entry = decision.calls[0].params["InstanceGroups"][0]
    assert entry["KubernetesConfig"] == {
        "Labels": {"team": "cv"},
        "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
    }
    assert entry["CapacityRequirements"] == {"Spot": {}}


def test_an_unknown_group_is_a_problem_on_the_group() -> None:
    decision = decide_update(cluster(), "nope", change(count=1))
    assert [(p.field, p.rule) for p in decision.problems] == [("group", RULE_GROUP_EXISTS)]


def test_delete_sends_only_the_group_to_delete() -> None:
    decision = decide_delete(cluster(details(), details("cpu")), "cpu")
    assert decision.calls[0].params == {"ClusterName": "hp-one", "InstanceGroupsToDelete": ["cpu"]}
    # the diff says what goes with the group, for the plan's cost
    assert {k: (c.actual, c.requested) for k, c in decision.diff.items()} == {
        "instance_group": ("cpu", None),
        "count": (2, 0),
        "instance_type": ("ml.g5.8xlarge", None),
    }
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp"
    planned = decide_delete(cluster(details(), details("cpu", TrainingPlanArn=arn)), "cpu")
    assert planned.diff["training_plan_arn"].actual == arn
    assert_valid("UpdateCluster", decision.calls[0].params)
    assert decide_delete(cluster(), "gone").noop
    last = decide_delete(cluster(), "gpu")
    assert [p.rule for p in last.problems] == [RULE_LAST_GROUP]


def _software(**spec: Any) -> UpdateClusterSoftware:
    return UpdateClusterSoftware(
        cluster="one",
        hyperpod_cluster="hp-one",
        region="us-east-1",
        spec=SoftwareUpdateSpec(**spec),
    )


def test_software_update_carries_a_rolling_deployment_config() -> None:
    decision = decide_software(
        cluster(),
        _software(
            instance_groups=["gpu"],
            batch_size={"type": "percentage", "value": 25},
            wait_interval_seconds=120,
            rollback_alarms=["gpu-errors"],
        ),
    )
    [call] = decision.calls
    assert call.operation == "UpdateClusterSoftware"
    assert call.params == {
        "ClusterName": "hp-one",
        "InstanceGroups": [{"InstanceGroupName": "gpu"}],
        "DeploymentConfig": {
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25}
            },
            "WaitIntervalInSeconds": 120,
            "AutoRollbackConfiguration": [{"AlarmName": "gpu-errors"}],
        },
    }
    assert_valid("UpdateClusterSoftware", call.params)


def test_software_update_to_the_image_already_running_is_a_noop() -> None:
    on_image = details(CurrentImageId="ami-0123456789abcdef0")
    assert decide_software(cluster(on_image), _software(image_id="ami-0123456789abcdef0")).noop
    missing = decide_software(cluster(), _software(instance_groups=["nope"]))
    assert [p.field for p in missing.problems] == ["instance_groups"]


def _add(group: dict[str, Any], **extra: Any) -> AddInstanceGroup:
    return AddInstanceGroup(
        cluster="one",
        hyperpod_cluster="hp-one",
        region="us-east-1",
        group=NewInstanceGroup(**group),
        **extra,
    )


def test_an_added_group_is_settled_whole_in_one_entry() -> None:
    command = _add(
        {
            "name": "trainers",
            "instance_type": "ml.p5.48xlarge",
            "count": 2,
            "min_count": 1,
            "capacity_type": "training-plan",
            "training_plan_arn": PLAN,
            "interface_type": "efa-only",
            "ebs_volume_gb": 1000,
            "deep_health_checks": ["InstanceStress", "InstanceConnectivity"],
            "labels": {"team": "nlp"},
            "taints": [{"key": "dedicated", "value": "train", "effect": "NoSchedule"}],
            "availability_zone_id": "use1-az4",
        },
        resources={
            "execution_role": {"role_arn": "arn:aws:iam::111122223333:role/made"},
            "bucket": {"lifecycle_script_uri": "s3://made/hyperpod/lifecycle/"},
        },
    )
    placement = Placement(zone_id="use1-az4", subnet_id="subnet-az4")
    decision = decide_add(command, cluster(), placement)
    [call] = decision.calls
    [entry] = call.params["InstanceGroups"]
    assert entry == {
        "InstanceGroupName": "trainers",
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "MinInstanceCount": 1,
        "ExecutionRole": "arn:aws:iam::111122223333:role/made",
        "LifeCycleConfig": {
            "SourceS3Uri": "s3://made/hyperpod/lifecycle/",
            "OnCreate": "on_create.sh",
        },
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 1000}}],
        "NetworkInterface": {"InterfaceType": "efa-only"},
        "OnStartDeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
        "TrainingPlanArn": PLAN,
        "OverrideVpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-az4"]},
        "KubernetesConfig": {
            "Labels": {"team": "nlp"},
            "Taints": [{"Key": "dedicated", "Value": "train", "Effect": "NoSchedule"}],
        },
    }
    assert_valid("UpdateCluster", call.params)


def test_an_imported_cluster_lends_its_role_and_scripts_and_own_subnets() -> None:
    command = _add({"name": "cpu", "instance_type": "ml.c5.xlarge", "count": 1})
    decision = decide_add(command, cluster(), Placement())
    entry = decision.calls[0].params["InstanceGroups"][0]
    assert entry["ExecutionRole"] == ROLE
    assert entry["LifeCycleConfig"] == {"SourceS3Uri": SCRIPTS, "OnCreate": "on_create.sh"}
    assert entry["CapacityRequirements"] == {"OnDemand": {}}
    assert "OverrideVpcConfig" not in entry


def test_a_new_subnet_shows_in_the_plan_before_the_group() -> None:
    command = _add(
        {
            "name": "far",
            "instance_type": "ml.c5.xlarge",
            "count": 1,
            "availability_zone_id": "use1-az6",
        }
    )
    decision = decide_add(command, cluster(), Placement("use1-az6", None, "10.1.32.0/20"))
    assert [c.operation for c in decision.calls] == ["CreateSubnet", "UpdateCluster"]


def test_add_rules_name_taken_and_group_limit() -> None:
    taken = decide_add(
        _add({"name": "gpu", "instance_type": "ml.c5.xlarge", "count": 1}), cluster(), Placement()
    )
    assert [p.rule for p in taken.problems] == [RULE_NAME_AVAILABLE]
    again = decide_add(
        _add(
            {"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2, "capacity_type": "spot"}
        ),
        cluster(),
        Placement(),
    )
    assert again.noop  # a replayed add of the same group
    full = cluster(*(details(f"g{i}") for i in range(MAX_INSTANCE_GROUPS)))
    limit = decide_add(
        _add({"name": "one-more", "instance_type": "ml.c5.xlarge", "count": 1}), full, Placement()
    )
    assert [p.rule for p in limit.problems] == [RULE_GROUP_LIMIT]


def test_settled_waits_for_the_nodes_and_reports_a_rollback() -> None:
    booting = cluster(details(CurrentCount=1, TargetCount=3))
    assert isinstance(settled(booting, "hp-one", "gpu", 3), Pending)
    updating = cluster(details(), status="Updating")
    assert isinstance(settled(updating, "hp-one", "gpu", 2), Pending)
    assert isinstance(settled(cluster(), "hp-one", "gpu", 2), Done)
    with pytest.raises(PermanentError) as rolled:
        settled(cluster(), "hp-one", "gpu", 4)
    assert rolled.value.code == "InstanceGroupRolledBack"


def test_the_change_contract_carries_only_what_was_sent() -> None:
    assert InstanceGroupChange(count=3).changed() == {"count": 3}
    with pytest.raises(ValidationError, match="names no field"):
        InstanceGroupChange()
    with pytest.raises(ValidationError, match="extra"):
        InstanceGroupChange.model_validate({"count": 1, "name": "x"})
    with pytest.raises(ValidationError, match="min_count 3 exceeds count 2"):
        InstanceGroupChange(count=2, min_count=3)
    with pytest.raises(ValidationError, match="training-plan needs training_plan_arn"):
        NewInstanceGroup(
            name="x", instance_type="ml.c5.xlarge", count=1, capacity_type="training-plan"
        )
