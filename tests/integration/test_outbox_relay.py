"""The outbox relay against real PostgreSQL and NATS JetStream."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from hyperpilot.infra import NatsServer
from shared.bus import Bus
from shared.outbox import OutboxRelay
from tests.integration.helpers import (
    SecondRead,
    new_operation,
    outbox_count,
    outbox_drained,
    runs_again,
    stream_messages,
)


async def test_accepted_command_and_event_reach_jetstream(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=0.05)
    task = asyncio.create_task(relay.run())
    try:
        await new_operation(pool)
        assert await outbox_drained(pool)
        assert await stream_messages(nats_server.url, "COMMANDS") == 1
        assert await stream_messages(nats_server.url, "EVENTS") == 1
    finally:
        task.cancel()


async def test_republishing_the_same_row_is_dropped_by_jetstream(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    message_id = str(uuid.uuid4())
    first = await bus.publish("cmd.storage.create", b"{}", message_id)
    again = await bus.publish("cmd.storage.create", b"{}", message_id)
    assert again.duplicate and not first.duplicate
    assert await stream_messages(nats_server.url, "COMMANDS") == 1


async def test_rows_wait_while_nats_is_down_and_leave_when_it_returns(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    nats_server.stop()
    bus = Bus(nats_server.url, name="t")
    bus.start()
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=0.05)
    task = asyncio.create_task(relay.run())
    try:
        await new_operation(pool, "bucket-1")
        await new_operation(pool, "bucket-2")
        await asyncio.sleep(0.5)
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM outbox") == 4
        nats_server.start()
        assert await outbox_drained(pool)
        assert await stream_messages(nats_server.url, "COMMANDS") == 2
    finally:
        task.cancel()
        await bus.close()


async def test_two_relays_share_the_outbox_without_duplicates(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    for i in range(50):
        await new_operation(pool, f"bucket-{i}")
    relays = [OutboxRelay(pool, bus, database_url, poll_seconds=0.05) for _ in range(2)]
    tasks = [asyncio.create_task(r.run()) for r in relays]
    try:
        assert await outbox_drained(pool)
        assert sum(r.published for r in relays) == 100
        assert await stream_messages(nats_server.url, "COMMANDS") == 50
    finally:
        for t in tasks:
            t.cancel()


async def test_a_relay_wakes_for_its_own_process_rows_and_polls_for_the_others(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=3600)
    task = asyncio.create_task(relay.run())
    other = await asyncpg.connect(
        database_url, server_settings={"application_name": "hyperpilot:1:other"}
    )
    unnamed = await asyncpg.connect(database_url)
    try:
        await asyncio.sleep(0.3)  # the relay is listening
        # This process's row: its relay is woken at commit.
        await new_operation(pool, "mine")
        assert await outbox_drained(pool, 10)
        # Another Hyperpilot process's row is its own relay's: this one is not woken.
        await other.execute(
            "WITH queued AS (INSERT INTO outbox (subject, message_id, body)"
            " VALUES ('cmd.storage.create', $1, '{}'))"
            " SELECT pg_notify('outbox', current_setting('application_name'))",
            uuid.uuid4(),
        )
        await asyncio.sleep(0.5)
        assert await outbox_count(pool) == 1
        # A writer that does not name itself wakes every relay (this one takes both rows).
        await unnamed.execute(
            "WITH queued AS (INSERT INTO outbox (subject, message_id, body)"
            " VALUES ('cmd.storage.create', $1, '{}'))"
            " SELECT pg_notify('outbox', current_setting('application_name'))",
            uuid.uuid4(),
        )
        assert await outbox_drained(pool, 10)
        assert await stream_messages(nats_server.url, "COMMANDS") == 3
    finally:
        await other.close()
        await unnamed.close()
        task.cancel()


async def test_a_relay_poll_publishes_rows_nobody_was_woken_for(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    # The writer committed and stopped before publishing (its relay never ran): another
    # process's relay finds the rows on its poll.
    other = await asyncpg.connect(
        database_url, server_settings={"application_name": "hyperpilot:1:gone"}
    )
    await other.execute(
        "INSERT INTO outbox (subject, message_id, body) VALUES ('cmd.storage.create', $1, '{}')",
        uuid.uuid4(),
    )
    await other.close()
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=0.2)
    task = asyncio.create_task(relay.run())
    try:
        assert await outbox_drained(pool, 10)
        assert await stream_messages(nats_server.url, "COMMANDS") == 1
    finally:
        task.cancel()


async def test_rows_published_after_commit_leave_together_and_are_not_drained_again(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=3600)
    deletes = 0
    delete_published = relay.delete_published

    async def counted() -> None:
        nonlocal deletes
        deletes += 1
        await delete_published()

    relay.delete_published = counted  # type: ignore[method-assign]
    for name in ("bucket-a", "bucket-b", "bucket-c"):
        await new_operation(pool, name)  # two outbox rows each: the command, its event
    async with pool.acquire() as conn:
        rows = await conn.fetch("SELECT subject, message_id, body FROM outbox ORDER BY id")
    for row in rows:
        await relay.publish_committed([(row["subject"], row["message_id"], row["body"])])
    # published, their rows not yet deleted: a drain leaves them alone
    assert await relay.drain_once() == 0
    assert relay.published == 6
    assert await outbox_drained(pool, 5)
    assert deletes == 1  # one statement for the six rows
    assert await stream_messages(nats_server.url, "COMMANDS") == 3
    assert await stream_messages(nats_server.url, "EVENTS") == 3


async def test_a_wake_up_during_a_drain_drains_again_without_waiting_for_the_poll(
    pool: asyncpg.Pool, database_url: str, bus: Bus
) -> None:
    # Rows whose wake-up arrives while a drain runs may have committed after its snapshot.
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=3600)
    relay.drain_once = read = SecondRead(relay._wake.set, result=0)  # type: ignore[method-assign]
    await runs_again(relay.run(), read)
