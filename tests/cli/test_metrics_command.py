"""`hyperpilot metrics query`: what it sends (the query, window and step) and how it prints an
instant answer (a table) and a range (a sparkline per series); the observability flags of
`features set`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hyperpilot.cli import app
from hyperpilot.client import Client
from hyperpilot.commands import common
from hyperpilot.commands.metrics import sparkline

RANGE = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {
                "metric": {"Hostname": "node-a", "gpu": "0", "cluster": "llm", "job": "dcgm"},
                "values": [[1, "0"], [2, "50"], [3, "100"]],
            }
        ],
    },
}
INSTANT = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            {"metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "1"}, "value": [1, "79"]}
        ],
    },
}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/clusters/active":
            return httpx.Response(200, json={"name": "llm", "status": "active"})
        if request.url.path.endswith("/features"):
            return httpx.Response(
                202, json={"operation_id": "op", "status_url": "/x", "created": True, "noop": False}
            )
        return httpx.Response(200, json=RANGE if "window" in request.url.params else INSTANT)

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    yield requests


def test_sparkline_scales_between_low_and_high() -> None:
    assert sparkline([0, 50, 100]) == "▁▅█"
    assert sparkline([7, 7]) == "▁▁" and sparkline([]) == ""


def test_a_range_prints_a_sparkline_per_series(sent: list[httpx.Request]) -> None:
    result = CliRunner().invoke(
        app, ["metrics", "query", "DCGM_FI_DEV_GPU_UTIL", "-w", "15m", "--step", "30s"]
    )
    assert result.exit_code == 0, result.output
    [request] = [r for r in sent if r.url.path.endswith("/metrics/query")]
    assert request.url.path == "/api/v1/clusters/llm/metrics/query"
    assert dict(request.url.params) == {
        "query": "DCGM_FI_DEV_GPU_UTIL",
        "window": "15m",
        "step": "30s",
    }
    assert '{Hostname="node-a",gpu="0"}  ▁▅█  last 100' in result.output


def test_an_instant_query_prints_a_table(sent: list[httpx.Request]) -> None:
    result = CliRunner().invoke(app, ["metrics", "query", "DCGM_FI_DEV_XID_ERRORS > 0"])
    assert result.exit_code == 0, result.output
    assert 'DCGM_FI_DEV_XID_ERRORS{gpu="1"}' in result.output and "79" in result.output


def test_features_set_sends_the_observability_flags(sent: list[httpx.Request]) -> None:
    result = CliRunner().invoke(
        app, ["features", "set", "--observability", "--no-container-insights"]
    )
    assert result.exit_code == 0, result.output
    [patch] = [r for r in sent if r.method == "PATCH"]
    assert json.loads(patch.content) == {"observability": True, "container_insights": False}


def test_make_up_says_where_the_metrics_come_from(tmp_path: Path) -> None:
    from hyperpilot.infra import PrometheusServer
    from hyperpilot.stack import Stack

    assert "this stack starts no Prometheus" in Stack(tmp_path).metrics_source
    wanted = Stack(tmp_path, prometheus=True)  # as `hyperpilot up` asks, without the binary
    assert "no prometheus binary is installed" in wanted.metrics_source
    assert "make prometheus" in wanted.metrics_source
    wanted.prometheus_server = PrometheusServer(tmp_path, 9999, "/usr/bin/prometheus")
    assert wanted.metrics_source == "prometheus at http://127.0.0.1:9999 (/usr/bin/prometheus)"
