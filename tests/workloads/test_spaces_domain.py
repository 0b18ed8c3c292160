"""Spaces, pure: the Workspace a spec becomes (as `hyp create hyp-space` writes it), the diff
of a change, what a re-apply keeps, the phase read from the conditions, and the rules."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from shared.contracts.spaces import SpaceChange, SpaceSpec
from shared.errors import PermanentError
from workload_svc.adapters.space_proxy import proxy_template
from workload_svc.domain import spaces


def _spec(**fields: Any) -> SpaceSpec:
    return SpaceSpec.model_validate({"name": "lab", **fields})


def _found(**fields: Any) -> dict[str, Any]:
    body = spaces.workspace(_spec(**fields), "alice")
    body["metadata"]["creationTimestamp"] = "2026-12-01T00:00:00Z"
    return body


def test_a_gpu_space_is_an_owner_only_running_workspace_with_its_claims() -> None:
    body = spaces.workspace(
        _spec(gpu=1, volumes=[{"claim": "s3-claim"}], idle_shutdown={"timeout_minutes": 30}),
        "alice",
    )
    assert body["apiVersion"] == "workspace.jupyter.org/v1alpha1" and body["kind"] == "Workspace"
    assert body["metadata"]["annotations"] == {"workspace.jupyter.org/created-by": "alice"}
    spec = body["spec"]
    assert spec["desiredStatus"] == "Running"
    assert spec["ownershipType"] == spec["accessType"] == "OwnerOnly"
    assert spec["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert spec["image"].endswith("-gpu")
    assert spec["volumes"] == [
        {"name": "s3-claim", "mountPath": "/mnt/s3-claim", "persistentVolumeClaimName": "s3-claim"}
    ]
    assert spec["idleShutdown"]["idleTimeoutInMinutes"] == 30


def test_a_change_diffs_only_what_differs_and_the_reapply_keeps_the_rest() -> None:
    found = _found(gpu=1, memory="8Gi", volumes=[{"claim": "s3-claim"}])
    assert spaces.change_diff(found, SpaceChange(memory="8Gi")) == {}
    diff = spaces.change_diff(found, SpaceChange(memory="16Gi", gpu=1))
    assert list(diff) == ["memory"] and diff["memory"].actual == "8Gi"
    applied = spaces.changed_workspace(found, SpaceChange(memory="16Gi"))
    assert applied["spec"]["resources"]["limits"] == {"memory": "16Gi", "nvidia.com/gpu": "1"}
    assert applied["spec"]["volumes"] == found["spec"]["volumes"]
    assert applied["spec"]["image"] == found["spec"]["image"]
    assert applied["metadata"]["annotations"] == found["metadata"]["annotations"]
    stopped = spaces.status_workspace(found, "Stopped")
    assert stopped["spec"]["desiredStatus"] == "Stopped"
    assert stopped["spec"]["resources"] == found["spec"]["resources"]


@pytest.mark.parametrize(
    ("desired", "conditions", "phase"),
    [
        ("Running", {"Available": "False"}, "Starting"),
        ("Running", {"Available": "True"}, "Running"),
        ("Stopped", {"Stopped": "False"}, "Stopping"),
        ("Stopped", {"Stopped": "True"}, "Stopped"),
        ("Running", {"Degraded": "True"}, "Failed"),
    ],
)
def test_the_phase_is_read_from_the_conditions(
    desired: str, conditions: dict[str, str], phase: str
) -> None:
    found = _found()
    found["spec"]["desiredStatus"] = desired
    found["status"] = {"conditions": [{"type": t, "status": s} for t, s in conditions.items()]}
    assert spaces.phase(found) == phase
    assert spaces.view("c1", found)["status"] == phase


def test_the_view_names_the_gateway_url_and_the_port_forward() -> None:
    view = spaces.view("c1", _found())
    assert view["url"] == "/api/v1/clusters/c1/spaces/lab/lab/"
    assert view["port_forward"] == (
        "kubectl --context c1 -n default port-forward service/lab 8888:8888"
    )
    assert view["owner"] == "alice"


def test_create_is_refused_without_the_add_on_a_claim_or_gpus() -> None:
    spec = _spec(gpu=2, volumes=[{"claim": "s3-claim"}])
    args: dict[str, Any] = {"served": True, "existing": None, "missing_claims": [], "gpu_nodes": 1}
    with pytest.raises(PermanentError, match="Spaces add-on is off"):
        spaces.plan_create("c1", spec, "alice", **{**args, "served": False})
    with pytest.raises(PermanentError, match="InvalidSpace: volumes: claim s3-claim"):
        spaces.plan_create("c1", spec, "alice", **{**args, "missing_claims": ["s3-claim"]})
    with pytest.raises(PermanentError, match="InvalidSpace: gpu: "):
        spaces.plan_create("c1", spec, "alice", **{**args, "gpu_nodes": 0})
    with pytest.raises(PermanentError, match="already exists"):
        spaces.plan_create("c1", spec, "alice", **{**args, "existing": _found()})
    assert spaces.plan_create("c1", spec, "alice", **args).objects[0].kind == "Workspace"


@pytest.mark.parametrize(
    "bad",
    [
        {"cpu": "two"},
        {"memory": "8 GB"},
        {"gpu": 9},
        {"name": "Lab"},
        {"volumes": [{"claim": "s3-claim"}, {"claim": "s3-claim"}]},
        {"volumes": [{"claim": "a", "mount_path": "/data"}, {"claim": "b", "mount_path": "/data"}]},
        {"volumes": [{"claim": "a", "mount_path": "relative"}]},
        {"volumes": [{"claim": "a", "mount_path": "/etc/x"}]},
        {"volumes": [{"claim": "a", "mount_path": "/data/../etc"}]},
        {"unknown": 1},
    ],
)
def test_bad_input_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        _spec(**bad)


def test_an_empty_change_is_refused() -> None:
    with pytest.raises(ValidationError, match="names nothing"):
        SpaceChange()


def test_the_proxy_path_is_one_checked_segment_each() -> None:
    template, params = proxy_template("default", "lab", 8888, "lab/tree/a b")
    assert template.endswith("/proxy/{p0}/{p1}/{p2}")
    assert params["service"] == "lab:8888" and params["p2"] == "a b"
    assert proxy_template("default", "lab", 8888, "")[0].endswith("/proxy/")
    with pytest.raises(Exception, match="path"):
        proxy_template("default", "lab", 8888, "lab/../../secrets")


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (
            'admission webhook "workspace.workspace.jupyter.org" denied the request: cpu 8 is'
            " outside template gpu-small's bounds [1, 4]",
            "cpu",
        ),
        ("denied the request: nvidia.com/gpu 2 is outside template t's bounds [0, 1]", "gpu"),
        ("denied the request: memory 64Gi is outside template t's bounds [1Gi, 8Gi]", "memory"),
        ("denied the request: image x is not allowed by template t; allowed: y", "image"),
        (
            "denied the request: idle timeout 9999 minutes is outside template t's bounds",
            "idle_shutdown",
        ),
        ("denied the request: template t does not allow secondary storage volumes", "volumes"),
        ("denied the request: workspace template nowhere not found", "template"),
    ],
)
def test_a_template_refusal_names_the_field_it_is_about(message: str, field: str) -> None:
    refusal = spaces.template_refusal("t", message)
    assert refusal.code == "InvalidSpace"
    assert refusal.message.startswith(f"{field}: ") and "denied" not in refusal.message
    assert "space-templates" in (refusal.hint or "")


def test_a_change_or_a_stop_keeps_the_template_the_space_was_made_from() -> None:
    found = _found(template="gpu-small")
    changed = spaces.changed_workspace(found, SpaceChange(gpu=1))
    stopped = spaces.status_workspace(found, "Stopped")
    assert changed["spec"]["templateRef"] == {"name": "gpu-small"}
    assert stopped["spec"]["templateRef"] == {"name": "gpu-small"}
