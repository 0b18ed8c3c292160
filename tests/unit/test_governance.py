"""Task governance, pure: the names (boundary), the contracts' rules, the steps that enable it
and make teams (compute quotas) with exactly botocore's parameters, and the pending explainer's
answer from Kueue's Workload conditions and ClusterQueues."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from cluster_svc.domain.features.steps import Call, Wait
from cluster_svc.domain.governance.actual import GovernanceActual, QuotaActual, SchedulerActual
from cluster_svc.domain.governance.pending import JobRef, PendingFacts, explain
from cluster_svc.domain.governance.steps import (
    GovernanceRefusal,
    create_team_steps,
    delete_team_steps,
    governance_plan,
    governance_steps,
    team_plan,
    teams_read,
    update_team_steps,
)
from shared.boundary import (
    priority_class_object,
    team_name,
    team_namespace,
    team_queue,
)
from shared.contracts.governance import (
    TASK_GOVERNANCE_ADDON,
    NewTeam,
    TaskGovernanceChange,
    TeamChange,
)
from shared.errors import PermanentError
from shared.validation import RuleViolation

ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef123456"
P5 = "ml.p5.48xlarge"


def actual(**over: Any) -> GovernanceActual:
    base: dict[str, Any] = {
        "cluster": "llm",
        "eks_cluster": "llm-eks",
        "hyperpod_cluster": "llm",
        "hyperpod_arn": ARN,
        "hyperpod_status": "InService",
        "instance_types": frozenset({P5, "ml.t3.medium"}),
        "addon": "ACTIVE",
        "scheduler": SchedulerActual(
            id="sched0000001",
            name="llm",
            version=1,
            status="Created",
            config={
                "PriorityClasses": [
                    {"Name": "inference", "Weight": 100},
                    {"Name": "high", "Weight": 90},
                    {"Name": "training", "Weight": 50},
                    {"Name": "low", "Weight": 10},
                ],
                "FairShare": "Enabled",
                "IdleResourceSharing": "Enabled",
            },
        ),
    }
    base.update(over)
    return GovernanceActual(**base)


def quota(team: str, gpus_instances: int = 1, **over: Any) -> QuotaActual:
    base: dict[str, Any] = {
        "id": f"{team.replace('-', '')}000000"[:12],
        "name": team,
        "team": team,
        "version": 1,
        "status": "Created",
        "config": {
            "ComputeQuotaResources": [{"InstanceType": P5, "Count": gpus_instances}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 100},
            "PreemptTeamTasks": "LowerPriority",
        },
        "activation": "Enabled",
    }
    base.update(over)
    return QuotaActual(**base)


# ---- names -------------------------------------------------------------------------------------


def test_team_names_become_the_namespace_queue_and_priority_class_task_governance_makes() -> None:
    assert team_namespace("team-a") == "hyperpod-ns-team-a"
    assert team_queue("team-a") == "hyperpod-ns-team-a-localqueue"
    assert priority_class_object("high") == "high-priority"
    assert len(team_queue("a" * 40)) == 63  # the longest team still makes a DNS label


@pytest.mark.parametrize("bad", ["Team", "-a", "a-", "a_b", "a" * 41, "", "a.b"])
def test_a_team_name_outside_sagemakers_pattern_is_refused_naming_the_field(bad: str) -> None:
    with pytest.raises(RuleViolation) as refused:
        team_name(bad, "name")
    assert str(refused.value).startswith("name ")


# ---- contracts ---------------------------------------------------------------------------------


def test_a_quota_of_whole_instances_and_parts_of_them_is_refused() -> None:
    with pytest.raises(ValidationError, match="instances and parts"):
        NewTeam.model_validate(
            {"name": "a", "resources": [{"instance_type": P5, "count": 1, "accelerators": 8}]}
        )
    with pytest.raises(ValidationError, match="names no amount"):
        NewTeam.model_validate({"name": "a", "resources": [{"instance_type": P5}]})
    with pytest.raises(ValidationError, match="twice"):
        NewTeam.model_validate(
            {
                "name": "a",
                "resources": [
                    {"instance_type": P5, "count": 1},
                    {"instance_type": P5, "accelerators": 8},
                ],
            }
        )


def test_borrow_limit_only_with_lend_and_borrow_and_a_change_names_something() -> None:
    with pytest.raises(ValidationError, match="borrow_limit applies"):
        TeamChange.model_validate({"sharing": "Lend", "borrow_limit": 50})
    with pytest.raises(ValidationError, match="names nothing"):
        TeamChange.model_validate({})
    with pytest.raises(ValidationError, match="takes no settings"):
        TaskGovernanceChange.model_validate({"enabled": False, "fair_share": True})
    with pytest.raises(ValidationError, match="twice"):
        TaskGovernanceChange.model_validate(
            {"priority_classes": [{"name": "a", "weight": 1}, {"name": "a", "weight": 2}]}
        )


# ---- enabling task governance ------------------------------------------------------------------


def test_enabling_installs_the_addon_first_then_creates_the_scheduler_config() -> None:
    bare = actual(addon=None, scheduler=None)
    steps = governance_steps(bare, TaskGovernanceChange(enabled=True))
    assert steps[0] == Call(
        "eks",
        "CreateAddon",
        {
            "clusterName": "llm-eks",
            "addonName": TASK_GOVERNANCE_ADDON,
            "addonVersion": "v1.2.0-eksbuild.1",
            "tags": {"managed-by": "hyperpilot"},
        },
    )
    assert isinstance(steps[1], Wait) and "ACTIVE" in steps[1].reason
    create = steps[2]
    assert isinstance(create, Call) and create.operation == "CreateClusterSchedulerConfig"
    assert create.params["ClusterArn"] == ARN
    assert create.params["SchedulerConfig"] == {
        "PriorityClasses": [
            {"Name": "inference", "Weight": 100},
            {"Name": "high", "Weight": 90},
            {"Name": "training", "Weight": 50},
            {"Name": "low", "Weight": 10},
        ],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled",
    }
    plan = governance_plan(bare, TaskGovernanceChange(enabled=True))
    assert not plan.noop and plan.diff["enabled"].requested is True
    assert [c.operation for c in plan.calls] == ["CreateAddon", "CreateClusterSchedulerConfig"]


def test_requested_equal_to_actual_is_a_noop_and_a_change_updates_at_the_current_version() -> None:
    now = actual()
    assert governance_steps(now, TaskGovernanceChange(enabled=True)) == []
    assert governance_plan(now, TaskGovernanceChange(fair_share=True)).noop
    steps = governance_steps(now, TaskGovernanceChange(idle_resource_sharing=False))
    update = steps[0]
    assert isinstance(update, Call) and update.operation == "UpdateClusterSchedulerConfig"
    assert update.params["TargetVersion"] == 1
    assert update.params["SchedulerConfig"]["IdleResourceSharing"] == "Disabled"
    assert update.params["SchedulerConfig"]["PriorityClasses"][0] == {
        "Name": "inference",
        "Weight": 100,
    }


def test_disabling_with_teams_left_is_refused_and_without_removes_config_then_addon() -> None:
    with pytest.raises(PermanentError) as refused:
        governance_steps(
            actual(quotas={"team-a": quota("team-a")}), TaskGovernanceChange(enabled=False)
        )
    assert refused.value.code == "TeamsExist" and "team-a" in refused.value.message
    steps = governance_steps(actual(), TaskGovernanceChange(enabled=False))
    assert [s.operation for s in steps if isinstance(s, Call)] == [
        "DeleteClusterSchedulerConfig",
        "DeleteAddon",
    ]
    assert isinstance(steps[1], Wait)  # the add-on goes only once the config is gone


def test_settings_on_a_cluster_without_task_governance_name_the_field_and_the_way() -> None:
    with pytest.raises(GovernanceRefusal) as refused:
        governance_steps(actual(addon=None, scheduler=None), TaskGovernanceChange(fair_share=True))
    assert refused.value.to_field()["field"] == "enabled"
    assert "enabled: true" in (refused.value.hint or "")


# ---- teams -------------------------------------------------------------------------------------


def _team(**over: Any) -> NewTeam:
    body: dict[str, Any] = {"name": "team-a", "resources": [{"instance_type": P5, "count": 1}]}
    body.update(over)
    return NewTeam.model_validate(body)


def test_a_team_is_one_create_compute_quota_with_botocores_shapes() -> None:
    steps = create_team_steps(actual(), _team(borrow_limit=50, fair_share_weight=10))
    create, wait = steps
    assert isinstance(wait, Wait)
    assert create == Call(
        "sagemaker",
        "CreateComputeQuota",
        {
            "Name": "team-a",
            "ClusterArn": ARN,
            "ComputeQuotaConfig": {
                "ComputeQuotaResources": [{"InstanceType": P5, "Count": 1}],
                "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
                "PreemptTeamTasks": "LowerPriority",
            },
            "ComputeQuotaTarget": {"TeamName": "team-a", "FairShareWeight": 10},
            "ActivationState": "Enabled",
            "Tags": [{"Key": "managed-by", "Value": "hyperpilot"}],
        },
    )
    plan = team_plan("CreateTeam", actual(), "team-a", steps, _team())
    assert any("hyperpod-ns-team-a-localqueue" in n for n in plan.notes)


def test_a_team_needs_task_governance_and_instance_types_the_cluster_runs() -> None:
    with pytest.raises(GovernanceRefusal) as off:
        create_team_steps(actual(scheduler=None), _team())
    assert off.value.to_field()["rule"] == "task_governance_enabled"
    with pytest.raises(GovernanceRefusal) as foreign:
        create_team_steps(
            actual(), _team(resources=[{"instance_type": "ml.g5.8xlarge", "accelerators": 1}])
        )
    field = foreign.value.to_field()
    assert field["field"] == "resources[0].instance_type"
    assert field["rule"] == "instance_type_in_cluster"
    assert "ml.g5.8xlarge" in field["message"] and P5 in field["message"]


def test_a_retried_create_is_done_and_a_different_one_is_a_conflict() -> None:
    made = actual(
        quotas={
            "team-a": quota(
                "team-a",
                config={
                    "ComputeQuotaResources": [{"InstanceType": P5, "Count": 1}],
                    "ResourceSharingConfig": {"Strategy": "LendAndBorrow"},
                    "PreemptTeamTasks": "LowerPriority",
                },
            )
        }
    )
    assert create_team_steps(made, _team()) == []
    with pytest.raises(PermanentError) as taken:
        create_team_steps(made, _team(resources=[{"instance_type": P5, "count": 2}]))
    assert taken.value.code == "TeamExists"


def test_an_update_merges_the_change_over_the_quota_at_its_version() -> None:
    now = actual(quotas={"team-b": quota("team-b", version=3)})
    steps = update_team_steps(now, "team-b", TeamChange(sharing="Lend"))
    update = steps[0]
    assert isinstance(update, Call) and update.operation == "UpdateComputeQuota"
    assert update.params["TargetVersion"] == 3
    assert update.params["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "Lend"}
    assert update.params["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": P5, "Count": 1}
    ]
    assert update_team_steps(now, "team-b", TeamChange(preempt="LowerPriority")) == []
    with pytest.raises(PermanentError) as missing:
        update_team_steps(now, "team-z", TeamChange(active=False))
    assert missing.value.code == "TeamNotFound"


def test_delete_is_idempotent_and_the_list_names_namespace_and_queue() -> None:
    now = actual(quotas={"team-a": quota("team-a")})
    assert [type(s) for s in delete_team_steps(now, "team-a")] == [Call, Wait]
    assert delete_team_steps(now, "gone") == []
    listed = teams_read(now)
    assert listed["task_governance"]["enabled"] is True
    (team,) = listed["teams"]
    assert team["namespace"] == "hyperpod-ns-team-a"
    assert team["queue"] == "hyperpod-ns-team-a-localqueue"
    assert team["resources"] == [{"instance_type": P5, "count": 1}]
    assert team["sharing"] == "LendAndBorrow" and team["borrow_limit"] == 100


# ---- why is my job pending? --------------------------------------------------------------------


def _queue(
    team: str, nominal: int, used: int, borrowing: int | None, borrowed: int = 0
) -> dict[str, Any]:
    resource: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": str(nominal)}
    if borrowing is not None:
        resource["borrowingLimit"] = str(borrowing)
    return {
        "metadata": {"name": f"hyperpod-ns-{team}-clusterqueue"},
        "spec": {
            "cohort": "hyperpod-cohort",
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": P5, "resources": [resource]}],
                }
            ],
        },
        "status": {
            "flavorsUsage": [
                {
                    "name": P5,
                    "resources": [
                        {"name": "nvidia.com/gpu", "total": str(used), "borrowed": str(borrowed)}
                    ],
                }
            ]
        },
    }


def _workload(
    name: str, ns: str, owner: str, gpus: int, priority: str, admitted: bool, message: str = ""
) -> dict[str, Any]:
    conditions = (
        [{"type": "Admitted", "status": "True", "reason": "Admitted"}]
        if admitted
        else [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}]
    )
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        status["admission"] = {"clusterQueue": f"{ns}-clusterqueue"}
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "ownerReferences": [
                {"kind": "HyperPodPyTorchJob", "name": owner, "uid": f"uid-{owner}"}
            ],
        },
        "spec": {
            "queueName": f"{ns}-localqueue",
            "priorityClassName": priority,
            "podSets": [
                {
                    "name": "pods",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}
                            ]
                        }
                    },
                }
            ],
        },
        "status": status,
    }


def test_a_job_beyond_its_quota_names_the_quota_the_lender_and_the_fixes() -> None:
    ns = "hyperpod-ns-team-a"
    job = {"metadata": {"name": "big", "namespace": ns, "uid": "uid-big", "labels": {}}}
    message = (
        "couldn't assign flavors to pod set pods: insufficient unused quota for nvidia.com/gpu in"
        f" flavor {P5}, 8 more needed"
    )
    facts = PendingFacts(
        job=job,
        workloads=[
            _workload("hyperpodpytorchjob-big-1a2b3", ns, "big", 8, "low-priority", False, message),
            _workload("hyperpodpytorchjob-small-4c5d6", ns, "small", 8, "training-priority", True),
        ],
        cluster_queues=[_queue("team-a", 8, 8, 0), _queue("team-b", 8, 0, 0)],
        priority_classes={
            "inference-priority": 100,
            "high-priority": 90,
            "training-priority": 50,
            "low-priority": 10,
        },
        quotas={},
        capacity=None,
    )
    answer = explain(
        JobRef("llm", "big", ns, "HyperPodPyTorchJob", "sagemaker.amazonaws.com/v1"), facts
    )
    assert answer.pending and answer.reason == "quota"
    assert answer.summary.startswith(
        f"team team-a is at its quota of 8 {P5} GPUs (8 in use; this job asks 8)"
    )
    assert "team team-b lends 8 idle" in answer.summary
    assert (
        "set priority high: it preempts team team-a's lower-priority hyperpodpytorchjob-small-4c5d6"
        in answer.fixes
    )
    assert any("LendAndBorrow" in f for f in answer.fixes)  # team-a may not borrow (limit 0)
    assert answer.facts["quota"]["nominal"] == 8 and answer.facts["lenders"] == [
        {"team": "team-b", "idle": 8.0}
    ]


def test_an_admitted_job_is_not_waiting_and_a_missing_priority_class_is_named() -> None:
    ns = "hyperpod-ns-team-a"
    ref = JobRef("llm", "small", ns, "HyperPodPyTorchJob", "sagemaker.amazonaws.com/v1")
    job = {"metadata": {"name": "small", "namespace": ns, "uid": "uid-small", "labels": {}}}
    running = PendingFacts(
        job=job,
        workloads=[_workload("w", ns, "small", 8, "low-priority", True)],
        cluster_queues=[],
        priority_classes={},
        quotas={},
        capacity=None,
    )
    assert explain(ref, running).pending is False
    labelled = {
        "metadata": {
            "name": "small",
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "hyperpod-ns-team-a-localqueue"},
        }
    }
    event = {
        "type": "Warning",
        "reason": "ErrWorkloadCompose",
        "message": 'workloadpriorityclasses.kueue.x-k8s.io "urgent-priority" not found',
        "involvedObject": {"kind": "HyperPodPyTorchJob", "name": "small"},
    }
    composed = PendingFacts(
        job=labelled,
        workloads=[],
        cluster_queues=[],
        priority_classes={"high-priority": 90},
        quotas={},
        capacity=None,
        events=[event],
    )
    answer = explain(ref, composed)
    assert answer.reason == "priority_class_missing" and "urgent-priority" in answer.summary
    assert answer.fixes == ["resubmit with one of the cluster's priority classes (high)"]


def test_a_teams_namespace_gets_the_shared_buckets_claim_and_loses_it_with_the_team() -> None:
    from cluster_svc.domain.features.steps import Apply, Remove
    from cluster_svc.domain.governance.actual import TeamStorage

    settled = quota(
        "team-a",
        config={
            "ComputeQuotaResources": [{"InstanceType": P5, "Count": 1}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow"},
            "PreemptTeamTasks": "LowerPriority",
        },
    )
    waiting = actual(
        quotas={"team-a": settled},
        bucket="llm-data",
        region="us-east-1",
        storage={"team-a": TeamStorage(namespace=False)},
    )
    (wait,) = create_team_steps(waiting, _team())
    assert isinstance(wait, Wait) and "hyperpod-ns-team-a" in wait.reason
    ready = actual(
        quotas={"team-a": settled},
        bucket="llm-data",
        region="us-east-1",
        storage={"team-a": TeamStorage(namespace=True)},
    )
    volume, claim = create_team_steps(ready, _team())
    assert isinstance(volume, Apply) and isinstance(claim, Apply)
    assert volume.obj["spec"]["claimRef"] == {"namespace": "hyperpod-ns-team-a", "name": "s3-claim"}
    assert volume.obj["spec"]["csi"]["volumeAttributes"] == {"bucketName": "llm-data"}
    assert claim.obj["metadata"] == {
        **claim.obj["metadata"],
        "name": "s3-claim",
        "namespace": "hyperpod-ns-team-a",
    }
    made = actual(
        quotas={"team-a": settled},
        bucket="llm-data",
        region="us-east-1",
        storage={"team-a": TeamStorage(namespace=True, volume=volume.obj, claim=claim.obj)},
    )
    assert create_team_steps(made, _team()) == []
    steps = delete_team_steps(made, "team-a")
    assert [type(s) for s in steps] == [Remove, Remove, Call, Wait]
    assert steps[0].ref[1] == "PersistentVolumeClaim"  # type: ignore[union-attr]


def test_a_preempted_job_says_so_and_an_inactive_team_is_named() -> None:
    ns = "hyperpod-ns-team-a"
    ref = JobRef("llm", "old", ns, "HyperPodPyTorchJob", "sagemaker.amazonaws.com/v1")
    job = {"metadata": {"name": "old", "namespace": ns, "uid": "uid-old", "labels": {}}}
    message = (
        "couldn't assign flavors to pod set pods: insufficient unused quota for nvidia.com/gpu in"
        f" flavor {P5}, 8 more needed"
    )
    workload = _workload("w-old", ns, "old", 8, "low-priority", False, message)
    workload["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to"
            " prioritization in the ClusterQueue",
        }
    )
    facts = PendingFacts(
        job=job,
        workloads=[workload],
        cluster_queues=[_queue("team-a", 8, 8, None)],
        priority_classes={"low-priority": 10},
        quotas={},
        capacity=None,
    )
    answer = explain(ref, facts)
    assert answer.summary.startswith("old was preempted (Preempted to accommodate")
    assert "team team-a is at its quota of 8" in answer.summary
    inactive = _workload("w-old", ns, "old", 8, "low-priority", False, "")
    inactive["status"]["conditions"] = [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Inadmissible",
            "message": "ClusterQueue hyperpod-ns-team-a-clusterqueue is inactive",
        }
    ]
    held = explain(
        ref,
        PendingFacts(
            job=job,
            workloads=[inactive],
            cluster_queues=[],
            priority_classes={},
            quotas={},
            capacity=None,
        ),
    )
    assert held.reason == "inadmissible" and "is inactive" in held.summary
    assert held.fixes == [
        'activate team team-a (PATCH /api/v1/clusters/llm/teams/team-a {"active": true})'
    ]


def test_an_admitted_job_whose_pods_find_no_node_names_the_nodes_and_the_group() -> None:
    from datetime import date

    from cluster_svc.domain.capacity import cluster_capacity
    from cluster_svc.domain.prices import PriceTable
    from shared.contracts.capacity import PriceSource

    prices = PriceTable(PriceSource(source="test", as_of=date(2026, 11, 20), region="us-east-1"))
    ns = "hyperpod-ns-team-a"
    node = {
        "metadata": {
            "name": "hyperpod-i-1",
            "labels": {
                "sagemaker.amazonaws.com/instance-group-name": "gpu",
                "node.kubernetes.io/instance-type": P5,
                "sagemaker.amazonaws.com/node-health-status": "Schedulable",
            },
        },
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8", "memory": "2000Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    busy = {
        "metadata": {"name": "other-0", "namespace": "default"},
        "spec": {
            "nodeName": "hyperpod-i-1",
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "6"}}}],
        },
        "status": {"phase": "Running"},
    }
    waiting = {
        "metadata": {"name": "big-pods-0", "namespace": ns},
        "spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": P5},
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}],
        },
        "status": {"phase": "Pending"},
    }
    capacity = cluster_capacity("llm", [node], [busy, waiting], prices)
    job = {"metadata": {"name": "big", "namespace": ns, "uid": "uid-big", "labels": {}}}
    answer = explain(
        JobRef("llm", "big", ns, "HyperPodPyTorchJob", "sagemaker.amazonaws.com/v1"),
        PendingFacts(
            job=job,
            workloads=[_workload("w", ns, "big", 4, "low-priority", True)],
            cluster_queues=[],
            priority_classes={},
            quotas={},
            capacity=capacity,
        ),
    )
    assert answer.reason == "capacity" and answer.pending
    assert f"no node of type {P5} has 4 free GPUs (the most free on a schedulable node: 2)" in (
        answer.summary
    )
    assert answer.summary.startswith("admitted by ClusterQueue hyperpod-ns-team-a-clusterqueue")
    assert any(f.startswith("scale group gpu (1 node(s) now)") for f in answer.fixes)
