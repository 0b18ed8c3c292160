"""Chromium follows an endpoint's request charts and reads a cluster's GPU heatmap: with
observability on, a vLLM endpoint's page charts its ready replicas, and after requests through
the gateway its requests a second and its latency (p50/p95 from vLLM's histogram) move; the
cluster page shows a heatmap of its nodes' GPU utilization with a legend and the same numbers
as a table, with no accessibility violation (axe)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RunningStack
from tests.e2e.test_features import _apply
from tests.e2e.test_inference import MODEL, _deploy, _instance_type, _vllm
from tests.ui.helpers import axe_violations
from tests.ui.test_gpu_chart import _until

pytestmark = pytest.mark.slow

REQUESTS = "Requests per second"
LATENCY = "Request latency (ms)"
REPLICAS = "Ready replicas"


def test_endpoint_charts_move_and_the_cluster_heatmap_renders(
    page: Any, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    _apply(stack, cluster, {"observability": True})
    _deploy(api, cluster, _vllm("charted", _instance_type(api, cluster), "internal"))

    page.goto(f"/#/endpoints/{cluster}/charted")
    chart = page.locator(f'figure[data-chart="{REQUESTS}"]')
    chart.scroll_into_view_if_needed()
    _until(page, REPLICAS, lambda v: v.get("replicas") == 1)
    _until(page, REQUESTS, lambda v: v.get("requests/s") == 0)  # nothing asked yet
    for _ in range(12):
        answer = api.post(
            "/api/v1/endpoints/charted/invoke",
            {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]},
            params={"cluster": cluster},
        )
        assert answer.status_code == 200, answer.text
    _until(page, REQUESTS, lambda v: (v.get("requests/s") or 0) > 0)
    # what the chart draws is what the servers counted: the 12 requests, no more
    served = api.get(
        f"/api/v1/clusters/{cluster}/metrics/query",
        params={"query": 'sum(increase(vllm:request_success_total{endpoint="charted"}[5m]))'},
    )
    assert served.status_code == 200, served.text
    assert float(served.json()["data"]["result"][0]["value"][1]) == 12
    assert chart.locator("svg path[data-series]").count() == 1
    # the emulator answers in milliseconds: every request in vLLM's first bucket (le=0.3 s),
    # which histogram_quantile interpolates to 150 ms (p50) and 285 ms (p95)
    latency = _until(page, LATENCY, lambda v: v.get("p50") is not None and v.get("p95") is not None)
    assert latency == {"p50": 150, "p95": 285}, latency
    legend = page.locator(f'figure[data-chart="{LATENCY}"] .chart-legend').inner_text()
    assert "p50: 150 ms" in legend and "p95: 285 ms" in legend

    page.goto(f"/#/clusters/{cluster}")
    heatmap = page.locator('figure[data-chart="GPU heatmap"]')
    expect(heatmap.locator("svg.heatmap")).to_be_visible(timeout=30_000)
    gpus = api.get(
        f"/api/v1/clusters/{cluster}/metrics/query",
        params={"query": "count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"},
    )
    assert gpus.status_code == 200, gpus.text
    listed = gpus.json()["data"]["result"]  # the nodes with GPUs
    assert int(heatmap.get_attribute("data-nodes") or 0) == len(listed) >= 1
    assert heatmap.locator("svg.heatmap rect").count() >= len(listed)
    assert "80-100 %" in heatmap.locator(".chart-legend").inner_text()
    label = heatmap.locator("svg.heatmap").get_attribute("aria-label") or ""
    assert label.startswith("GPU utilization per node over the last 15m:"), label
    heatmap.locator("summary", has_text="As a table").click()
    assert heatmap.locator("table tbody tr").count() == len(listed)
    violations = axe_violations(page)
    assert not violations, violations
