"""What the instance-group, node, feature and operation commands send to the REST API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from hyperpilot.cli import app
from hyperpilot.client import Client
from hyperpilot.commands import common

OP = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    """Every request the commands make, answered like the gateway would."""
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/clusters/active":
            return httpx.Response(200, json={"name": "llm", "status": "active"})
        if request.url.params.get("dry_run") == "true":
            plan = {"noop": False, "diff": {"count": {"actual": 2, "requested": 3}}, "calls": []}
            return httpx.Response(200, json={"dry_run": True, "plan": plan})
        if request.method == "GET":
            return httpx.Response(200, json=[])
        return httpx.Response(
            202,
            json={
                "operation_id": OP,
                "status_url": f"/api/v1/operations/{OP}",
                "created": True,
                "noop": False,
                "diff": {"count": {"actual": 2, "requested": 3}},
            },
        )

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    yield requests


def _run(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result


def _body(request: httpx.Request) -> Any:
    return json.loads(request.content) if request.content else None


def test_an_instance_group_change_sends_only_the_fields_given(sent: list[httpx.Request]) -> None:
    done = _run("instance-groups", "update", "gpu", "--count", "3", "--label", "team=llm")
    assert done.exit_code == 0, done.output
    active, patch = sent
    assert active.url.path == "/api/v1/clusters/active"
    assert patch.method == "PATCH" and patch.url.path == "/api/v1/clusters/llm/instance-groups/gpu"
    assert _body(patch) == {"count": 3, "labels": {"team": "llm"}}
    assert "Idempotency-Key" in patch.headers
    assert "change count: 2 -> 3" in done.stdout


def test_dry_run_asks_for_the_plan_and_prints_it(sent: list[httpx.Request]) -> None:
    done = _run(
        "instance-groups",
        "add",
        "-c",
        "llm",
        "--name",
        "spot",
        "--type",
        "ml.g5.8xlarge",
        "--count",
        "1",
        "--capacity",
        "spot",
        "--taint",
        "gpu=true:NoSchedule",
        "--dry-run",
    )
    assert done.exit_code == 0, done.output
    (post,) = sent
    assert post.url.params["dry_run"] == "true"
    assert _body(post) == {
        "count": 1,
        "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        "name": "spot",
        "instance_type": "ml.g5.8xlarge",
        "capacity_type": "spot",
    }
    assert done.stdout.startswith("dry run: nothing was changed")
    plan = yaml.safe_load(done.stdout.split("\n", 1)[1])
    assert plan["diff"]["count"] == {"actual": 2, "requested": 3}
    as_json = _run("instance-groups", "delete", "spot", "-c", "llm", "--dry-run", "-o", "json")
    assert json.loads(as_json.stdout)["dry_run"] is True
    assert sent[-1].method == "DELETE"


def test_node_actions_features_software_update_and_cancel(sent: list[httpx.Request]) -> None:
    assert _run("nodes", "reboot", "i-0123456789abcdef0", "-c", "llm").exit_code == 0
    assert sent[-1].url.path == "/api/v1/clusters/llm/nodes/reboot"
    assert _body(sent[-1]) == {"node_ids": ["i-0123456789abcdef0"]}
    assert _run("nodes", "replace", "i-0123456789abcdef0", "-c", "llm").exit_code == 2  # no --yes
    assert _run("nodes", "health-check", "-c", "llm", "--group", "gpu").exit_code == 0
    assert _body(sent[-1]) == {"node_ids": [], "instance_groups": ["gpu"]}
    assert _run("nodes", "recovery", "None", "-c", "llm").exit_code == 0
    assert sent[-1].method == "PUT" and _body(sent[-1]) == {"mode": "None"}
    done = _run(
        "features",
        "set",
        "-c",
        "llm",
        "--no-autoscaling",
        "--tiered-checkpointing",
        "--checkpoint-memory-percentage",
        "20",
    )
    assert done.exit_code == 0, done.output
    assert _body(sent[-1]) == {
        "tiered_checkpointing": {"enabled": True, "memory_percentage": 20},
        "autoscaling": {"enabled": False},
    }
    assert _run("features", "set", "-c", "llm").exit_code == 2  # nothing to change
    software = _run("clusters", "update-software", "llm", "--batch-percent", "25")
    assert software.exit_code == 0
    assert sent[-1].url.path == "/api/v1/clusters/llm/software-update"
    assert _body(sent[-1]) == {"batch_size": {"type": "percentage", "value": 25}}
    assert _run("operations", "cancel", OP).exit_code == 0
    assert sent[-1].url.path == f"/api/v1/operations/{OP}/cancel"


def test_jobs_logs_follow_reads_from_where_it_left_off_until_the_job_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    pages = ["step 1/3 loss 1.0\n", "", "step 2/3 loss 0.5\nstep 3/3 loss 0.2\n", ""]
    starts: list[str] = []
    job_reads = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal job_reads
        if request.url.path.endswith("/logs"):
            starts.append(request.url.params["from"])
            text = pages.pop(0) if pages else ""
            start = int(request.url.params["from"])
            return httpx.Response(
                200, text=text, headers={"X-Next-Line": str(start + text.count("\n"))}
            )
        job_reads += 1
        status = "running" if job_reads < 3 else "succeeded"
        live = {"observed": {"pods": [{"name": "ddp-worker-0"}]}}
        return httpx.Response(200, json={"name": "ddp", "status": status, "live": live})

    monkeypatch.setattr(
        common,
        "Client",
        lambda url, token: Client(url, token, transport=httpx.MockTransport(handler)),
    )
    monkeypatch.setattr("hyperpilot.commands.jobs.time.sleep", lambda _: None)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    done = _run("jobs", "logs", "ddp", "-c", "llm", "-f")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        "step 1/3 loss 1.0",
        "step 2/3 loss 0.5",
        "step 3/3 loss 0.2",
    ]
    assert starts[:3] == ["0", "1", "1"] and starts[-1] == "3"
    assert "job ddp succeeded" in done.stderr


def test_jobs_and_endpoints_requests(sent: list[httpx.Request]) -> None:
    submitted = _run(
        "jobs", "submit", "-c", "llm", "--recipe", "pytorch", "--name", "ddp",
        "--instance-group", "gpu", "--script", "code/train.py", "--gpus", "1", "--dry-run",
    )  # fmt: skip
    assert submitted.exit_code == 0, submitted.output
    assert sent[-1].url.path == "/api/v1/clusters/llm/jobs"
    assert sent[-1].url.params["dry_run"] == "true"
    assert _body(sent[-1]) == {
        "recipe": "pytorch",
        "name": "ddp",
        "instance_group": "gpu",
        "script": "code/train.py",
        "resources": {"gpus": 1},
    }
    assert _run("jobs", "cancel", "ddp", "-c", "llm").exit_code == 0
    assert sent[-1].url.path == "/api/v1/clusters/llm/jobs/ddp/cancel"
    assert _run("endpoints", "scale", "qwen", "--replicas", "2", "-c", "llm").exit_code == 0
    assert sent[-1].url.path == "/api/v1/endpoints/qwen/scale"
    assert sent[-1].url.params["cluster"] == "llm" and _body(sent[-1]) == {"replicas": 2}
    assert _run("endpoints", "list", "--all").exit_code == 0
    assert sent[-1].url.params["cluster"] == "*"
    assert _run("endpoints", "invoke", "qwen").exit_code == 2  # nothing to send


def test_diagnose_commands_and_jobs_logs_previous(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    requests: list[httpx.Request] = []
    pod = {
        "name": "web-0",
        "namespace": "default",
        "status": "CrashLoopBackOff",
        "ready": "0/1",
        "restarts": 4,
        "node": "hyperpod-i-0",
        "containers": [
            {
                "name": "main",
                "state": "waiting",
                "reason": "CrashLoopBackOff",
                "last_termination": {"reason": "OOMKilled", "exit_code": 137},
            }
        ],
    }
    event = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "container main exited with code 137",
        "object": {"kind": "Pod", "name": "web-0", "namespace": "default"},
        "count": 3,
        "last_timestamp": "2026-01-01T00:00:09Z",
    }

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        path = request.url.path
        if path.endswith("/kubernetes-events"):
            return httpx.Response(200, json={"namespace": "*", "events": [event]})
        if path.endswith("/pods"):
            return httpx.Response(200, json={"namespace": "default", "pods": [pod]})
        if "/pods/" in path:
            return httpx.Response(
                200,
                text="before the crash\n",
                headers={"X-Container": "main", "X-Restart-Count": "4"},
            )
        if path.endswith("/logs"):
            return httpx.Response(200, text="step 9\n", headers={"X-Next-Line": "1"})
        return httpx.Response(200, json={"name": "llm", "status": "active"})

    monkeypatch.setattr(
        common,
        "Client",
        lambda url, token: Client(url, token, transport=httpx.MockTransport(handler)),
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("COLUMNS", "200")

    shown = _run("diagnose", "events", "-c", "llm", "--type", "Warning", "--kind", "Pod",
                 "--object", "web-0", "--limit", "5")  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert requests[-1].url.path == "/api/v1/clusters/llm/kubernetes-events"
    assert dict(requests[-1].url.params) == {
        "kind": "Pod", "object": "web-0", "type": "Warning", "limit": "5"
    }  # fmt: skip
    assert (
        "BackOff" in shown.stdout
        and "Pod/web-0" in shown.stdout
        and "exited with code 137" in shown.stdout
    )

    listed = _run("diagnose", "pods", "-c", "llm", "-A", "-l", "app=web")
    assert listed.exit_code == 0, listed.output
    assert dict(requests[-1].url.params) == {"namespace": "*", "selector": "app=web"}
    assert "CrashLoopBackOff" in listed.stdout and "OOMKilled (137)" in listed.stdout
    as_yaml = yaml.safe_load(_run("diagnose", "pods", "-c", "llm", "-o", "yaml").stdout)
    assert as_yaml["pods"][0]["containers"][0]["last_termination"]["exit_code"] == 137
    assert requests[-1].url.params["namespace"] == "default"

    text = _run("diagnose", "logs", "web-0", "-c", "llm", "--previous", "--tail", "50")
    assert text.exit_code == 0 and text.stdout == "before the crash\n"
    assert requests[-1].url.path == "/api/v1/clusters/llm/pods/default/web-0/logs"
    assert dict(requests[-1].url.params) == {"tail": "50", "previous": "true"}
    as_json = json.loads(
        _run("diagnose", "logs", "web-0", "-c", "llm", "-n", "tools", "-o", "json").stdout
    )
    assert as_json["lines"] == ["before the crash"] and as_json["restart_count"] == 4
    assert requests[-1].url.path == "/api/v1/clusters/llm/pods/tools/web-0/logs"
    assert "previous" not in requests[-1].url.params

    previous = _run("jobs", "logs", "ddp", "-c", "llm", "--pod", "ddp-pods-0", "--previous")
    assert previous.exit_code == 0 and previous.stdout == "step 9\n"
    assert requests[-1].url.params["previous"] == "true"
    both = _run("jobs", "logs", "ddp", "-c", "llm", "--previous", "-f")
    assert both.exit_code == 2 and "--previous and --follow" in both.stderr
