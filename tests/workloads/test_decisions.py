"""Pure decisions: rules on actual state and plans, observed status, log pages."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from shared.contracts.workloads import JobSpec
from shared.errors import PermanentError
from workload_svc.domain.elastic_rules import HyperPodFacts, hyperpod_facts
from workload_svc.domain.logs import page
from workload_svc.domain.plan import ClusterFacts, GroupFacts, plan_submit
from workload_svc.domain.render import render
from workload_svc.domain.status import newest_pod, observe, progress

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)


def spec(**fields: Any) -> Any:
    return SPEC.validate_python(
        {"recipe": "pytorch", "name": "j", "instance_group": "gpu", "script": "t.py", **fields}
    )


def facts(**changes: Any) -> ClusterFacts:
    base: dict[str, Any] = {
        "groups": {"gpu": GroupFacts("gpu", "ml.g5.12xlarge", 2, 4, 1)},
        "storage": True,
        "kinds": frozenset({"HyperPodPyTorchJob", "RayJob"}),
    }
    return ClusterFacts(**{**base, **changes})


def test_plan_creates_the_rendered_object() -> None:
    plan = plan_submit("c", spec(replicas=2, resources={"gpus": 4}), facts())
    assert not plan.noop
    assert plan.objects[0].kind == "HyperPodPyTorchJob" and plan.objects[0].action == "apply"
    assert plan.diff["job"].requested == "j"


def test_requested_equals_actual_is_a_noop() -> None:
    wanted = spec()
    existing = render(wanted).body
    existing["spec"]["runPolicy"]["extraDefault"] = 1  # defaults the server added
    plan = plan_submit("c", wanted, facts(existing=existing))
    assert plan.noop and not plan.objects


def test_same_name_other_spec_is_a_conflict() -> None:
    existing = render(spec(replicas=2)).body
    with pytest.raises(PermanentError) as info:
        plan_submit("c", spec(), facts(existing=existing))
    assert info.value.code == "JobExists"


@pytest.mark.parametrize(
    ("job", "state", "field"),
    [
        (spec(instance_group="cpu"), facts(), "instance_group"),
        (spec(resources={"gpus": 8}), facts(), "resources.gpus"),
        (spec(resources={"gpus": 1, "efa": 2}), facts(), "resources.efa"),
        (spec(replicas=3), facts(), "replicas"),
        (spec(nproc_per_node=4, resources={"gpus": 2}), facts(), "nproc_per_node"),
        (spec(), facts(storage=False), "storage"),
    ],
)
def test_rules_on_actual_state(job: Any, state: ClusterFacts, field: str) -> None:
    with pytest.raises(PermanentError) as info:
        plan_submit("c", job, state)
    assert info.value.code == "InvalidJob"
    assert info.value.message.startswith(f"{field}: ") and info.value.hint


def test_missing_operator_is_refused_with_the_way_out() -> None:
    with pytest.raises(PermanentError) as info:
        plan_submit("c", spec(), facts(kinds=frozenset()))
    assert info.value.code == "OperatorMissing" and "features" in (info.value.hint or "")


def test_group_without_nodes_skips_gpu_checks_with_a_note() -> None:
    empty = facts(groups={"gpu": GroupFacts("gpu", "ml.p5.48xlarge", 0, None, None)})
    plan = plan_submit("c", spec(resources={"gpus": 8}), empty)
    assert any("not checked" in n for n in plan.notes)


def hpj(status: dict[str, Any], budget: int = 2) -> dict[str, Any]:
    return {"spec": {"runPolicy": {"jobMaxRetryCount": budget}}, "status": status}


def cond(kind: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": reason, "message": message}


def test_observed_restarts_against_the_budget_and_faulty_pods() -> None:
    seen = observe(
        "HyperPodPyTorchJob",
        hpj(
            {
                "restartCount": 1,
                "conditions": [cond("Restarting", "PodLevelRestart", "restart 1/2")],
                "latestFaultyPodInstanceList": {"faultyPodList": ["j-pods-0"]},
            }
        ),
        [],
    )
    assert seen is not None
    assert (seen.status, seen.restarts, seen.budget, seen.faulty_pods) == (
        "restarting",
        1,
        2,
        ["j-pods-0"],
    )
    failed = observe(
        "HyperPodPyTorchJob",
        hpj({"restartCount": 2, "conditions": [cond("Failed", "JobMaxRetryCountExceeded", "x")]}),
        [],
    )
    assert failed is not None and failed.status == "failed"
    assert failed.reason == "JobMaxRetryCountExceeded"
    assert observe("HyperPodPyTorchJob", None, []) is None


def pod(name: str, phase: str, created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": phase}}


def test_observed_replicas_of_an_elastic_job_against_its_bounds() -> None:
    job = hpj(
        {
            "conditions": [cond("Running")],
            "elasticScalingStatus": {
                "targetReplicas": {"pods": 3},
                "lastScalingTime": "2026-01-01T00:01:00Z",
            },
        }
    )
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    job["spec"]["replicaSpecs"] = [{"name": "pods", "replicas": 1, "maxReplicas": 4}]
    pods = [pod("j-pods-0", "Running"), pod("j-pods-1", "Running"), pod("j-pods-2", "Pending")]
    seen = observe("HyperPodPyTorchJob", job, pods)
    assert seen is not None and seen.status == "running"
    assert seen.replicas == {
        "current": 2,
        "target": 3,
        "elastic": True,
        "min": 1,
        "max": 4,
        "last_scaling_time": "2026-01-01T00:01:00Z",
    }
    fixed = hpj({"conditions": [cond("Running")]})
    fixed["spec"]["replicaSpecs"] = [{"name": "pods", "replicas": 2}]
    plain = observe("HyperPodPyTorchJob", fixed, pods[:2])
    assert plain is not None and plain.replicas is not None
    assert (plain.replicas["current"], plain.replicas["target"]) == (2, 2)
    assert plain.replicas["elastic"] is False and plain.replicas["min"] is None


def test_an_elastic_plan_says_how_the_job_scales() -> None:
    plan = plan_submit("c", spec(elastic={"min_replicas": 1, "max_replicas": 4}), facts())
    assert any(n.startswith("elastic: 1 to 4 pod(s)") for n in plan.notes)
    body = plan.objects[0].body["spec"]
    assert body["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 4}
    assert body["replicaSpecs"][0]["maxReplicas"] == 4


def test_an_elastic_plan_with_exact_sizes_and_a_scaling_timeout() -> None:
    elastic = {
        "min_replicas": 1,
        "max_replicas": 8,
        "replica_discrete_values": [1, 2, 4, 8],
        "scaling_timeout_seconds": 120,
    }
    plan = plan_submit("c", spec(elastic=elastic), facts())
    [note] = [n for n in plan.notes if n.startswith("elastic: ")]
    assert note.startswith("elastic: 1 to 8 pod(s) at sizes 1, 2, 4, 8;")
    assert "once they have been free for 120 s" in note
    assert plan.objects[0].body["spec"]["elasticPolicy"] == {
        "minReplicas": 1,
        "maxReplicas": 8,
        "replicaDiscreteValues": [1, 2, 4, 8],
        "scalingTimeoutInSeconds": 120,
    }


def test_a_download_progress_is_read_from_the_pod_the_job_runs_now() -> None:
    killed = pod("get-zzzzz", "Failed", "2026-01-01T00:00:05Z")
    replacement = pod("get-aaaaa", "Running", "2026-01-01T00:00:05Z")  # same second
    assert newest_pod([killed, replacement]) is replacement
    later = pod("get-bbbbb", "Failed", "2026-01-01T00:00:09Z")
    assert newest_pod([killed, later]) is later
    assert newest_pod([]) is None
    lines = ["skipping config.json: already complete", "download progress: 40% (6/14 files)"]
    assert progress(lines) == "download progress: 40% (6/14 files)"


def test_observed_ray_job_gives_the_dashboard() -> None:
    seen = observe(
        "RayJob",
        {"spec": {"backoffLimit": 1}, "status": {"jobStatus": "RUNNING", "dashboardURL": "h:8265"}},
        [],
    )
    assert seen is not None and seen.status == "running" and seen.dashboard == "h:8265"


def test_log_pages_neither_lose_nor_repeat_lines() -> None:
    text = "".join(f"line {i}\n" for i in range(10)) + "partial"
    first = page(text, start=0, limit=4, max_bytes=1000, uid="a", known_uid=None, running=True)
    assert first.lines == [f"line {i}" for i in range(4)] and first.next == 4 and first.more
    rest = page(text, start=4, limit=100, max_bytes=1000, uid="a", known_uid="a", running=True)
    assert rest.lines == [f"line {i}" for i in range(4, 10)] and not rest.more  # no partial line
    done = page(text, start=10, limit=100, max_bytes=1000, uid="a", known_uid="a", running=False)
    assert done.lines == ["partial"]
    restarted = page(
        "new\n", start=10, limit=5, max_bytes=1000, uid="b", known_uid="a", running=True
    )
    assert restarted.restarted and restarted.start == 0 and restarted.lines == ["new"]
    tail = page(
        text, start=0, limit=100, max_bytes=1000, uid="a", known_uid=None, running=True, tail=2
    )
    assert tail.lines == ["line 8", "line 9"] and tail.start == 8
    small = page(text, start=0, limit=100, max_bytes=14, uid="a", known_uid=None, running=True)
    assert small.lines == ["line 0", "line 1"] and small.more


def test_a_group_at_zero_nodes_is_checked_against_its_instance_type() -> None:
    from workload_svc.domain.instance_types import accelerators

    assert accelerators("ml.g5.8xlarge") == (1, 1) and accelerators("ml.c5.large") is None
    gpus, efa = accelerators("ml.p5.48xlarge") or (0, 0)
    empty = facts(groups={"gpu": GroupFacts("gpu", "ml.p5.48xlarge", 0, gpus, efa)})
    plan = plan_submit("c", spec(replicas=4, resources={"gpus": 8, "efa": 32}), empty)
    assert any("scales up" in n for n in plan.notes)
    with pytest.raises(PermanentError, match="has 8"):
        plan_submit("c", spec(resources={"gpus": 16}), empty)


ELASTIC = {"elastic": {"min_replicas": 1, "max_replicas": 2}}


def test_hyperpod_facts_from_the_cluster_description() -> None:
    found = hyperpod_facts(
        {
            "InstanceGroups": [
                {"InstanceGroupName": "gpu"},
                {"InstanceGroupName": "cheap", "CapacityRequirements": {"Spot": {}}},
            ],
            "TieredStorageConfig": {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
        }
    )
    assert found == HyperPodFacts(spot_groups=frozenset({"cheap"}), tiered_checkpointing=True)
    assert (
        hyperpod_facts({"TieredStorageConfig": {"Mode": "Disable"}}).tiered_checkpointing is False
    )


@pytest.mark.parametrize(
    ("hyperpod", "field", "rule", "way_out"),
    [
        (
            HyperPodFacts(frozenset({"gpu"}), tiered_checkpointing=False),
            "instance_group",
            "elastic training does not support Spot Instances",
            "on-demand or training-plan group",
        ),
        (
            HyperPodFacts(frozenset(), tiered_checkpointing=True),
            "elastic",
            "elastic training does not support managed tiered checkpointing",
            '{"tiered_checkpointing": {"enabled": false}}',
        ),
    ],
)
def test_aws_elastic_rules_refuse_with_the_field_the_rule_and_the_way_out(
    hyperpod: HyperPodFacts, field: str, rule: str, way_out: str
) -> None:
    with pytest.raises(PermanentError) as info:
        plan_submit("c", spec(**ELASTIC), facts(hyperpod=hyperpod))
    assert info.value.code == "InvalidJob"
    assert info.value.message.startswith(f"{field}: ") and rule in info.value.message
    assert way_out in (info.value.hint or "") and "drop elastic" in (info.value.hint or "")
    # the same group and cluster run the job at a fixed size
    assert not plan_submit("c", spec(), facts(hyperpod=hyperpod)).noop


def test_an_elastic_plan_without_the_cluster_description_says_what_it_did_not_check() -> None:
    plan = plan_submit("c", spec(**ELASTIC), facts())
    assert any("spot capacity and tiered checkpointing not checked" in n for n in plan.notes)
    checked = plan_submit("c", spec(**ELASTIC), facts(hyperpod=HyperPodFacts(frozenset(), False)))
    assert not any("not checked" in n for n in checked.notes)
