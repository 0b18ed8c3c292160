"""Spaces end to end, through REST on a cluster built once for the module: the Spaces add-on
enabled as a managed feature, a space created with a GPU and the cluster's bucket claim mounted
becomes Running, its URL answers through the gateway for its owner and is refused for a viewer
of another team (and for another operator); the Workspace and its pod are checked with kubectl;
stop, start, update and delete round-trip; bad input is a 422 naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shared import pages
from sim.aws import SimulatedAws
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.test_cluster_lifecycle import _kubeconfig


def _kubectl(config: Path, *args: str) -> Any:
    kubectl = Path(sys.executable).parent / "kubectl"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _token(api: Client, name: str, role: str) -> str:
    answer = api.post("/api/v1/tokens", {"name": name, "role": role})
    assert answer.status_code in (200, 201), answer.text
    token: str = answer.json()["token"]
    return token


def _done(api: Client, answer: Any, timeout: float = 120) -> dict[str, Any]:
    assert answer.status_code == 202, answer.text
    done = api.wait(answer.json()["operation_id"], timeout=timeout)
    assert done["status"] in ("succeeded", "noop"), done.get("error")
    return done


@pytest.fixture(scope="module")
def with_spaces(created_cluster: tuple[RunningStack, str]) -> tuple[RunningStack, str]:
    stack, name = created_cluster
    api = stack.client
    dry = api.http.patch(
        f"/api/v1/clusters/{name}/features", json={"spaces": True}, params={"dry_run": "true"}
    )
    assert dry.status_code == 200, dry.text
    assert dry.json()["plan"]["diff"]["spaces"] == {"actual": False, "requested": True}
    _done(api, api.http.patch(f"/api/v1/clusters/{name}/features", json={"spaces": True}))
    assert api.get(f"/api/v1/clusters/{name}/features").json()["spaces"]["status"] == "ACTIVE"
    return stack, name


def test_a_gpu_space_with_the_bucket_mounted_opens_for_its_owner_only(
    with_spaces: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    stack, name = with_spaces
    admin = stack.client
    owner = Client(stack.stack.url, _token(admin, "alice", "operator"))
    other = Client(stack.stack.url, _token(admin, "bob", "operator"))
    viewer = Client(stack.stack.url, _token(admin, "carol-other-team", "viewer"))
    base = f"/api/v1/clusters/{name}/spaces"
    spec = {
        "name": "alice-lab",
        "gpu": 1,
        "cpu": "2",
        "memory": "8Gi",
        "volumes": [{"claim": "s3-claim", "mount_path": "/data"}],
        "idle_shutdown": {"timeout_minutes": 30},
    }

    refused = owner.post(base, {**spec, "volumes": [{"claim": "no-such-claim"}]})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["fields"][0]["field"] == "volumes.0.claim"
    assert owner.post(base, {**spec, "cpu": "two"}).status_code == 422
    assert viewer.post(base, spec).status_code == 403

    dry = owner.post(base, spec, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    body = dry.json()["plan"]["objects"][0]["body"]
    assert body["apiVersion"] == "workspace.jupyter.org/v1alpha1"
    assert body["spec"]["resources"]["limits"]["nvidia.com/gpu"] == "1"

    _done(owner, owner.post(base, spec))
    described = owner.get(f"{base}/alice-lab").json()
    assert described["status"] == "Running" and described["owner"] == "alice"
    assert described["port_forward"].endswith("port-forward service/alice-lab 8888:8888")

    page = owner.get(f"{base}/alice-lab/lab/")
    assert page.status_code == 200, page.text
    assert "JupyterLab" in page.text
    for stranger in (viewer, other):
        denied = stranger.get(f"{base}/alice-lab/lab/")
        assert denied.status_code == 403, denied.text
        assert denied.json()["error"]["code"] == "not_space_owner"
        assert stranger.get(f"{base}/alice-lab").status_code == 403
        assert [s["name"] for s in stranger.get(base).json()] == []
    assert other.post(f"{base}/alice-lab/stop").status_code == 403

    # Her spaces a page at a time, by name: two pages of one hold both, once each.
    _done(owner, owner.post(base, {"name": "alice-notes", "cpu": "1", "memory": "1Gi"}))
    first = owner.get(base, params={"limit": 1})
    assert first.status_code == 200, first.text
    assert first.headers["X-Total-Count"] == "2"
    second = owner.get(base, params={"limit": 1, "page_token": first.headers["X-Next-Page-Token"]})
    assert "X-Next-Page-Token" not in second.headers
    walked = [s["name"] for page in (first, second) for s in page.json()]
    assert walked == [s["name"] for s in owner.get(base).json()] == ["alice-lab", "alice-notes"]
    assert other.get(base, params={"limit": 1}).headers["X-Total-Count"] == "0"
    foreign = owner.get(base, params={"page_token": pages.encode("teams", ["alice-lab"])})
    assert foreign.status_code == 400, foreign.text
    assert foreign.json()["error"]["fields"][0]["field"] == "page_token"
    _done(owner, owner.delete(f"{base}/alice-notes"))

    config = _kubeconfig(sim_aws, name, tmp_path / "config")
    workspace = _kubectl(config, "get", "workspaces.workspace.jupyter.org", "alice-lab")
    assert workspace["metadata"]["annotations"]["workspace.jupyter.org/created-by"] == "alice"
    assert workspace["spec"]["idleShutdown"]["idleTimeoutInMinutes"] == 30
    pods = _kubectl(config, "get", "pods", "-l", "workspace.jupyter.org/workspace-name=alice-lab")[
        "items"
    ]
    assert len(pods) == 1
    pod = pods[0]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "s3-claim"
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/data"

    _done(owner, owner.post(f"{base}/alice-lab/stop"))
    stopped = owner.get(f"{base}/alice-lab")
    assert stopped.status_code == 200 and stopped.json()["status"] == "Stopped", stopped.text
    assert owner.get(f"{base}/alice-lab/lab/").status_code == 409
    _done(owner, owner.post(f"{base}/alice-lab/start"))
    changed = owner.http.patch(f"{base}/alice-lab", json={"memory": "16Gi"})
    assert _done(owner, changed)["status"] == "succeeded"
    assert owner.get(f"{base}/alice-lab").json()["memory"] == "16Gi"
    same = owner.http.patch(f"{base}/alice-lab", json={"memory": "16Gi"})
    assert _done(owner, same)["status"] == "noop"
    _done(admin, admin.delete(f"{base}/alice-lab"))
    assert owner.get(f"{base}/alice-lab").status_code == 404


def test_a_spaces_volumes_are_the_clusters_storage_claims_and_hold_them(
    with_spaces: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    """Issue 26: a space mounts the cluster's claims only (an unknown one is 422 naming it and
    the claims there are, on create and on change), and a claim a space mounts, running or
    stopped, cannot be removed (409 naming the space) until the space lets it go."""
    from sim.testing import aws_client
    from tests.e2e.conftest import unique

    stack, name = with_spaces
    admin = stack.client
    owner = Client(stack.stack.url, _token(admin, "dora", "operator"))
    base = f"/api/v1/clusters/{name}/spaces"
    storage = f"/api/v1/clusters/{name}/storage"
    bucket = unique("space-data")
    aws_client(sim_aws, "s3").create_bucket(Bucket=bucket)
    _done(admin, admin.post(storage, {"kind": "s3", "claim": "team-data", "bucket": bucket}))

    spec = {"name": "dora-lab", "volumes": [{"claim": "s3-claim"}, {"claim": "nope"}]}
    for refused in (
        owner.post(base, spec),
        owner.post(base, spec, params={"dry_run": "true"}),
    ):
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["fields"][0]["field"] == "volumes.1.claim"
        assert "no storage claim nope" in error["message"]
        assert "s3-claim" in error["message"] and "team-data" in error["message"]
    assert owner.get(f"{base}/dora-lab").status_code == 404  # nothing was made

    _done(owner, owner.post(base, {"name": "dora-lab", "volumes": [{"claim": "team-data"}]}))
    assert owner.get(f"{base}/dora-lab").json()["volumes"] == [
        {"claim": "team-data", "mount_path": "/mnt/team-data"}
    ]
    change = owner.http.patch(f"{base}/dora-lab", json={"volumes": [{"claim": "gone"}]})
    assert change.status_code == 422, change.text
    assert change.json()["error"]["fields"][0]["field"] == "volumes.0.claim"

    for state in ("running", "stopped"):
        busy = admin.delete(f"{storage}/team-data")
        assert busy.status_code == 409, (state, busy.text)
        assert busy.json()["error"]["code"] == "claim_in_use"
        assert "space dora-lab (owner dora)" in busy.json()["error"]["message"]
        if state == "running":
            _done(owner, owner.post(f"{base}/dora-lab/stop"))

    # the space lets the claim go: then it can be removed
    _done(owner, owner.http.patch(f"{base}/dora-lab", json={"volumes": []}))
    _done(admin, admin.delete(f"{storage}/team-data"))
    assert "team-data" not in [c["claim"] for c in admin.get(storage).json()]
    _done(admin, admin.delete(f"{base}/dora-lab"))


def test_an_idle_space_stops_by_itself_and_says_why(
    with_spaces: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    """Idle shutdown through the product: a space with the shortest idle timeout (5 minutes;
    a minute of the fast profile lasts 0.5 s) and no request stops on its own; its description
    says Stopped because of idle shutdown, its Workspace was stopped by the operator (not by an
    operation) with the event kubectl sees; started again, it runs without the reason."""
    import time

    stack, name = with_spaces
    admin = stack.client
    owner = Client(stack.stack.url, _token(admin, "ivy", "operator"))
    base = f"/api/v1/clusters/{name}/spaces"
    spec = {"name": "ivy-lab", "idle_shutdown": {"enabled": True, "timeout_minutes": 5}}
    _done(owner, owner.post(base, spec))
    operations = len(admin.get("/api/v1/operations", params={"limit": 200}).json())
    deadline = time.monotonic() + 60
    while (described := owner.get(f"{base}/ivy-lab").json())["status"] != "Stopped":
        assert time.monotonic() < deadline, described
        time.sleep(0.5)
    assert described["desired_status"] == "Stopped"
    assert described["status_reason"] == (
        "IdleShutdown: stopped after 5 minutes without a request (idle shutdown)"
    ), described
    # nobody asked: no operation stopped it
    assert len(admin.get("/api/v1/operations", params={"limit": 200}).json()) == operations
    config = _kubeconfig(sim_aws, name, tmp_path / "config")
    events = _kubectl(config, "get", "events", "--field-selector", "involvedObject.name=ivy-lab")[
        "items"
    ]
    assert any(e["reason"] == "IdleShutdown" for e in events), events

    # a longer timeout (30 s of the fast profile), then started again: running, no reason
    longer = {"idle_shutdown": {"enabled": True, "timeout_minutes": 60}}
    _done(owner, owner.http.patch(f"{base}/ivy-lab", json=longer))
    _done(owner, owner.post(f"{base}/ivy-lab/start"))
    again = owner.get(f"{base}/ivy-lab").json()
    assert again["status"] == "Running" and again["status_reason"] is None, again
    _done(admin, admin.delete(f"{base}/ivy-lab"))


def test_a_space_made_from_a_template_takes_its_defaults_and_bounds(
    with_spaces: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    """A WorkspaceTemplate an admin applied with kubectl is listed through REST with its
    defaults and bounds; a space naming it gets the template's image, GPU and idle shutdown;
    one asking for more CPU than the template allows, or a change beyond its GPU bound, is a 422
    naming the field before anything is accepted (the API server's dry run runs the operator's
    webhook); an unknown template is refused the same way."""
    stack, name = with_spaces
    admin = stack.client
    owner = Client(stack.stack.url, _token(admin, "tom", "operator"))
    config = _kubeconfig(sim_aws, name, tmp_path / "config")
    template = {
        "apiVersion": "workspace.jupyter.org/v1alpha1",
        "kind": "WorkspaceTemplate",
        "metadata": {"name": "gpu-small"},
        "spec": {
            "displayName": "GPU (small)",
            "description": "One GPU, JupyterLab",
            "defaultImage": "public.ecr.aws/sagemaker/sagemaker-distribution:latest-gpu",
            "appType": "jupyterlab",
            "defaultResources": {
                "requests": {"cpu": "2", "memory": "8Gi"},
                "limits": {"nvidia.com/gpu": "1"},
            },
            "resourceBounds": {"cpu": {"min": "1", "max": "4"}, "gpu": {"min": "0", "max": "1"}},
            "defaultIdleShutdown": {"enabled": True, "idleTimeoutInMinutes": 240},
        },
    }
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    kubectl = Path(sys.executable).parent / "kubectl"
    applied = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), "apply", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr

    listed = owner.get(f"/api/v1/clusters/{name}/space-templates")
    assert listed.status_code == 200, listed.text
    [found] = [t for t in listed.json() if t["name"] == "gpu-small"]
    assert found["display_name"] == "GPU (small)"
    assert found["defaults"] == {
        "cpu": "2",
        "memory": "8Gi",
        "gpu": 1,
        "idle_timeout_minutes": 240,
    }
    assert found["bounds"]["gpu"] == {"min": "0", "max": "1"}

    base = f"/api/v1/clusters/{name}/spaces"
    _done(owner, owner.post(base, {"name": "tom-lab", "template": "gpu-small"}))
    described = owner.get(f"{base}/tom-lab").json()
    assert described["gpu"] == 1 and described["cpu"] == "2", described
    assert described["image"] == template["spec"]["defaultImage"]
    assert described["idle_shutdown"] == {"enabled": True, "timeout_minutes": 240}
    workspace = _kubectl(config, "get", "workspaces.workspace.jupyter.org", "tom-lab")
    assert workspace["spec"]["templateRef"] == {"name": "gpu-small"}

    for body, field, words in (
        ({"name": "tom-big", "template": "gpu-small", "cpu": "8"}, "cpu", "outside template"),
        ({"name": "tom-none", "template": "nowhere"}, "template", "template nowhere not found"),
    ):
        for params in ({"dry_run": "true"}, {}):
            refused = owner.post(base, body, params=params)
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert error["fields"][0]["field"] == field, error
            assert words in error["message"], error
            assert "space-templates" in error["fields"][0]["hint"], error
    listed_spaces = [s["name"] for s in owner.get(base).json()]
    assert "tom-big" not in listed_spaces and "tom-none" not in listed_spaces
    changed = owner.http.patch(f"{base}/tom-lab", json={"gpu": 2})
    assert changed.status_code == 422, changed.text
    assert changed.json()["error"]["fields"][0]["field"] == "gpu", changed.text
    _done(admin, admin.delete(f"{base}/tom-lab"))
