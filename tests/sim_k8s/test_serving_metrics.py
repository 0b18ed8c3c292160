"""A simulated vLLM server's request metrics, scraped as Prometheus scrapes vLLM (its API port,
`/metrics`, through the API server's pod proxy with the official client): the counts equal the
inference requests it answered."""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client

from sim.k8s import ApiServer
from sim.k8s.serving_metrics import LATENCY_BUCKETS
from tests.sim_k8s.conftest import eventually
from tests.sim_k8s.test_telemetry import _admin, _name, _node

LATENCY = "vllm:e2e_request_latency_seconds"


def _metrics(core: client.CoreV1Api) -> dict[str, float]:
    """`name{labels}` -> value of the server's `/metrics`."""
    text: str = core.connect_get_namespaced_pod_proxy_with_path("vllm-m:8000", "default", "metrics")
    assert "# TYPE vllm:request_success_total counter" in text
    assert f"# TYPE {LATENCY} histogram" in text
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            found[series] = float(value)
    return found


def test_a_vllm_server_counts_the_requests_it_answered(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.sync_nodes([_node(7, "ml.g5.xlarge")])
    server: dict[str, Any] = {
        "metadata": {"name": "vllm-m", "labels": {"app": "vllm"}},
        "spec": {
            "nodeName": _name(7),
            "containers": [
                {
                    "name": "server",
                    "image": "vllm/vllm-openai:v0.8.5",
                    "args": ["--model", "Qwen/Qwen2.5-0.5B", "--served-model-name", "qwen"],
                    "ports": [{"containerPort": 8000}],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    core.create_namespaced_pod("default", server)  # type: ignore[arg-type]
    eventually(
        lambda: (
            getattr(core.read_namespaced_pod("vllm-m", "default").status, "phase", None)
            == "Running"
        )
    )
    base = 'model_name="qwen"'
    before = _metrics(core)
    assert before[f'vllm:request_success_total{{finished_reason="stop",{base}}}'] == 0
    assert before[f"vllm:num_requests_running{{{base}}}"] == 0
    assert before[f"{LATENCY}_count{{{base}}}"] == 0
    prefix = "/api/v1/namespaces/default/pods/vllm-m:8000/proxy"
    for _ in range(4):
        status, _ = _admin(cluster, f"{prefix}/v1/completions", {"prompt": "hi"})
        assert status == 200
    status, _ = _admin(
        cluster, f"{prefix}/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}
    )
    assert status == 200
    status, _ = _admin(cluster, f"{prefix}/v1/embeddings-nowhere", {"input": "x"})
    assert status == 404  # not an inference request: counted nowhere
    after = _metrics(core)
    assert after[f'vllm:request_success_total{{finished_reason="stop",{base}}}'] == 5
    assert after[f"{LATENCY}_count{{{base}}}"] == 5
    assert after[f'{LATENCY}_bucket{{le="+Inf",{base}}}'] == 5
    # cumulative buckets: the emulator answers in well under 0.3 s
    for bound in LATENCY_BUCKETS:
        assert after[f'{LATENCY}_bucket{{le="{bound}",{base}}}'] == 5
    assert 0 < after[f"{LATENCY}_sum{{{base}}}"] < 5 * 0.3
    assert after[f"vllm:num_requests_running{{{base}}}"] == 0
    assert all(re.fullmatch(r"vllm:[a-z0-9_]+\{.*\}", series) for series in after)
    core.delete_namespaced_pod("vllm-m", "default", grace_period_seconds=0)
