"""The gateway's accept queue writes through one dedicated PostgreSQL connection. When the
server ends that session mid-statement (PostgreSQL shut down or crashed: FATAL 57P01), the
request in flight gets the database-down error (a 503 with Retry-After at the gateway) and the
queue drops the connection, so the next accept opens a new one instead of failing on the old
one (a 500, seen in the failover test before the fix)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from gateway.accept import AcceptQueue
from shared.contracts.commands import CreateStorageBucket
from shared.db import CONNECTION_ERRORS
from shared.operations import NewOperation, new_operation

EVENT_ORDER_LOCK = 76374810195059  # shared/migrations: every event writer takes it


def _bucket(name: str) -> NewOperation:
    return new_operation(
        CreateStorageBucket(name=name, region="us-east-1"),
        target_type="bucket",
        target_id=name,
        request={"name": name},
        principal="tester",
        source="rest",
        idempotency_key=None,
    )


@pytest.fixture
async def queue(pool: asyncpg.Pool, database_url: str) -> AsyncIterator[AcceptQueue]:
    made = AcceptQueue(pool, database_url)
    yield made
    await made.close()


async def test_a_session_ended_mid_accept_is_a_database_error_and_the_next_accept_works(
    pool: asyncpg.Pool, queue: AcceptQueue
) -> None:
    first = await queue.submit(_bucket("before-the-end"))
    assert first.created
    assert queue._conn is not None
    backend = queue._conn.get_server_pid()

    # Hold the event-order lock so the next accept waits inside its statement, then end its
    # session from outside, as a shutdown does.
    async with pool.acquire() as holder, holder.transaction():
        await holder.execute("SELECT pg_advisory_xact_lock($1)", EVENT_ORDER_LOCK)
        pending = asyncio.create_task(queue.submit(_bucket("mid-statement")))
        for _ in range(100):
            waiting = await holder.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
                backend,
            )
            if waiting:
                break
            await asyncio.sleep(0.05)
        assert waiting, "the accept never waited for the lock"
        assert await holder.fetchval("SELECT pg_terminate_backend($1)", backend)
        with pytest.raises(CONNECTION_ERRORS):
            await pending
    # dropped at once, not left for the client library to notice (it may not have yet when the
    # next batch comes: then that batch failed with InternalClientError, a 500)
    assert queue._conn is None

    after = await queue.submit(_bucket("after-the-end"))
    assert after.created
    assert queue._conn is not None and queue._conn.get_server_pid() != backend
    stored = await pool.fetchval(
        "SELECT count(*) FROM operations WHERE target_id = ANY($1::text[])",
        ["before-the-end", "mid-statement", "after-the-end"],
    )
    assert stored == 2  # the one whose session ended stored nothing
