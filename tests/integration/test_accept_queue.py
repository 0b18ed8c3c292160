"""Group commit of accepts (gateway.accept.AcceptQueue) on real PostgreSQL: concurrent accepts
share transactions, and each keeps its own outcome, its idempotency and the order of events."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

import asyncpg

from gateway.accept import AcceptQueue
from hyperpilot.infra import NatsServer
from shared.bus import Bus
from shared.contracts.commands import CreateStorageBucket
from shared.operations import Accepted, IdempotencyConflict, new_operation
from shared.outbox import OutboxRelay
from tests.integration.helpers import outbox_count, outbox_drained, stream_messages


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
    pool: asyncpg.Pool,
) -> None:
    queue = AcceptQueue(pool)
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
    pool: asyncpg.Pool,
) -> None:
    queue = AcceptQueue(pool)
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
    pool: asyncpg.Pool,
) -> None:
    queue = AcceptQueue(pool)
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
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer, bus: Bus
) -> None:
    # The relay's loop is not running: nothing but the queue itself can publish.
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=3600)
    queue = AcceptQueue(pool, relay)
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
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    nats_server.stop()
    bus = Bus(nats_server.url, name="t")
    bus.start()
    relay = OutboxRelay(pool, bus, database_url, poll_seconds=0.05)
    queue = AcceptQueue(pool, relay)
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
