"""Why are an endpoint's pods pending? (pure): a self-managed endpoint's workers' Deployment is
queued by Kueue pod by pod, so its answer comes from the Workload of one of its pods, a waiting
one first, joined with the team's quota as a job's is."""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.governance.pending import JobRef, PendingFacts, explain, workload_of
from tests.unit.test_governance import P5, _queue, _workload

NS = "hyperpod-ns-team-a"
REF = JobRef("llm", "chat", NS, "Deployment", "apps/v1")
DEPLOYMENT = {
    "metadata": {"name": "chat", "namespace": NS, "uid": "uid-chat", "labels": {}},
    "spec": {"selector": {"matchLabels": {"app": "chat"}}},
}
MESSAGE = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in"
    f" flavor {P5}, 4 more needed"
)


def pod(name: str, app: str = "chat", ns: str = NS) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": {"app": app}}
    }


def pod_workload(pod_name: str, admitted: bool, created: str) -> dict[str, Any]:
    wl = _workload(f"pod-{pod_name}-1a2b3", NS, pod_name, 4, "training-priority", admitted, MESSAGE)
    wl["metadata"]["ownerReferences"] = [
        {"kind": "Pod", "name": pod_name, "uid": f"uid-{pod_name}"}
    ]
    wl["metadata"]["creationTimestamp"] = created
    return wl


def test_the_waiting_pod_s_workload_answers_for_the_deployment() -> None:
    workloads = [
        pod_workload("chat-a", True, "2026-12-01T10:00:00Z"),
        pod_workload("chat-b", False, "2026-12-01T10:00:01Z"),
        pod_workload("other-x", False, "2026-12-01T09:00:00Z"),  # another app's pod
    ]
    pods = [pod("chat-a"), pod("chat-b"), pod("other-x", app="other")]
    found = workload_of(REF, DEPLOYMENT, workloads, pods)
    assert found is not None and found["metadata"]["name"] == "pod-chat-b-1a2b3"
    facts = PendingFacts(
        job=DEPLOYMENT,
        workloads=workloads,
        cluster_queues=[_queue("team-a", 8, 8, 0), _queue("team-b", 8, 0, 0)],
        priority_classes={"inference-priority": 100, "training-priority": 50},
        quotas={},
        capacity=None,
        pods=pods,
    )
    answer = explain(REF, facts)
    assert answer.pending and answer.reason == "quota"
    assert answer.summary.startswith(
        f"team team-a is at its quota of 8 {P5} GPUs (8 in use; this job asks 4)"
    )
    assert "team team-b lends 8 idle" in answer.summary


def test_a_deployment_whose_pods_are_all_admitted_is_not_waiting_on_kueue() -> None:
    workloads = [pod_workload("chat-a", True, "2026-12-01T10:00:00Z")]
    found = workload_of(REF, DEPLOYMENT, workloads, [pod("chat-a")])
    assert found is not None and found["metadata"]["name"] == "pod-chat-a-1a2b3"
    # pods of a same-named app in another namespace are not its pods
    assert workload_of(REF, DEPLOYMENT, workloads, [pod("chat-a", ns="default")]) is None


def test_a_team_at_its_borrowing_limit_names_its_quota_and_flavor_with_dots() -> None:
    """Kueue says "borrowing limit for nvidia.com/gpu in flavor ml.p5.48xlarge exceeded": the
    flavor is the whole instance type, not "ml"."""
    message = (
        "couldn't assign flavors to pod set main: borrowing limit for nvidia.com/gpu in flavor"
        f" {P5} exceeded"
    )
    wl = _workload("pod-chat-b-1a2b3", NS, "chat-b", 4, "training-priority", False, message)
    wl["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "chat-b", "uid": "uid-chat-b"}]
    wl["metadata"]["creationTimestamp"] = "2026-12-01T10:00:01Z"
    facts = PendingFacts(
        job=DEPLOYMENT,
        workloads=[wl],
        cluster_queues=[_queue("team-a", 8, 8, 0), _queue("team-b", 8, 0, 0)],
        priority_classes={"training-priority": 50},
        quotas={},
        capacity=None,
        pods=[pod("chat-b")],
    )
    answer = explain(REF, facts)
    assert answer.pending and answer.reason == "quota", answer
    assert f"quota of 8 {P5} GPUs" in answer.summary, answer.summary
