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


def test_an_sglang_server_counts_them_under_sglangs_names(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    """SGLang's own metric names (its docs/references/production_metrics.md), parsed with
    prometheus_client's parser: the requests it answered, their latency, none running."""
    from prometheus_client.parser import text_string_to_metric_families

    from sim.k8s.serving_metrics import SGLANG_LATENCY_BUCKETS

    cluster.sync_nodes([_node(8, "ml.g5.xlarge")])
    server: dict[str, Any] = {
        "metadata": {"name": "sglang-m", "labels": {"app": "sglang"}},
        "spec": {
            "nodeName": _name(8),
            "containers": [
                {
                    "name": "server",
                    "image": "lmsysorg/sglang:v0.4.6",
                    "command": ["python3", "-m", "sglang.launch_server"],
                    "args": ["--model-path", "Qwen/Qwen3-0.6B", "--port", "30000"],
                    "ports": [{"containerPort": 30000}],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    core.create_namespaced_pod("default", server)  # type: ignore[arg-type]
    eventually(
        lambda: (
            getattr(core.read_namespaced_pod("sglang-m", "default").status, "phase", None)
            == "Running"
        )
    )
    prefix = "/api/v1/namespaces/default/pods/sglang-m:30000/proxy"
    for _ in range(3):
        status, _ = _admin(cluster, f"{prefix}/v1/completions", {"prompt": "hi"})
        assert status == 200
    text: str = core.connect_get_namespaced_pod_proxy_with_path(
        "sglang-m:30000", "default", "metrics"
    )
    assert "vllm:" not in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["sglang:num_requests"].type == "counter"
    assert families["sglang:e2e_request_latency_seconds"].type == "histogram"
    samples = {
        (s.name, s.labels.get("le")): (s.value, s.labels["model_name"])
        for f in families.values()
        for s in f.samples
    }
    assert samples[("sglang:num_requests_total", None)] == (3, "Qwen/Qwen3-0.6B")
    assert samples[("sglang:num_running_reqs", None)][0] == 0
    assert samples[("sglang:num_queue_reqs", None)][0] == 0
    latency = "sglang:e2e_request_latency_seconds"
    assert samples[(f"{latency}_count", None)][0] == 3
    assert [le for name, le in samples if name == f"{latency}_bucket"] == [
        *(str(b) for b in SGLANG_LATENCY_BUCKETS),
        "+Inf",
    ]
    assert samples[(f"{latency}_bucket", "0.3")][0] == 3
    core.delete_namespaced_pod("sglang-m", "default", grace_period_seconds=0)
