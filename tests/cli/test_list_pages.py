"""The list commands of the lists the gateway pages by cursor (jobs, clusters, endpoints,
dependencies, instance groups, storage, spaces, teams) read every page
by default (following X-Next-Page-Token), or the first --limit rows, saying on stderr how to
read the rest; --page-token starts where a limited list stopped."""

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

ROWS = [{"name": f"row-{i:04d}", "cluster": "llm", "status": "running"} for i in range(2500)]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    """Every request the commands make; each list answered in pages of `limit` rows."""
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/clusters/active":
            return httpx.Response(200, json={"name": "llm", "status": "active"})
        limit = int(request.url.params["limit"])
        assert 1 <= limit <= 1000, "the gateway takes limit 1 to 1000"
        start = int(request.url.params.get("page_token", "t0")[1:])
        headers = {"x-total-count": str(len(ROWS))}
        if start + limit < len(ROWS):
            headers["x-next-page-token"] = f"t{start + limit}"
        page = ROWS[start : start + limit]
        if request.url.path.endswith("/teams"):  # the task governance object, its teams paged
            body = {"cluster": "llm", "task_governance": {"enabled": True}, "teams": page}
            return httpx.Response(200, json=body, headers=headers)
        return httpx.Response(200, json=page, headers=headers)

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    yield requests


def _names(output: str) -> list[str]:
    return [row["name"] for row in json.loads(output)]


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["jobs", "list"], "/api/v1/clusters/llm/jobs"),
        (["clusters", "list"], "/api/v1/clusters"),
        (["endpoints", "list", "--all"], "/api/v1/endpoints"),
        (["dependencies", "list"], "/api/v1/clusters/llm/dependencies"),
        (["instance-groups", "list"], "/api/v1/clusters/llm/instance-groups"),
        (["storage", "list"], "/api/v1/storage/buckets"),
        (["spaces", "list"], "/api/v1/clusters/llm/spaces"),
    ],
)
def test_a_list_reads_every_page_by_default(
    sent: list[httpx.Request], args: list[str], path: str
) -> None:
    done = CliRunner().invoke(app, [*args, "-o", "json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert _names(done.stdout) == [r["name"] for r in ROWS]
    pages = [r for r in sent if r.url.path == path]
    assert [r.url.params.get("page_token") for r in pages] == [None, "t1000", "t2000"]
    assert "more follow" not in done.stderr


def test_limit_stops_early_and_names_the_token_of_the_rest(sent: list[httpx.Request]) -> None:
    done = CliRunner().invoke(app, ["jobs", "list", "--limit", "30", "-o", "json"])
    assert done.exit_code == 0, done.output
    assert _names(done.stdout) == [f"row-{i:04d}" for i in range(30)]
    assert "--page-token t30" in done.stderr
    assert [r.url.params["limit"] for r in sent if r.url.path.endswith("/jobs")] == ["30"]

    more = CliRunner().invoke(
        app, ["jobs", "list", "--limit", "1200", "--page-token", "t30", "-o", "json"]
    )
    assert more.exit_code == 0, more.output
    assert _names(more.stdout) == [f"row-{i:04d}" for i in range(30, 1230)]
    asked = [dict(r.url.params) for r in sent if r.url.path.endswith("/jobs")][1:]
    assert asked == [
        {"limit": "1000", "page_token": "t30"},
        {"limit": "200", "page_token": "t1030"},
    ]
    assert "--page-token t1230" in more.stderr


def test_teams_list_reads_every_page_of_teams_with_the_governance_once(
    sent: list[httpx.Request],
) -> None:
    done = CliRunner().invoke(app, ["teams", "list", "-o", "json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    assert answer["task_governance"] == {"enabled": True}
    assert [t["name"] for t in answer["teams"]] == [r["name"] for r in ROWS]
    pages = [r for r in sent if r.url.path.endswith("/teams")]
    assert [r.url.params.get("page_token") for r in pages] == [None, "t1000", "t2000"]

    limited = CliRunner().invoke(app, ["teams", "list", "--limit", "5", "-o", "json"])
    assert limited.exit_code == 0, limited.output
    assert [t["name"] for t in json.loads(limited.stdout)["teams"]] == [
        f"row-{i:04d}" for i in range(5)
    ]
    assert "--page-token t5" in limited.stderr
