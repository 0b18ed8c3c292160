"""Shared helpers of the integration tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import nats

from shared.contracts.commands import CreateStorageBucket
from shared.operations import create_operation
from shared.stages import Delivery


async def new_operation(
    pool: asyncpg.Pool, name: str = "bucket-a", key: str | None = None
) -> uuid.UUID:
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            CreateStorageBucket(name=name, region="us-east-1"),
            target_type="bucket",
            target_id=name,
            request={"name": name},
            principal="tester",
            source="rest",
            idempotency_key=key,
        )
    return accepted.operation_id


def delivery() -> Delivery:
    return Delivery(consumer="test", message_id=uuid.uuid4(), principal="tester", source="rest")


async def events_of(pool: asyncpg.Pool, operation_id: uuid.UUID) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT seq, type, payload FROM events WHERE operation_id = $1 ORDER BY seq",
            operation_id,
        )
    return [{"seq": r["seq"], "type": r["type"], **r["payload"]} for r in rows]


async def stage_rows(pool: asyncpg.Pool, operation_id: uuid.UUID) -> dict[str, asyncpg.Record]:
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT * FROM stages WHERE operation_id = $1", operation_id)
    return {r["name"]: r for r in rows}


async def stream_messages(url: str, stream: str) -> int:
    """How many messages a JetStream stream holds."""
    nc = await nats.connect(url)
    try:
        return int((await nc.jetstream().stream_info(stream)).state.messages)
    finally:
        await nc.close()


async def outbox_count(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM outbox"))


async def outbox_drained(pool: asyncpg.Pool, seconds: float = 15) -> bool:
    """Whether the outbox becomes empty within `seconds`."""
    for _ in range(int(seconds / 0.02)):
        if await outbox_count(pool) == 0:
            return True
        await asyncio.sleep(0.02)
    return False


class SecondRead:
    """Stands in for the read of a loop that waits for wake-ups (a relay's drain, a live
    stream's fan-out): its first call runs `wake`, as a notification arriving in the middle of
    the read would; `again` is set when the loop reads a second time."""

    def __init__(self, wake: Callable[[], None], result: Any = None) -> None:
        self.wake = wake
        self.result = result
        self.calls = 0
        self.again = asyncio.Event()

    async def __call__(self) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.wake()
        else:
            self.again.set()
        return self.result


async def runs_again(loop: Awaitable[None], read: SecondRead) -> None:
    """Run `loop` until it reads a second time (10 s at most; its poll is set far longer)."""
    task = asyncio.ensure_future(loop)
    try:
        await asyncio.wait_for(read.again.wait(), 10)
    finally:
        task.cancel()
