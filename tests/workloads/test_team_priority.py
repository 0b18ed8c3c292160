"""A job's team and priority: rendered as the namespace and the Kueue labels task governance
expects, for every recipe; refused with the field and the way out when the team's LocalQueue or
the priority class is missing."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from shared.contracts.workloads import RECIPES, JobSpec
from shared.errors import PermanentError
from workload_svc.domain.plan import ClusterFacts, GroupFacts, plan_submit
from workload_svc.domain.render import render

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)
RECIPE_FIELDS: dict[str, dict[str, Any]] = {
    "pytorch": {"script": "t.py"},
    "shell": {"body": "echo hi"},
    "llama-factory": {"model": "models/m", "dataset": "data/d"},
    "ms-swift": {"model": "models/m", "dataset": "data/d"},
    "verl": {"model": "models/m", "train_files": "d/t.parquet", "val_files": "d/v.parquet"},
}


def spec(recipe: str = "pytorch", **fields: Any) -> Any:
    return SPEC.validate_python(
        {"recipe": recipe, "name": "j", "instance_group": "gpu", **RECIPE_FIELDS[recipe], **fields}
    )


def facts(**changes: Any) -> ClusterFacts:
    base: dict[str, Any] = {
        "groups": {"gpu": GroupFacts("gpu", "ml.p5.48xlarge", 2, 8, 32)},
        "storage": True,
        "kinds": frozenset({"HyperPodPyTorchJob", "RayJob"}),
        "namespace": "hyperpod-ns-team-a",
        "team_queue": True,
        "priority_class": True,
    }
    return ClusterFacts(**{**base, **changes})


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_renders_the_teams_namespace_queue_and_priority(recipe: str) -> None:
    meta = render(spec(recipe, team="team-a", priority="high")).body["metadata"]
    assert meta["namespace"] == "hyperpod-ns-team-a"
    assert meta["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-team-a-localqueue"
    assert meta["labels"]["kueue.x-k8s.io/priority-class"] == "high-priority"


def test_without_a_team_the_job_stays_in_default_with_no_kueue_label() -> None:
    meta = render(spec()).body["metadata"]
    assert meta["namespace"] == "default"
    assert not any(k.startswith("kueue.x-k8s.io/") for k in meta["labels"])


def test_a_priority_without_a_team_or_a_bad_name_is_refused() -> None:
    with pytest.raises(ValidationError, match="priority: a priority class applies"):
        spec(priority="high")
    with pytest.raises(ValidationError):
        spec(team="Team_A")


def test_a_missing_team_or_priority_class_is_refused_with_the_field_and_the_fix() -> None:
    with pytest.raises(PermanentError) as team:
        plan_submit("c", spec(team="team-z"), facts(team_queue=False))
    assert team.value.message.startswith("team: team 'team-z' does not exist")
    assert "hyperpod-ns-team-z-localqueue" in team.value.message
    assert "POST /api/v1/clusters/{name}/teams" in (team.value.hint or "")
    with pytest.raises(PermanentError) as priority:
        plan_submit("c", spec(team="team-a", priority="urgent"), facts(priority_class=False))
    assert priority.value.message.startswith("priority: priority class 'urgent' does not exist")
    assert "urgent-priority" in priority.value.message


def test_the_plan_applies_in_the_teams_namespace_and_says_where_it_queues() -> None:
    plan = plan_submit("c", spec(team="team-a", priority="high"), facts())
    assert plan.objects[0].namespace == "hyperpod-ns-team-a"
    assert (
        "queued by Kueue in hyperpod-ns-team-a-localqueue (team team-a's quota) at priority high"
        in plan.notes
    )
    with pytest.raises(PermanentError, match="missing in namespace hyperpod-ns-team-a"):
        plan_submit("c", spec(team="team-a"), facts(storage=False))
