"""Group commit of accepts (gateway.accept.AcceptQueue) on real PostgreSQL: concurrent accepts
share transactions, and each keeps its own outcome, its idempotency and the order of events;
what commits is announced to the live streams after the answers."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from gateway.accept import AcceptQueue
from gateway.stream import EventBroadcaster
from hyperpilot.infra import NatsServer
from shared.bus import Bus
from shared.contracts.commands import CreateStorageBucket
from shared.contracts.events import StageProgress
from shared.db import connect
from shared.operations import (
    Accepted,
    IdempotencyConflict,
    append_event,
    event_row,
    new_operation,
    read_event_note,
)
from shared.outbox import OutboxRelay
from tests.integration.helpers import outbox_count, outbox_drained, stream_messages

Queues = Callable[..., AcceptQueue]


@pytest.fixture
async def queues(pool: asyncpg.Pool, database_url: str) -> AsyncIterator[Queues]:
    """Accept queues on the test's database, closed (their connection too) after it."""
    made: list[AcceptQueue] = []

    def make(*args: object) -> AcceptQueue:
        queue = AcceptQueue(pool, database_url, *args)  # type: ignore[arg-type]
        made.append(queue)
        return queue

    yield make
    for queue in made:
        await queue.close()


def _bucket(name: str, key: str | None = None, principal: str = "tester") -> object:
    return new_operation(
        CreateStorageBucket(name=name, region="us-east-1"),
        target_type="bucket",
        target_id=name,
        request={"name": name},
        principal=principal,
        source="rest",
        idempotency_key=key,
    )


async def test_concurrent_accepts_are_written_in_shared_batches_each_with_its_event(
    pool: asyncpg.Pool, queues: Queues
) -> None:
    queue = queues()
    batches: list[int] = []
    settle = queue._settle

    async def counted(batch: list) -> None:  # type: ignore[type-arg]
        batches.append(len(batch))
        await settle(batch)

    queue._settle = counted  # type: ignore[method-assign]
    names = [f"bucket-{i:03d}" for i in range(120)]
    accepted = await asyncio.gather(*(queue.submit(_bucket(n)) for n in names))  # type: ignore[arg-type]

    assert all(a.created for a in accepted)
    assert len({a.operation_id for a in accepted}) == 120
    assert max(batches) > 1, batches  # requests that arrived together shared a transaction
    assert sum(batches) == 120
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT e.seq, e.operation_id FROM events e WHERE e.type = 'OperationAccepted'"
            " ORDER BY e.seq"
        )
        outbox = await conn.fetch("SELECT subject, message_id FROM outbox ORDER BY id")
    assert {r["operation_id"] for r in rows} == {a.operation_id for a in accepted}
    seqs = [r["seq"] for r in rows]
    assert seqs == list(range(seqs[0], seqs[0] + 120))  # no gaps: commit order is seq order
    # each operation queued its command, then its event
    subjects = [r["subject"] for r in outbox]
    assert len(subjects) == 240
    assert sum(s.startswith("cmd.") for s in subjects) == 120
    assert all(
        a.startswith("cmd.") and b.startswith("evt.")
        for a, b in zip(subjects[::2], subjects[1::2], strict=True)
    )


async def test_the_same_key_twice_in_one_batch_is_one_operation_and_a_changed_body_conflicts(
    pool: asyncpg.Pool, queues: Queues
) -> None:
    queue = queues()
    key = str(uuid.uuid4())
    first, again, changed = await asyncio.gather(
        queue.submit(_bucket("same-bucket", key)),  # type: ignore[arg-type]
        queue.submit(_bucket("same-bucket", key)),  # type: ignore[arg-type]
        queue.submit(_bucket("other-bucket", key)),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    assert isinstance(first, Accepted) and first.created
    assert isinstance(again, Accepted) and not again.created
    assert again.operation_id == first.operation_id
    assert isinstance(changed, IdempotencyConflict)
    assert changed.operation_id == first.operation_id
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM operations") == 1
        assert await conn.fetchval("SELECT count(*) FROM events") == 1


async def test_a_failing_row_fails_alone_and_its_neighbours_are_written(
    pool: asyncpg.Pool, queues: Queues
) -> None:
    queue = queues()
    good = [_bucket(f"fine-{i}") for i in range(5)]
    bad = _bucket("broken")
    # a row PostgreSQL refuses (a NUL byte cannot be stored in text)
    broken = bad.arguments  # type: ignore[attr-defined]
    bad = dataclasses.replace(bad, arguments=(*broken[:4], "bad\x00id", *broken[5:]))  # type: ignore[type-var]
    outcomes = await asyncio.gather(
        *(queue.submit(o) for o in [*good[:3], bad, *good[3:]]),  # type: ignore[arg-type]
        return_exceptions=True,
    )
    assert isinstance(outcomes[3], asyncpg.PostgresError | ValueError), outcomes[3]
    assert all(isinstance(o, Accepted) and o.created for i, o in enumerate(outcomes) if i != 3)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM operations") == 5


async def test_with_a_relay_accepted_commands_are_published_at_commit_without_a_wake_up(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus, queues: Queues
) -> None:
    # The relay's loop is not running: nothing but the queue itself can publish.
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=3600)
    queue = queues(relay)
    key = str(uuid.uuid4())
    first = await queue.submit(_bucket("published-bucket", key))  # type: ignore[arg-type]
    again = await queue.submit(_bucket("published-bucket", key))  # type: ignore[arg-type]
    assert first.created and not again.created
    assert await outbox_drained(pool, 5)
    # the command and its event once each: the replayed request published nothing
    assert await stream_messages(nats_server.url, "COMMANDS") == 1
    assert await stream_messages(nats_server.url, "EVENTS") == 1
    assert relay.published == 2


async def test_with_nats_down_accepted_commands_stay_in_the_outbox_for_the_relay(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, queues: Queues
) -> None:
    nats_server.stop()
    bus = Bus(nats_server.url, name="t")
    bus.start()
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=0.05)
    queue = queues(relay)
    task = asyncio.create_task(relay.run())
    try:
        accepted = await queue.submit(_bucket("waiting-bucket"))  # type: ignore[arg-type]
        assert accepted.created
        await asyncio.sleep(0.3)
        assert await outbox_count(pool) == 2
        nats_server.start()
        assert await outbox_drained(pool)
        assert await stream_messages(nats_server.url, "COMMANDS") == 1
    finally:
        task.cancel()
        await bus.close()


async def test_accepted_events_are_announced_in_process_and_notified_as_the_table_has_them(
    pool: asyncpg.Pool, database_url: str, queues: Queues
) -> None:
    listener = await connect(database_url)
    notified: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("events", lambda *args: notified.put_nowait(args[3]))
    announced: list[str] = []
    try:
        queue = queues(None, announced.extend)
        accepted = await asyncio.gather(*(queue.submit(_bucket(f"told-{i}")) for i in range(30)))  # type: ignore[arg-type]
        notes = [await asyncio.wait_for(notified.get(), 5) for _ in range(30)]
        async with pool.acquire() as conn:
            rows = await conn.fetch("SELECT * FROM events ORDER BY seq")
    finally:
        await listener.close()
    table = {r["seq"]: event_row(r) for r in rows}
    assert sorted(a.seq for a in accepted) == sorted(table)  # type: ignore[type-var]
    for received in (announced, notes):
        assert len(set(received)) == len(received) == 30
        assert dict(read_event_note(note) for note in received) == table


async def test_a_live_stream_delivers_an_announced_event_once(
    pool: asyncpg.Pool, database_url: str, queues: Queues
) -> None:
    # Announced in-process, then notified back by PostgreSQL: one delivery.
    broadcaster = EventBroadcaster(pool, database_url)
    running = asyncio.create_task(broadcaster.run())
    events = broadcaster.subscribe(after=0)
    try:
        queue = queues(None, broadcaster.committed)
        first = await queue.submit(_bucket("once-a"))  # type: ignore[arg-type]
        second = await queue.submit(_bucket("once-b"))  # type: ignore[arg-type]
        async with pool.acquire() as conn, conn.transaction():
            progress = await append_event(
                conn,
                operation_id=second.operation_id,
                domain="storage",
                event=StageProgress(stage="bucket", message="next"),
                principal="tester",
            )
        seqs = [(await asyncio.wait_for(anext(events), 5))["seq"] for _ in range(3)]
    finally:
        await events.aclose()
        running.cancel()
    assert seqs == [first.seq, second.seq, progress]


async def test_a_connection_lost_under_the_queue_is_replaced(
    pool: asyncpg.Pool, queues: Queues
) -> None:
    queue = queues()
    assert (await queue.submit(_bucket("before-loss"))).created  # type: ignore[arg-type]
    lost = queue._conn
    assert lost is not None
    backend = await lost.fetchval("SELECT pg_backend_pid()")
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT pg_terminate_backend($1)", backend)
    for _ in range(250):  # the server closes it (as a restart would)
        if lost.is_closed():
            break
        await asyncio.sleep(0.02)
    after = await queue.submit(_bucket("after-loss"))  # type: ignore[arg-type]
    assert after.created and queue._conn is not lost
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM operations") == 2
