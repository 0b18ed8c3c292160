"""The audit subscriber on real NATS and PostgreSQL: every event is recorded once, with its
principal, and events that trickle in are written in batches, not one INSERT each."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from gateway.audit import AuditSubscriber
from shared.bus import Bus
from shared.contracts.envelope import Envelope


def _event(n: int) -> Envelope:
    return Envelope(
        correlation_id=uuid.uuid4(),
        type="OperationAccepted",
        principal=f"user-{n}",
        source="cli",
        payload={"n": n},
    )


async def _audit_rows(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    async with pool.acquire() as conn:
        return list(await conn.fetch("SELECT * FROM audit_log ORDER BY seq"))


async def test_trickling_events_are_recorded_once_each_in_batches(
    pool: asyncpg.Pool, bus: Bus
) -> None:
    audit = AuditSubscriber(pool, bus, linger_seconds=0.3)
    task = asyncio.create_task(audit.run())
    events = [_event(n) for n in range(20)]
    try:
        for envelope in events:
            await bus.publish("evt.storage.accepted", envelope.to_bytes(), str(envelope.message_id))
            await asyncio.sleep(0.02)  # 50 events a second, as from a steady stream of requests
        # published again: a redelivery is recorded once
        await bus.publish("evt.storage.accepted", events[0].to_bytes(), str(uuid.uuid4()))
        for _ in range(250):
            if audit.recorded >= len(events) + 1:
                break
            await asyncio.sleep(0.02)
        rows = await _audit_rows(pool)
        assert [r["event_id"] for r in rows] == [e.message_id for e in events]
        assert [(r["principal"], r["source"]) for r in rows] == [
            (f"user-{n}", "cli") for n in range(20)
        ]
        assert rows[3]["payload"] == {"n": 3}
        assert rows[3]["subject"] == "evt.storage.accepted"
        # 21 events over about half a second, each batch lingering 0.3 s: a few writes
        assert audit.writes <= 5, audit.writes
    finally:
        task.cancel()


async def test_a_secret_that_reaches_an_event_is_stored_redacted(pool: asyncpg.Pool) -> None:
    """Behind the contracts' refusal: an event or an operation's request that still carries a
    secret-looking value is written with it redacted, in the events, the operation row and the
    message for the bus alike."""
    from shared.contracts.commands import CreateStorageBucket
    from shared.operations import create_operation
    from shared.secrets import REDACTED

    secret = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            CreateStorageBucket(name="bucket-redacted", region="us-east-1"),
            target_type="bucket",
            target_id="bucket-redacted",
            request={"name": "bucket-redacted", "env": {"WANDB_API_KEY": "v"}, "note": secret},
            principal="tester",
            source="rest",
            idempotency_key=None,
        )
        request = await conn.fetchval(
            "SELECT request FROM operations WHERE id = $1", accepted.operation_id
        )
        payload = await conn.fetchval(
            "SELECT payload FROM events WHERE operation_id = $1", accepted.operation_id
        )
        bodies = await conn.fetch("SELECT body FROM outbox")
    for stored in (request, payload["request"]):
        assert stored["note"] == REDACTED and stored["env"]["WANDB_API_KEY"] == REDACTED
    assert not [b for b in bodies if secret.encode() in bytes(b["body"])]
