"""What `hyperpilot spaces` sends to the REST API, and what it refuses before sending."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hyperpilot.cli import app
from hyperpilot.client import Client
from hyperpilot.commands import common

OP = "11111111-2222-3333-4444-555555555555"
SPACE = {
    "name": "lab",
    "status": "Running",
    "url": "/api/v1/clusters/llm/spaces/lab/lab/",
    "port_forward": "kubectl --context llm -n default port-forward service/lab 8888:8888",
}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/clusters/active":
            return httpx.Response(200, json={"name": "llm", "status": "active"})
        if request.method == "GET":
            return httpx.Response(200, json=SPACE)
        return httpx.Response(
            202, json={"operation_id": OP, "status_url": f"/api/v1/operations/{OP}"}
        )

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    yield requests


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_create_sends_the_spec_with_the_claims(sent: list[httpx.Request]) -> None:
    result = _run(
        "spaces",
        "create",
        "lab",
        "--gpu",
        "1",
        "--volume",
        "s3-claim:/data",
        "--idle-minutes",
        "30",
    )
    assert result.exit_code == 0, result.output
    post = sent[-1]
    assert post.method == "POST" and post.url.path == "/api/v1/clusters/llm/spaces"
    assert json.loads(post.content) == {
        "name": "lab",
        "app_type": "jupyterlab",
        "gpu": 1,
        "volumes": [{"claim": "s3-claim", "mount_path": "/data"}],
        "idle_shutdown": {"enabled": True, "timeout_minutes": 30},
    }


def test_update_stop_start_delete_reach_their_routes(sent: list[httpx.Request]) -> None:
    assert _run("spaces", "update", "lab", "--memory", "16Gi").exit_code == 0
    assert (sent[-1].method, sent[-1].url.path) == ("PATCH", "/api/v1/clusters/llm/spaces/lab")
    assert json.loads(sent[-1].content) == {"memory": "16Gi"}
    for verb in ("stop", "start"):
        assert _run("spaces", verb, "lab").exit_code == 0
        assert sent[-1].url.path == f"/api/v1/clusters/llm/spaces/lab/{verb}"
    assert _run("spaces", "delete", "lab", "--yes").exit_code == 0
    assert sent[-1].method == "DELETE"


def test_connect_prints_the_gateway_url_and_the_port_forward(sent: list[httpx.Request]) -> None:
    result = _run("spaces", "connect", "lab", "-o", "json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["url"] == "http://gw/api/v1/clusters/llm/spaces/lab/lab/"
    assert shown["port_forward"].endswith("port-forward service/lab 8888:8888")


def test_bad_input_is_refused_before_anything_is_sent(sent: list[httpx.Request]) -> None:
    result = _run("spaces", "create", "lab", "--cpu", "two")
    assert result.exit_code != 0 and "cpu" in result.output
    assert _run("spaces", "update", "lab").exit_code != 0
    assert _run("spaces", "create", "lab", "--volume", "s3-claim:").exit_code != 0
    assert [r for r in sent if r.method != "GET"] == []


def test_create_from_a_template_sends_only_what_is_given_and_templates_lists(
    sent: list[httpx.Request],
) -> None:
    result = _run("spaces", "create", "lab", "--template", "gpu-small", "--idle-minutes", "60")
    assert result.exit_code == 0, result.output
    assert json.loads(sent[-1].content) == {
        "name": "lab",
        "template": "gpu-small",
        "volumes": [],
        "idle_shutdown": {"enabled": True, "timeout_minutes": 60},
    }
    listed = _run("spaces", "templates", "-o", "json")
    assert listed.exit_code == 0, listed.output
    assert (sent[-1].method, sent[-1].url.path) == (
        "GET",
        "/api/v1/clusters/llm/space-templates",
    )
