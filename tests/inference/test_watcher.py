"""The endpoint status watcher on a real database with a fake cluster: an endpoint keeps being
watched through every status it passes (a lost replica reads as deploying) until it is back."""

from __future__ import annotations

from typing import Any

import asyncpg

from inference_svc.domain.status import Observed
from inference_svc.watcher import StatusWatcher

SPEC = {
    "name": "chat",
    "instance_type": "ml.g5.8xlarge",
    "gpus": 1,
    "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
}


class FakeClusters:
    def __init__(self) -> None:
        self.seen = Observed("available", 2, 2)

    async def observe(self, cluster: str, spec: Any) -> Observed:
        return self.seen


async def _statuses(pool: asyncpg.Pool) -> list[tuple[str, str]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT payload FROM events WHERE type = 'EndpointStatusChanged' ORDER BY seq"
        )
    return [(r["payload"]["previous"], r["payload"]["status"]) for r in rows]


async def test_an_endpoint_that_lost_a_replica_is_watched_until_it_is_available_again(
    pool: asyncpg.Pool,
) -> None:
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO endpoints (cluster, name, kind, spec, status, replicas, ready_replicas)"
            " VALUES ('c', 'chat', 'container', $1::jsonb, 'available', 2, 2)",
            SPEC,
        )
    clusters = FakeClusters()
    watcher = StatusWatcher(pool, clusters)  # type: ignore[arg-type]
    assert await watcher.once() == 0  # nothing changed

    clusters.seen = Observed("deploying", 2, 1, message="1/2 replicas available")
    assert await watcher.once() == 1
    clusters.seen = Observed("degraded", 2, 1, message="pod chat-1: ImagePullBackOff")
    assert await watcher.once() == 1
    clusters.seen = Observed("available", 2, 2)
    assert await watcher.once() == 1
    assert await _statuses(pool) == [
        ("available", "deploying"),
        ("deploying", "degraded"),
        ("degraded", "available"),
    ]


async def test_an_endpoint_is_in_progress_while_its_operation_is_pending_or_running(
    pool: asyncpg.Pool,
) -> None:
    from inference_svc.access import Clusters
    from tests.integration.helpers import new_operation

    operation_id = await new_operation(pool, "chat-op")
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO endpoints (cluster, name, kind, spec, status, replicas, operation_id)"
            " VALUES ('c', 'chat', 'container', $1::jsonb, 'deploying', 1, $2)",
            SPEC,
            operation_id,
        )
    clusters = Clusters(pool, kubes=None, endpoint=None)  # type: ignore[arg-type]
    assert await clusters.in_progress("c", "chat")  # pending
    async with pool.acquire() as conn:
        await conn.execute("UPDATE operations SET status = 'running' WHERE id = $1", operation_id)
    assert await clusters.in_progress("c", "chat")
    async with pool.acquire() as conn:
        await conn.execute("UPDATE operations SET status = 'succeeded' WHERE id = $1", operation_id)
    assert not await clusters.in_progress("c", "chat")
    assert not await clusters.in_progress("c", "unknown")
