"""A self-managed endpoint's team and priority: its namespace follows the team, its workers'
Deployment and pods carry the Kueue labels task governance expects, and a missing team or
priority class is refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from inference_svc.domain.plan import ClusterFacts, deploy_plan
from inference_svc.domain.render import render
from shared.contracts.inference import EndpointSpec
from shared.errors import PermanentError

TYPE = "ml.g5.8xlarge"


def make(**overrides: Any) -> EndpointSpec:
    body: dict[str, Any] = {
        "name": "chat",
        "instance_type": TYPE,
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    body.update(overrides)
    return EndpointSpec.model_validate(body)


def facts(**changes: Any) -> ClusterFacts:
    base: dict[str, Any] = {
        "cluster": "c1",
        "gpus_by_instance_type": {TYPE: 4},
        "served": frozenset(),
        "team_queue": True,
        "priority_class": True,
    }
    return ClusterFacts(**{**base, **changes})


def test_a_teams_endpoint_runs_in_its_namespace_with_the_kueue_labels() -> None:
    spec = make(team="team-a", priority="inference")
    assert spec.namespace == "hyperpod-ns-team-a"
    deployment = next(o for o in render(spec) if o["kind"] == "Deployment")
    for labels in (
        deployment["metadata"]["labels"],
        deployment["spec"]["template"]["metadata"]["labels"],
    ):
        assert labels["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-team-a-localqueue"
        assert labels["kueue.x-k8s.io/priority-class"] == "inference-priority"
    assert all(o["metadata"].get("namespace") == "hyperpod-ns-team-a" for o in render(spec))
    plain = next(o for o in render(make()) if o["kind"] == "Deployment")
    assert "kueue.x-k8s.io/queue-name" not in plain["metadata"]["labels"]


def test_team_rules_refuse_with_the_field() -> None:
    with pytest.raises(ValidationError, match="namespace: a team's endpoint runs in"):
        make(team="team-a", namespace="serving")
    with pytest.raises(ValidationError, match="priority: a priority class applies"):
        make(priority="high")
    with pytest.raises(ValidationError, match="team: task governance queues self-managed"):
        EndpointSpec.model_validate(
            {
                "name": "js",
                "kind": "jumpstart",
                "instance_type": TYPE,
                "gpus": 1,
                "jumpstart": {"model_id": "meta-textgeneration-llama-3-8b"},
                "team": "team-a",
            }
        )
    with pytest.raises(PermanentError) as team:
        deploy_plan(make(team="team-z"), facts(team_queue=False))
    assert team.value.message.startswith("team: team 'team-z' does not exist")
    with pytest.raises(PermanentError) as priority:
        deploy_plan(make(team="team-a", priority="urgent"), facts(priority_class=False))
    assert "urgent-priority" in priority.value.message
    assert not deploy_plan(make(team="team-a"), facts()).noop
