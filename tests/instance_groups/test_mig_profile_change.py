"""Repartitioning an instance group's GPUs: mig_profile on an update becomes the group's
nvidia.com/mig.config label (disabled: whole GPUs), a profile its instance type cannot take is
refused naming the field, and an unchanged profile is a noop."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from cluster_svc.domain.instance_groups.decisions import decide_update
from cluster_svc.domain.instance_groups.rules import RULE_MIG_PROFILE
from shared.contracts.instance_groups import InstanceGroupChange
from tests.instance_groups.fakes import cluster, details


def change(**fields: Any) -> dict[str, Any]:
    return InstanceGroupChange.model_validate(fields).changed()


def p5(labels: dict[str, str] | None = None) -> dict[str, Any]:
    kube = {"CurrentLabels": labels} if labels else {}
    return details(InstanceType="ml.p5.48xlarge", KubernetesConfig=kube)


def test_a_profile_becomes_the_label_and_keeps_the_other_labels() -> None:
    decision = decide_update(cluster(p5({"team": "a"})), "gpu", change(mig_profile="mig-1g.10gb"))
    assert not decision.problems
    assert decision.diff["mig_profile"].actual is None
    assert decision.diff["mig_profile"].requested == "mig-1g.10gb"
    entry = decision.calls[0].params["InstanceGroups"][0]
    assert entry["KubernetesConfig"]["Labels"] == {
        "team": "a",
        "nvidia.com/mig.config": "all-1g.10gb",
    }
    back = decide_update(
        cluster(p5({"nvidia.com/mig.config": "all-1g.10gb"})),
        "gpu",
        change(mig_profile="disabled"),
    )
    labels = back.calls[0].params["InstanceGroups"][0]["KubernetesConfig"]["Labels"]
    assert labels == {"nvidia.com/mig.config": "all-disabled"}
    assert back.diff["mig_profile"].actual == "mig-1g.10gb"


def test_the_same_profile_is_a_noop() -> None:
    same = decide_update(
        cluster(p5({"nvidia.com/mig.config": "all-3g.40gb"})),
        "gpu",
        change(mig_profile="mig-3g.40gb"),
    )
    assert same.noop and not same.calls


def test_a_profile_the_type_cannot_take_is_refused_on_its_field() -> None:
    decision = decide_update(cluster(), "gpu", change(mig_profile="mig-1g.10gb"))  # ml.g5.8xlarge
    assert [(p.field, p.rule) for p in decision.problems] == [("mig_profile", RULE_MIG_PROFILE)]
    assert "does not support MIG partitions" in decision.problems[0].message
    other = decide_update(cluster(p5()), "gpu", change(mig_profile="mig-1g.5gb"))
    assert [p.field for p in other.problems] == ["mig_profile"]
    assert "mig-1g.10gb" in other.problems[0].hint
    by_label = decide_update(
        cluster(), "gpu", change(labels={"nvidia.com/mig.config": "all-1g.10gb"})
    )
    assert [(p.field, p.rule) for p in by_label.problems] == [("labels", RULE_MIG_PROFILE)]
    with pytest.raises(ValidationError):
        change(mig_profile="1g.10gb")
