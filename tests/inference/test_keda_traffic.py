"""The simulated Prometheus behind KEDA's rate triggers: requests the proxy handed to pods,
counted per second over the query's window, for the pods its matchers select."""

from __future__ import annotations

from typing import Any

from sim.k8s.operators.traffic import Traffic


def pod(name: str, endpoint: str, role: str = "worker", namespace: str = "default") -> Any:
    labels = {"hyperpilot.dev/endpoint": endpoint, "hyperpilot.dev/role": role}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_a_rate_query_counts_the_selected_pods_requests_in_its_window() -> None:
    traffic = Traffic()
    for second in range(10):
        traffic.record(pod("chat-a", "chat"), at=100.0 + second)
        traffic.record(pod("chat-b", "chat"), at=100.0 + second)
    traffic.record(pod("other-a", "other"), at=105.0)
    traffic.record(pod("chat-c", "chat", namespace="team"), at=105.0)
    query = 'sum(rate(vllm:request_success_total{namespace="default",endpoint="chat"}[10s]))'
    assert traffic.rate(query, now=110.0) == 2.0
    assert traffic.rate(query.replace("[10s]", "[1m]"), now=110.0) == 20 / 60
    # Half the window has passed since the last request: half the requests remain in it.
    assert traffic.rate(query, now=114.5) == 10 / 10
    assert traffic.rate(query, now=200.0) == 0.0
    assert traffic.rate('rate(x_total{pod=~"chat-a|other-a"}[10s])', now=110.0) == 1.1
    assert traffic.rate('sum(rate(x_total{endpoint!="chat"}[10s]))', now=110.0) == 0.1
    assert traffic.rate('sum(rate(x_total{role="router"}[10s]))', now=110.0) == 0.0


def test_other_queries_are_not_answered() -> None:
    traffic = Traffic()
    assert traffic.rate('sum(vllm:num_requests_waiting{namespace="default"})') is None
    assert traffic.rate("sum(rate(requests[1m]))") is None
