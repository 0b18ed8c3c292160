"""The node watcher's AWS spending against the simulator and PostgreSQL: a full read first, then
one ListClusterEvents call a round while the cluster is idle, a full read again when HyperPod
records an event (a node failing) or the resync is due, and nothing at all once the cluster's
declared budget for the hour is spent. While node health events flow (EventBridge to the
control plane's SQS queue), an event has its cluster read at once and the checks are sparse."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import asyncpg
import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.aws_events import EventQueue
from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.areas.nodes import NodeWatcher
from shared.aws_budget import WatchBudget, figures
from shared.wake import ClusterSignals, node_health_clusters
from sim.aws import SimulatedAws
from sim.testing import inject_fault
from tests.nodes.conftest import NODE_COUNT, HyperPodCluster


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def counted(sim: SimulatedAws) -> tuple[HyperPodNodes, Counter[str]]:
    aws = AwsClients("us-east-1", sim.endpoint_url)
    calls: Counter[str] = Counter()

    def before_send(event_name: str, **_: Any) -> None:
        calls[event_name.rsplit(".", 1)[-1]] += 1

    aws.client("sagemaker").meta.events.register("before-send", before_send)
    return HyperPodNodes(aws, EksKubeFactory("us-east-1")), calls


async def _watched(
    pool: asyncpg.Pool, hyperpod: HyperPodCluster, port: HyperPodNodes | None = None
) -> None:
    """The cluster as the watcher finds it: with its Kubernetes API when `port` is given."""
    access = await port.eks_access(hyperpod.name) if port is not None else None
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO clusters (name, region, status, managed, hyperpod_cluster_arn,"
            " eks_cluster_arn, endpoint, ca_data) VALUES ('w1', 'us-east-1', 'active', true,"
            " $1, $2, $3, $4)",
            hyperpod.arn,
            hyperpod.eks["arn"] if access else None,
            access.endpoint if access else None,
            access.ca_data if access else None,
        )


async def test_an_idle_cluster_costs_one_call_a_round_and_an_event_reads_it_again(
    pool: asyncpg.Pool,
    sim: SimulatedAws,
    hyperpod: HyperPodCluster,
    counted: tuple[HyperPodNodes, Counter[str]],
) -> None:
    port, calls = counted
    await _watched(pool, hyperpod)
    clock = Clock()
    watcher = NodeWatcher(
        pool, port, WatchBudget(pool, "nodes", per_hour=3600.0, burst=20.0), clock=clock
    )

    await watcher.once()
    assert calls == {"ListClusterEvents": 1, "ListClusterNodes": 1, "DescribeCluster": 1}
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM cluster_nodes WHERE cluster = 'w1'") == (
            NODE_COUNT
        )

    calls.clear()
    for _ in range(5):
        clock.now += 5
        await watcher.once()
    assert calls == {"ListClusterEvents": 5}  # idle: the newest event only

    victim = watcher.clusters["w1"].instances[-1].node_id
    with inject_fault(sim, "node_failure", cluster=hyperpod.arn, node_ids=[victim]):
        pass
    calls.clear()
    clock.now += 5
    assert await watcher.once() >= 1  # the failure reported in the round that saw its event
    assert calls == {"ListClusterEvents": 2, "ListClusterNodes": 1, "DescribeCluster": 1}
    async with pool.acquire() as conn:
        status = await conn.fetchval(
            "SELECT instance_status FROM cluster_nodes WHERE cluster = 'w1' AND node_id = $1",
            victim,
        )
        reported = await conn.fetch("SELECT type FROM events WHERE type = 'NodeFailed'")
    assert status == "Failure" and len(reported) == 1

    calls.clear()
    clock.now += 600  # the resync: a full read though nothing was reported
    await watcher.once()
    assert calls["ListClusterNodes"] == 1
    [spent] = await figures(pool, "watch:nodes:")
    assert spent.key == "watch:nodes:w1" and spent.calls == 3 + 5 + 4 + 3


async def test_a_spent_budget_leaves_the_cluster_as_last_read(
    pool: asyncpg.Pool, hyperpod: HyperPodCluster, counted: tuple[HyperPodNodes, Counter[str]]
) -> None:
    port, calls = counted
    await _watched(pool, hyperpod)
    clock = Clock()
    # 3 calls of burst: the first full read, then nothing for the hour's refill (1 call/20 min).
    watcher = NodeWatcher(
        pool, port, WatchBudget(pool, "nodes", per_hour=3.0, burst=3.0), clock=clock
    )
    await watcher.once()
    assert sum(calls.values()) == 3
    calls.clear()
    for _ in range(10):
        clock.now += 5
        await watcher.once()
    assert sum(calls.values()) == 0
    async with pool.acquire() as conn:
        kept = await conn.fetchval("SELECT count(*) FROM cluster_nodes WHERE cluster = 'w1'")
    assert kept == NODE_COUNT


async def test_a_deleted_node_is_seen_through_kubernetes_and_polled_until_gone(
    pool: asyncpg.Pool, hyperpod: HyperPodCluster, counted: tuple[HyperPodNodes, Counter[str]]
) -> None:
    port, calls = counted
    await _watched(pool, hyperpod, port)
    watcher = NodeWatcher(pool, port, WatchBudget(pool, "nodes", per_hour=36000.0, burst=50.0))
    await watcher.once()
    calls.clear()
    await watcher.once()
    assert calls == {"ListClusterEvents": 1}  # settled: the event check only
    victim = watcher.clusters["w1"].instances[0].node_id
    answer = await port.batch("delete", hyperpod.arn, [victim])
    assert answer.successful == [victim]
    # HyperPod records no event for a delete: the node leaving Kubernetes (or the resync)
    # makes the watcher read again, and the node ShuttingDown keeps it reading until it is gone.
    async with pool.acquire() as conn:
        for _ in range(100):
            await watcher.once()
            removed = await conn.fetchval(
                "SELECT count(*) FROM events WHERE type = 'NodeRemoved'"
                " AND payload->>'node_id' = $1",
                victim,
            )
            if removed:
                break
            await asyncio.sleep(0.1)
    assert removed == 1
    calls.clear()
    await watcher.once()
    assert calls == {"ListClusterEvents": 1}  # settled again


async def test_a_new_event_is_read_on_credit_then_the_debt_is_waited_out(
    pool: asyncpg.Pool,
    sim: SimulatedAws,
    hyperpod: HyperPodCluster,
    counted: tuple[HyperPodNodes, Counter[str]],
) -> None:
    port, calls = counted
    await _watched(pool, hyperpod)
    clock = Clock()
    # 4 calls of burst, 1 an hour of refill: the first read (3), one check left.
    budget = WatchBudget(pool, "nodes", per_hour=1.0, burst=4.0)
    watcher = NodeWatcher(pool, port, budget, clock=clock)
    await watcher.once()
    victim = watcher.clusters["w1"].instances[0].node_id
    with inject_fault(sim, "node_failure", cluster=hyperpod.arn, node_ids=[victim]):
        pass
    calls.clear()
    clock.now += 5
    assert await watcher.once() >= 1  # the check, then the read it found needed, on credit
    assert calls == {"ListClusterEvents": 2, "ListClusterNodes": 1, "DescribeCluster": 1}
    calls.clear()
    for _ in range(5):
        clock.now += 5
        await watcher.once()
    assert sum(calls.values()) == 0  # the debt: nothing until the refill has repaid it
    [spent] = await figures(pool, "watch:nodes:w1")
    assert spent.calls == 7 and spent.tokens < 0


async def test_a_node_health_event_has_its_cluster_read_at_once_and_idle_checks_wait(
    pool: asyncpg.Pool,
    sim: SimulatedAws,
    hyperpod: HyperPodCluster,
    counted: tuple[HyperPodNodes, Counter[str]],
) -> None:
    port, calls = counted
    await _watched(pool, hyperpod, port)
    # The control plane's queue and rule, as cluster-svc makes them; old messages dropped.
    queue = EventQueue(AwsClients("us-east-1", sim.endpoint_url), "us-east-1")
    await queue.ensure()
    while old := await queue.receive(wait=0):
        await queue.delete(old)
    signals = ClusterSignals()
    signals.live.add("us-east-1")  # the queue of the cluster's region is read
    clock = Clock()
    watcher = NodeWatcher(
        pool,
        port,
        WatchBudget(pool, "nodes", per_hour=36000.0, burst=50.0),
        clock=clock,
        signals=signals,
        quiet=60.0,
    )
    await watcher.once()
    calls.clear()
    for _ in range(5):
        clock.now += 5
        await watcher.once()
    assert calls == {}  # settled, events flowing: no AWS call for a minute
    clock.now += 40
    await watcher.once()
    assert calls == {"ListClusterEvents": 1}  # the fallback check

    # The watcher's own loop, its next pass an hour away: only the event can make it read.
    running = asyncio.create_task(watcher.run(3600.0))
    try:
        await asyncio.sleep(0.5)
        calls.clear()
        victim = next(i.node_id for i in watcher.clusters["w1"].instances if i.status == "Running")
        with inject_fault(sim, "node_failure", cluster=hyperpod.arn, node_ids=[victim]):
            pass
        failed_at = time.monotonic()
        messages = await queue.receive(wait=5)
        signals.notify(c for m in messages for c in node_health_clusters(m.body))
        await queue.delete(messages)
        async with pool.acquire() as conn:
            while True:
                status = await conn.fetchval(
                    "SELECT instance_status FROM cluster_nodes"
                    " WHERE cluster = 'w1' AND node_id = $1",
                    victim,
                )
                if status == "Failure":
                    break
                assert time.monotonic() - failed_at < 2.0, status
                await asyncio.sleep(0.02)
            reported = await conn.fetchval(
                "SELECT count(*) FROM events WHERE type = 'NodeFailed' AND payload->>'node_id' = $1",
                victim,
            )
        assert reported == 1 and watcher.refreshed == 1
        # one full read, one call spent and the rest charged to the cluster's budget
        assert calls == {"ListClusterEvents": 1, "ListClusterNodes": 1, "DescribeCluster": 1}
    finally:
        running.cancel()


async def test_an_event_is_read_after_the_burst_is_spent_and_a_storm_waits_for_the_refill(
    pool: asyncpg.Pool,
    sim: SimulatedAws,
    hyperpod: HyperPodCluster,
    counted: tuple[HyperPodNodes, Counter[str]],
) -> None:
    """The default budget (30 calls an hour, a burst of 5): a create's and a scale-up's reads
    leave the cluster in debt, and the node failure that follows is still read at once, on
    credit down to one hour's budget; past that debt an event waits as a check would."""
    port, calls = counted
    await _watched(pool, hyperpod)
    budget = WatchBudget(pool, "nodes", per_hour=30.0)
    watcher = NodeWatcher(pool, port, budget)
    await watcher.once()  # the first read: 3 of the burst's 5
    await budget.charge("w1", 10.0)  # the reads of a create and a scale-up: 8 in debt
    victim = watcher.clusters["w1"].instances[0].node_id
    with inject_fault(sim, "node_failure", cluster=hyperpod.arn, node_ids=[victim]):
        pass
    calls.clear()
    await watcher.refresh({hyperpod.arn})
    seen = {i.node_id: i.status for i in watcher.clusters["w1"].instances}
    assert seen[victim] == "Failure"
    assert calls == {"ListClusterEvents": 1, "ListClusterNodes": 1, "DescribeCluster": 1}
    [spent] = await figures(pool, "watch:nodes:w1")
    assert -12.0 < spent.tokens < -10.0  # 11 in debt, less the refill of these seconds

    await budget.charge("w1", 18.0)  # 29 in debt: a read more would go past an hour's budget
    calls.clear()
    assert await watcher.refresh({hyperpod.arn}) == 0
    assert calls == {}
    assert watcher.clusters["w1"].changed  # read once the refill allows
