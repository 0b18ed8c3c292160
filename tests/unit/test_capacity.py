"""Capacity now, computed from Nodes and Pods as the API serves them (cluster_svc.domain.capacity)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from cluster_svc.domain import capacity
from cluster_svc.domain.capacity import (
    GROUP_LABEL,
    HEALTH_LABEL,
    pod_requests,
    quantity,
    summarize,
    unreadable,
)
from cluster_svc.domain.prices import PriceTable
from shared.contracts.capacity import (
    Amount,
    ClusterCapacity,
    ClusterSummary,
    FleetCapacity,
    PriceSource,
)

GI = 2**30
LIST_PRICE_PER_HOUR = {"ml.p5.48xlarge": 113.068, "ml.g5.8xlarge": 3.06}
PRICES = PriceTable(
    PriceSource(source="a table of the test", as_of=date(2026, 11, 20), region="us-east-1"),
    LIST_PRICE_PER_HOUR,
)


def cluster_capacity(
    cluster: str, nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]]
) -> ClusterCapacity:
    return capacity.cluster_capacity(cluster, nodes, pods, PRICES)


def fleet(clusters: Iterable[ClusterSummary]) -> FleetCapacity:
    return capacity.fleet(clusters, PRICES)


def node(
    name: str,
    group: str = "gpu",
    instance_type: str = "ml.p5.48xlarge",
    gpus: int = 8,
    efa: int = 32,
    memory: str = "2048Gi",
    ready: bool = True,
    health: str = "Schedulable",
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": "191910m", "memory": memory, "pods": "737"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    if efa:
        allocatable["vpc.amazonaws.com/efa"] = str(efa)
    spec: dict[str, Any] = {"providerID": f"aws:///us-east-1a/i-0{name.encode().hex()[:12]}"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {
            "name": name,
            "labels": {
                GROUP_LABEL: group,
                HEALTH_LABEL: health,
                "node.kubernetes.io/instance-type": instance_type,
            },
        },
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    on: str | None = None,
    gpus: int = 0,
    memory: str | None = None,
    efa: int = 0,
    phase: str | None = None,
    group: str | None = None,
    limits_only: bool = False,
) -> dict[str, Any]:
    wanted: dict[str, str] = {}
    if gpus:
        wanted["nvidia.com/gpu"] = str(gpus)
    if efa:
        wanted["vpc.amazonaws.com/efa"] = str(efa)
    if memory:
        wanted["memory"] = memory
    resources = {"limits": wanted} if limits_only else {"requests": wanted, "limits": wanted}
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if on:
        spec["nodeName"] = on
    if group:
        spec["nodeSelector"] = {GROUP_LABEL: group}
    status: dict[str, Any] = {"phase": phase or ("Running" if on else "Pending")}
    if not on:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
            }
        ]
    return {"metadata": {"name": name, "namespace": "team-a"}, "spec": spec, "status": status}


def test_quantities_parse_as_kubernetes_writes_them() -> None:
    assert quantity("8") == 8
    assert quantity("2048Gi") == 2048 * GI
    assert quantity("500M") == 500 * 10**6
    assert quantity("1e9") == 10**9
    assert quantity("100m") == Decimal("0.1")
    assert quantity("1.5Gi") == Decimal(3 * 2**29)
    with pytest.raises(ValueError):
        quantity("eight")


def test_a_pods_request_is_what_the_scheduler_counts() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"nvidia.com/gpu": "2", "memory": "1Gi"}}},
            {"resources": {"limits": {"nvidia.com/gpu": "1"}}},  # limit only: the request
        ],
        "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}],
        "overhead": {"memory": "1Gi"},
    }
    wanted = pod_requests(spec)
    assert wanted["nvidia.com/gpu"] == 4  # the init container asks more than the sum (3)
    assert wanted["memory"] == 2 * GI


def test_mixed_pods_on_two_nodes_and_pending() -> None:
    nodes = [node("a"), node("b")]
    pods = [
        pod("a1", on="a", gpus=4, memory="100Gi", efa=16),
        pod("a2", on="a", gpus=2, memory="50Gi", limits_only=True),
        pod("b1", on="b", gpus=8, memory="1Ti", efa=32),
        pod("done", on="a", gpus=8, phase="Succeeded"),  # terminated: frees its GPUs
        pod("failed", on="b", gpus=8, phase="Failed"),
        pod("cpu", on="a", memory="1Gi"),
        pod("wait1", gpus=8, group="gpu", efa=32),
        pod("wait2", gpus=4),
        pod("elsewhere", on="system-node", gpus=1),  # bound to a node that is not HyperPod's
    ]
    cap = cluster_capacity("c1", nodes, pods)
    a, b = cap.nodes
    assert a.name == "a" and a.resources.gpus == Amount(total=8, allocated=6, free=2)
    assert a.resources.efa == Amount(total=32, allocated=16, free=16)
    assert a.resources.memory_bytes == Amount.of(2048 * GI, 151 * GI)
    assert a.pods == 3
    assert b.resources.gpus == Amount(total=8, allocated=8, free=0)
    assert b.resources.memory_bytes.allocated == 1024 * GI
    (group,) = cap.groups
    assert group.name == "gpu" and group.nodes == 2 and group.schedulable_nodes == 2
    assert group.resources.gpus == Amount(total=16, allocated=14, free=2)
    assert cap.resources == group.resources
    assert [(p.name, p.gpus, p.efa, p.instance_group) for p in cap.pending] == [
        ("wait1", 8, 32, "gpu"),
        ("wait2", 4, 0, None),
    ]
    assert cap.pending[0].reason == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    price = LIST_PRICE_PER_HOUR["ml.p5.48xlarge"]
    assert group.price_per_node_hour == price
    assert group.cost_per_hour == cap.cost_per_hour == round(2 * price, 4)
    assert cap.unpriced_instance_types == []
    assert cap.prices == PRICES.source


def test_unschedulable_and_unhealthy_nodes_say_why() -> None:
    taint = {"key": HEALTH_LABEL, "value": "Unschedulable", "effect": "NoSchedule"}
    nodes = [
        node("ok"),
        node("cordoned", unschedulable=True),
        node("down", ready=False),
        node("faulty", health="UnschedulablePendingReboot", taints=[taint]),
    ]
    views = {n.name: n for n in cluster_capacity("c1", nodes, []).nodes}
    assert views["ok"].schedulable and views["ok"].healthy and views["ok"].reasons == []
    assert not views["cordoned"].schedulable and views["cordoned"].healthy
    assert views["cordoned"].reasons == ["cordoned"]
    assert not views["down"].schedulable and not views["down"].healthy
    assert views["down"].reasons == ["not Ready"]
    assert not views["faulty"].schedulable and not views["faulty"].healthy
    assert views["faulty"].reasons == [
        f"tainted {HEALTH_LABEL}=Unschedulable",
        "health label UnschedulablePendingReboot",
    ]


def test_groups_are_priced_per_node_and_unknown_types_are_unpriced() -> None:
    nodes = [
        node("g1", group="small", instance_type="ml.g5.8xlarge", gpus=1, efa=1, memory="128Gi"),
        node("g2", group="small", instance_type="ml.g5.8xlarge", gpus=1, efa=1, memory="128Gi"),
        node("x1", group="odd", instance_type="ml.x99.huge", gpus=0, efa=0, memory="8Gi"),
    ]
    cap = cluster_capacity("c1", nodes, [])
    odd, small = cap.groups
    assert small.cost_per_hour == round(2 * LIST_PRICE_PER_HOUR["ml.g5.8xlarge"], 4)
    assert odd.price_per_node_hour is None and odd.cost_per_hour is None
    assert cap.cost_per_hour == small.cost_per_hour
    assert cap.unpriced_instance_types == ["ml.x99.huge"]
    assert PRICES.instance("g5.8xlarge") == PRICES.instance("ml.g5.8xlarge") == 3.06


def test_hundreds_of_pods_add_up_exactly() -> None:
    nodes = [node(f"n{i:02d}", group=f"g{i % 3}") for i in range(12)]
    pods = [pod(f"p{i:03d}", on=f"n{i % 12:02d}", gpus=1, memory="3Gi") for i in range(80)]
    pods += [pod(f"q{i:03d}", gpus=2) for i in range(300)]
    cap = cluster_capacity("c1", nodes, pods)
    assert cap.resources.gpus == Amount(total=96, allocated=80, free=16)
    assert cap.resources.memory_bytes.allocated == 80 * 3 * GI
    assert sum(n.pods for n in cap.nodes) == 80
    assert len(cap.pending) == 300 and sum(p.gpus for p in cap.pending) == 600
    assert [g.resources.gpus.allocated for g in cap.groups] == [27, 27, 26]


def test_the_fleet_sums_the_readable_clusters() -> None:
    one = summarize(cluster_capacity("one", [node("a")], [pod("x", on="a", gpus=3)]))
    two = summarize(cluster_capacity("two", [node("b"), node("c")], [pod("y", gpus=8)]))
    view = fleet([two, unreadable("three", "EKS cluster three does not exist"), one])
    assert [c.cluster for c in view.clusters] == ["one", "three", "two"]
    assert view.resources.gpus == Amount(total=24, allocated=3, free=21)
    assert view.pending_pods == 1
    assert view.cost_per_hour == round(one.cost_per_hour + two.cost_per_hour, 4)
    three = view.clusters[1]
    assert not three.readable and three.error == "EKS cluster three does not exist"
    assert two.pending_gpus == 8 and two.nodes == 2


def test_jobs_and_teams_cost_their_share_of_the_nodes_for_their_running_time() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)

    def running(
        name: str, gpus: int, ns: str, job: str | None, hours: float, memory: str | None = None
    ) -> dict[str, Any]:
        made = pod(name, on="a", gpus=gpus, memory=memory)
        made["metadata"]["namespace"] = ns
        if job:
            made["metadata"]["labels"] = {capacity.JOB_LABEL: job}
        made["status"]["phase"] = "Running"
        made["status"]["startTime"] = (now - timedelta(hours=hours)).isoformat()
        return made

    nodes = [node("a", gpus=8)]  # ml.p5.48xlarge at 113.068/h
    pods = [
        running("w0", 4, "hyperpod-ns-team-a", "llama", 2),
        running("w1", 2, "hyperpod-ns-team-a", "llama", 1),
        running("solo", 2, "hyperpod-ns-team-b", None, 3),
        running("cpu", 0, "default", "cpu-only", 1, "64Gi"),  # no GPUs: its memory's share
    ]
    cap = capacity.cluster_capacity("c1", nodes, pods, PRICES, now)
    jobs = {j.name: j for j in cap.jobs}
    hour = 113.068
    assert jobs["llama"].pods == 2 and jobs["llama"].cost_per_hour == round(6 / 8 * hour, 4)
    assert jobs["llama"].running_hours == 2.0
    assert jobs["llama"].cost_so_far == round(4 / 8 * hour * 2 + 2 / 8 * hour * 1, 4)
    assert jobs["cpu-only"].cost_per_hour == round(64 / 2048 * hour, 4)
    teams = {t.name: t for t in cap.teams}
    assert sorted(teams) == ["team-a", "team-b"]
    assert teams["team-a"].cost_so_far == jobs["llama"].cost_so_far
    assert teams["team-b"].cost_so_far == round(2 / 8 * hour * 3, 4)
    assert capacity.cluster_capacity("c1", nodes, pods, PRICES).jobs == []  # no clock, no cost


def test_a_finished_pod_still_on_the_cluster_keeps_what_it_cost() -> None:
    """A job whose pods finished still costs the time they ran (startTime to the containers'
    finishedAt), and nothing by the hour; a finished pod with no end time counts nothing."""
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)
    done = pod("d0", on="a", gpus=4)
    done["metadata"]["labels"] = {capacity.JOB_LABEL: "pretrain"}
    done["status"] = {
        "phase": "Succeeded",
        "startTime": (now - timedelta(hours=3)).isoformat(),
        "containerStatuses": [
            {"state": {"terminated": {"finishedAt": (now - timedelta(hours=1)).isoformat()}}}
        ],
    }
    lost = pod("d1", on="a", gpus=4)
    lost["metadata"]["labels"] = {capacity.JOB_LABEL: "lost"}
    lost["status"] = {"phase": "Failed", "startTime": now.isoformat()}
    cap = capacity.cluster_capacity("c1", [node("a", gpus=8)], [done, lost], PRICES, now)
    (job,) = cap.jobs
    hour = 113.068
    assert job.name == "pretrain" and job.pods == 0 and job.cost_per_hour == 0.0
    assert job.running_hours == 2.0 and job.cost_so_far == round(4 / 8 * hour * 2, 4)
    assert cap.resources.gpus.allocated == 0  # finished pods hold no GPUs
