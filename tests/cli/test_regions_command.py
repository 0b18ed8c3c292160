"""The CLI's regions: `inspect regions` lists the served ones, `--region` reaches the body,
and the clusters table shows each cluster's region."""

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
CLUSTERS = [
    {"name": "east", "region": "us-east-1", "status": "active", "managed": True},
    {"name": "west", "region": "us-west-2", "status": "active", "managed": True},
]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/inspect/regions":
            return httpx.Response(
                200, json={"default": "us-east-1", "regions": ["us-east-1", "us-west-2"]}
            )
        if request.url.path == "/api/v1/clusters" and request.method == "GET":
            return httpx.Response(200, json=CLUSTERS)
        body = {"operation_id": OP, "status_url": f"/api/v1/operations/{OP}", "created": True}
        return httpx.Response(202, json=body)

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    monkeypatch.setenv("COLUMNS", "120")
    yield requests


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_inspect_regions_lists_the_served_and_the_default(sent: list[httpx.Request]) -> None:
    done = _run("inspect", "regions")
    assert done.exit_code == 0, done.output
    lines = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert lines == [["REGION", "DEFAULT"], ["us-east-1", "yes"], ["us-west-2", "no"]]
    as_json = _run("inspect", "regions", "-o", "json")
    assert json.loads(as_json.stdout) == {
        "default": "us-east-1",
        "regions": ["us-east-1", "us-west-2"],
    }


def test_import_sends_the_region(sent: list[httpx.Request]) -> None:
    done = _run("clusters", "import", "--eks-cluster-name", "prod", "--region", "us-west-2")
    assert done.exit_code == 0, done.output
    [request] = sent
    assert json.loads(request.content) == {"eks_cluster_name": "prod", "region": "us-west-2"}


def test_the_clusters_table_shows_each_region(sent: list[httpx.Request]) -> None:
    done = _run("clusters", "list")
    assert done.exit_code == 0, done.output
    header, *rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert header[:2] == ["NAME", "REGION"]
    regions = {row[row.index(name) + 1] for name in ("east", "west") for row in rows if name in row}
    assert regions == {"us-east-1", "us-west-2"}
