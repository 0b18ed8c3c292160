"""The audit log on real PostgreSQL: it is the event log (a view of `events`), so every event's
audit row is written by the statement that writes the event and commits (or rolls back) with it, with its principal and source, whether
or not NATS is up and anything subscribes to `evt.>`."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from hyperpilot.infra import NatsServer
from shared.contracts.commands import CreateStorageBucket
from shared.contracts.events import StageProgress
from shared.operations import append_event, new_operation, persist_operations
from shared.stages import Delivery, Done, Stage, StageContext, StageEngine, Workflow

_AUDITED = "event_id, operation_id, type, subject, principal, payload, occurred_at"


async def _audit_rows(conn: asyncpg.Connection) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT * FROM audit_log ORDER BY seq"))


async def test_an_event_and_its_audit_row_commit_together_without_nats(
    pool: asyncpg.Pool, nats_server: NatsServer
) -> None:
    nats_server.stop()  # nothing publishes `evt.>` and nothing subscribes to it
    accepted = new_operation(
        CreateStorageBucket(name="audited", region="us-east-1"),
        target_type="bucket",
        target_id="audited",
        request={"name": "audited"},
        principal="alice",
        source="cli",
        idempotency_key=None,
    )
    async with pool.acquire() as conn:
        # the accept path: its OperationAccepted event is audited as soon as the accept returns
        [outcome] = await persist_operations(conn, [accepted])
        assert [(r["type"], r["principal"], r["source"]) for r in await _audit_rows(conn)] == [
            ("OperationAccepted", "alice", "cli")
        ]
        # an event that rolls back leaves no audit row either
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await append_event(
                    conn,
                    operation_id=None,
                    domain="test",
                    event=StageProgress(stage="s", message="rolled back"),
                    principal="bob",
                    source="mcp",
                )
                assert len(await _audit_rows(conn)) == 2
                raise RuntimeError
        assert len(await _audit_rows(conn)) == 1
        # an event without an operation (what the gateway records itself)
        await append_event(
            conn,
            operation_id=None,
            domain="test",
            event=StageProgress(stage="s", message="kept"),
            principal="bob",
            source="mcp",
        )

    # the stage engine's start, in its one statement, and the events of its run
    async def done(ctx: StageContext[Any]) -> Done:
        return Done()

    workflow: Workflow[Any] = Workflow(
        kind="storage.create", domain="storage", stages=(Stage("s", "S", done),)
    )
    started = Delivery(
        consumer="test", message_id=uuid.uuid4(), principal="tester", source="rest", attempt=1
    )
    engine = StageEngine(pool, poll_initial=0.02, poll_max=0.02)
    assert await engine.run(workflow, outcome.operation_id, {}, started) == "succeeded"

    async with pool.acquire() as conn:
        rows = await _audit_rows(conn)
        events = await conn.fetch(f"SELECT {_AUDITED} FROM events ORDER BY seq")
    # every event, in the log's order, as the log has it: the same row
    assert [tuple(r[c] for c in _AUDITED.split(", ")) for r in rows] == [tuple(e) for e in events]
    assert [r["type"] for r in rows][:3] == [
        "OperationAccepted",
        "StageProgress",
        "OperationStarted",
    ]
    assert rows[0]["operation_id"] == outcome.operation_id
    assert rows[0]["subject"] == "evt.storage.operation_accepted"
    assert (rows[1]["operation_id"], rows[1]["principal"], rows[1]["source"]) == (
        None,
        "bob",
        "mcp",
    )
    assert rows[1]["payload"]["message"] == "kept"
    assert {r["source"] for r in rows[2:]} == {"rest"}  # the delivery's source
    assert all(r["recorded_at"] >= r["occurred_at"] for r in rows)


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
        audited = await conn.fetchval(
            "SELECT payload FROM audit_log WHERE operation_id = $1", accepted.operation_id
        )
    for stored in (request, payload["request"], audited["request"]):
        assert stored["note"] == REDACTED and stored["env"]["WANDB_API_KEY"] == REDACTED
    assert not [b for b in bodies if secret.encode() in bytes(b["body"])]
