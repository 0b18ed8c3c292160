"""The node watcher's recording against PostgreSQL: a baseline, then one event per change, once
even when two watchers (two replicas) record the same observation at once."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from cluster_svc.domain.nodes.health import NodeInstance, health_view
from cluster_svc.records import record_nodes as record
from tests.nodes.fakes import nid


def view(i: int, status: str = "Running", logical: str | None = None) -> dict[str, Any]:
    node = NodeInstance(nid(i), "gpu", "ml.g5.8xlarge", status, logical_id=logical or f"gpu-{i}")
    return health_view(node, None, "Automatic", kube_readable=False)


async def _events(pool: asyncpg.Pool) -> list[tuple[str, dict[str, Any]]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT type, payload, operation_id, principal FROM events ORDER BY seq"
        )
    assert all(r["operation_id"] is None and r["principal"] == "cluster-svc" for r in rows)
    return [(r["type"], r["payload"]) for r in rows]


async def test_baseline_then_failure_then_replacement(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO clusters (name, region, status, managed) VALUES ('c1', 'us-east-1',"
            " 'active', true)"
        )
    assert await record(pool, "c1", [view(1), view(2)]) == 0  # the baseline reports nothing
    assert await record(pool, "c1", [view(1), view(2)]) == 0
    assert await record(pool, "c1", [view(1, "Failure"), view(2)]) == 2
    replaced = [view(9, "Running", logical="gpu-1"), view(2)]
    results = await asyncio.gather(record(pool, "c1", replaced), record(pool, "c1", replaced))
    assert sorted(results) == [0, 1]  # two watchers, one report
    events = await _events(pool)
    assert [t for t, _ in events] == ["NodeStatusChanged", "NodeFailed", "NodeReplaced"]
    assert events[2][1]["old_node_id"] == nid(1) and events[2][1]["new_node_id"] == nid(9)
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT node_id, health, view FROM cluster_nodes WHERE cluster = 'c1' ORDER BY node_id"
        )
        await conn.execute("DELETE FROM clusters WHERE name = 'c1'")
        left = await conn.fetchval("SELECT count(*) FROM cluster_nodes")
    assert [r["node_id"] for r in rows] == [nid(2), nid(9)]
    assert rows[1]["view"]["logical_id"] == "gpu-1"
    assert left == 0  # forgetting the cluster forgets its nodes
