"""Chromium follows an SGLang endpoint's request charts: its servers export SGLang's own metric
names (sglang:num_requests_total, sglang:e2e_request_latency_seconds, sglang:num_running_reqs),
the collector scrapes them, and the endpoint's page charts its ready replica, then its requests
a second and its latency after requests through the gateway; axe finds nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import RunningStack
from tests.e2e.test_features import _apply
from tests.e2e.test_inference import MODEL, _deploy, _instance_type
from tests.ui.helpers import axe_violations
from tests.ui.test_gpu_chart import _until

pytestmark = pytest.mark.slow


def test_an_sglang_endpoints_charts_read_sglangs_metrics(
    page: Any, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    _apply(stack, cluster, {"observability": True})
    _deploy(
        api,
        cluster,
        {
            "name": "sg",
            "instance_type": _instance_type(api, cluster),
            "gpus": 1,
            "service": "internal",
            "container": {"engine": "sglang", "model": MODEL},
        },
    )
    page.goto(f"/#/endpoints/{cluster}/sg")
    page.locator('figure[data-chart="Requests per second"]').scroll_into_view_if_needed()
    _until(page, "Ready replicas", lambda v: v.get("replicas") == 1)
    for _ in range(5):
        answer = api.post(
            "/api/v1/endpoints/sg/invoke",
            {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]},
            params={"cluster": cluster},
        )
        assert answer.status_code == 200, answer.text
    _until(page, "Requests per second", lambda v: (v.get("requests/s") or 0) > 0)
    served = api.get(
        f"/api/v1/clusters/{cluster}/metrics/query",
        params={"query": 'sum(increase(sglang:num_requests_total{endpoint="sg"}[5m]))'},
    ).json()
    assert float(served["data"]["result"][0]["value"][1]) == 5, served
    vllm = api.get(
        f"/api/v1/clusters/{cluster}/metrics/query",
        params={"query": 'vllm:num_requests_running{endpoint="sg"}'},
    ).json()
    assert vllm["data"]["result"] == []  # an SGLang server exports no vLLM names
    # every request in SGLang's first latency bucket (le=0.3 s): p50 150 ms, p95 285 ms
    latency = _until(
        page, "Request latency (ms)", lambda v: v.get("p50") is not None and v.get("p95")
    )
    assert latency == {"p50": 150, "p95": 285}, latency
    violations = axe_violations(page)
    assert violations == [], violations
