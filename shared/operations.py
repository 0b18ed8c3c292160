"""The operation store: operations, their stages, the event log and the outbox.

Every write that must reach the bus goes through `enqueue` in the same transaction as the state
it announces; the outbox relay publishes it after commit.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import asyncpg
import orjson

from shared.contracts.commands import Command
from shared.contracts.envelope import Envelope, utcnow
from shared.contracts.events import (
    CancelRequested,
    Event,
    OperationAccepted,
    OperationCancelled,
    OperationRetried,
)
from shared.contracts.subjects import event_subject
from shared.secrets import redact

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "noop"})


class EventRecord(NamedTuple):
    """An event as the database function `write_event` takes it (migrations 0009, 0010): its
    log row with its source (the event log is the audit log), its envelope for `evt.>` and what follows its
    sequence number in the live stream's notification (`event_note`)."""

    event_id: uuid.UUID
    operation_id: uuid.UUID | None
    type: str
    subject: str
    principal: str
    source: str
    occurred_at: datetime
    payload: dict[str, Any]
    body: bytes
    note: str


def write_event_call(first: int, *options: str) -> str:
    """`write_event(...)` on an `EventRecord` passed as the arguments from `$first` on, in its
    field order, then the named `options` (`wake_relay`, `notify_events`) as the next ones.

    The function takes the event-order lock and writes the event (its own audit row) and its
    outbox row, and notifies the relay and the live stream (delivered at commit): one call per event,
    inside whichever statement announces it, so one round trip. The relay's notification names
    the writing process (its connections' application_name, see shared/db.py), so only that
    process's relay wakes; the others' polls are the fallback."""
    names = (*EventRecord._fields, *options)
    return "write_event(" + ", ".join(f"{n} => ${first + i}" for i, n in enumerate(names)) + ")"


_APPEND_EVENT = "SELECT " + write_event_call(1)

_ROW_COLUMNS = 12  # the operation's own columns: the first arguments of _ACCEPT
_INSERT_OPERATION = (
    "INSERT INTO operations (id, kind, domain, target_type, target_id, request,"
    " command_type, command, principal, source, idempotency_key, request_hash)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    " ON CONFLICT (principal, idempotency_key) DO NOTHING RETURNING id"
)

# Accepting a command in one statement: the operation (nothing else when its Idempotency-Key
# was used before), its command queued for the bus ($13-$15), then its OperationAccepted event
# ($16-$25, an `EventRecord`) written after it; it answers the operation and its event's
# sequence number. The relay is notified at commit unless the writer publishes the two
# messages itself ($26), and the live stream unless the writer announces the event itself ($27).
_ACCEPT = (
    "WITH op AS (" + _INSERT_OPERATION + "),"
    " queued AS (INSERT INTO outbox (subject, message_id, body)"
    " SELECT $13, $14, $15 FROM op RETURNING id)"
    " SELECT op.id, " + write_event_call(16, "wake_relay", "notify_events") + " AS seq"
    " FROM op, queued"
)
_EVENT = _ROW_COLUMNS + 3  # where the OperationAccepted event's record starts in its arguments

# The live stream's notifications of events already committed, in order.
NOTIFY_EVENTS = "SELECT pg_notify('events', note) FROM unnest($1::text[]) AS note"


class IdempotencyConflict(Exception):
    """The same Idempotency-Key was used with a different request."""

    def __init__(self, operation_id: uuid.UUID) -> None:
        super().__init__(str(operation_id))
        self.operation_id = operation_id


class OperationNotFound(Exception):
    """No operation has this id."""


class NotRetryable(Exception):
    """The operation is in a state that retry (or cancel) does not apply to."""


@dataclass(frozen=True)
class Accepted:
    operation_id: uuid.UUID
    created: bool  # False: an earlier request with the same Idempotency-Key
    seq: int | None = None  # the sequence number of its OperationAccepted event, when created


def request_hash(kind: str, target_id: str, request: dict[str, Any]) -> str:
    canonical = orjson.dumps([kind, target_id, request], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


async def enqueue(conn: asyncpg.Connection, subject: str, envelope: Envelope) -> None:
    """Queue a message for the bus in the caller's transaction."""
    # One round trip: the row and the relay's wake-up (delivered at commit).
    await conn.execute(
        "WITH queued AS (INSERT INTO outbox (subject, message_id, body) VALUES ($1, $2, $3))"
        " SELECT pg_notify('outbox', current_setting('application_name'))",
        subject,
        envelope.message_id,
        envelope.to_bytes(),
    )


def _event_envelope(
    operation_id: uuid.UUID | None, event: Event, *, principal: str, source: str
) -> Envelope:
    return Envelope(
        correlation_id=operation_id or uuid.UUID(int=0),
        type=type(event).__name__,
        principal=principal,
        source=source,
        payload=redact(event.model_dump(mode="json")),
    )


async def append_event(
    conn: asyncpg.Connection,
    *,
    operation_id: uuid.UUID | None,
    domain: str,
    event: Event,
    principal: str,
    source: str = "system",
) -> int:
    """Record an event (totally ordered, audited) and queue it for `evt.>`; returns its
    sequence number."""
    seq: int = await conn.fetchval(
        _APPEND_EVENT,
        *event_record(operation_id, domain, event, principal=principal, source=source),
    )
    return seq


def event_record(
    operation_id: uuid.UUID | None, domain: str, event: Event, *, principal: str, source: str
) -> EventRecord:
    """The event as `write_event` takes it, its payload redacted."""
    envelope = _event_envelope(operation_id, event, principal=principal, source=source)
    subject = event_subject(domain, event.what)
    return EventRecord(
        envelope.message_id,
        operation_id,
        envelope.type,
        subject,
        principal,
        source,
        envelope.occurred_at,
        envelope.payload,
        envelope.to_bytes(),
        event_note(envelope, operation_id, subject),
    )


def command_envelope(
    command: Command,
    operation_id: uuid.UUID,
    *,
    principal: str,
    source: str,
    attempt: int,
    payload: dict[str, Any] | None = None,
) -> Envelope:
    """The command's message; `payload` is the command's JSON form when the caller has it."""
    # One message id per (operation, attempt): a re-published attempt is deduplicated by NATS
    # (Nats-Msg-Id) and by the consumer's inbox.
    return Envelope(
        message_id=uuid.uuid5(operation_id, f"attempt-{attempt}"),
        correlation_id=operation_id,
        type=type(command).__name__,
        principal=principal,
        source=source,
        payload=command.model_dump(mode="json") if payload is None else payload,
    )


async def create_operation(
    conn: asyncpg.Connection,
    command: Command,
    *,
    target_type: str,
    target_id: str,
    request: dict[str, Any],
    principal: str,
    source: str,
    idempotency_key: str | None,
    reserve: Callable[[asyncpg.Connection, uuid.UUID], Awaitable[None]] | None = None,
) -> Accepted:
    """Persist an operation and its command in one transaction (the command leaves via the outbox).

    `reserve` runs in the same transaction, e.g. to claim a cluster's name in the read model, so a
    conflicting request fails before anything is queued.
    """
    prepared = new_operation(
        command,
        target_type=target_type,
        target_id=target_id,
        request=request,
        principal=principal,
        source=source,
        idempotency_key=idempotency_key,
    )
    if reserve is None:
        outcome = (await persist_operations(conn, [prepared]))[0]
        if isinstance(outcome, IdempotencyConflict):
            raise outcome
        return outcome
    operation_id = prepared.operation_id
    async with conn.transaction():
        inserted = await conn.fetchval(_INSERT_OPERATION, *prepared.arguments[:_ROW_COLUMNS])
        if inserted is None:
            return await _replayed(conn, principal, idempotency_key, prepared.digest)
        await reserve(conn, operation_id)
        await enqueue(
            conn,
            command.subject(),
            command_envelope(command, operation_id, principal=principal, source=source, attempt=1),
        )
        await append_event(
            conn,
            operation_id=operation_id,
            domain=command.domain,
            event=OperationAccepted(
                kind=command.kind(), target_type=target_type, target_id=target_id, request=request
            ),
            principal=principal,
            source=source,
        )
    return Accepted(operation_id, created=True)


@dataclass(frozen=True)
class NewOperation:
    """An operation ready to be written by `persist_operations`: its row, its command's
    outbox message and its OperationAccepted event's `EventRecord`, as the arguments of
    `_ACCEPT`; `messages` are the two outbox rows (subject, message id, body), for a writer
    that publishes them."""

    operation_id: uuid.UUID
    principal: str
    idempotency_key: str | None
    digest: str
    arguments: tuple[Any, ...]
    messages: tuple[tuple[str, uuid.UUID, bytes], ...]

    def notification(self, seq: int) -> str:
        """The live stream's notification of its OperationAccepted event, numbered `seq`."""
        return f"{seq}{EventRecord(*self.arguments[_EVENT:]).note}"


def new_operation(
    command: Command,
    *,
    target_type: str,
    target_id: str,
    request: dict[str, Any],
    principal: str,
    source: str,
    idempotency_key: str | None,
) -> NewOperation:
    kind = command.kind()
    digest = request_hash(kind, target_id, request)
    request = redact(request)
    operation_id = uuid.uuid4()
    payload = command.model_dump(mode="json")
    message = command_envelope(
        command, operation_id, principal=principal, source=source, attempt=1, payload=payload
    )
    accepted = OperationAccepted(
        kind=kind, target_type=target_type, target_id=target_id, request=request
    )
    event = event_record(operation_id, command.domain, accepted, principal=principal, source=source)
    row = (
        operation_id,
        kind,
        command.domain,
        target_type,
        target_id,
        request,
        type(command).__name__,
        payload,
        principal,
        source,
        idempotency_key,
        digest,
    )
    command_message = (command.subject(), message.message_id, message.to_bytes())
    return NewOperation(
        operation_id,
        principal,
        idempotency_key,
        digest,
        (*row, *command_message, *event),
        (command_message, (event.subject, event.event_id, event.body)),
    )


async def persist_operations(
    conn: asyncpg.Connection,
    operations: list[NewOperation],
    *,
    wake_relay: bool = True,
    notify_events: bool = True,
) -> list[Accepted | IdempotencyConflict]:
    """Write operations, one outcome per operation in order: created, replayed (an earlier
    request with the same Idempotency-Key) or an IdempotencyConflict.

    One operation is one statement, its own transaction: the event-order lock is taken and
    released inside the server, never held across a round trip to this process. Several are
    one transaction, their statements pipelined in one round trip: one commit (one WAL flush)
    for all of them, which is what lets accepts keep up under load while events stay in commit
    order.

    `wake_relay=False`: the caller publishes the created operations' `messages` itself after
    this returns (`OutboxRelay.publish_committed`); a relay's poll is the fallback.
    `notify_events=False`: the caller announces the created operations' events to the live
    stream itself after this returns (`NewOperation.notification`, `NOTIFY_EVENTS`); the live
    stream's poll is the fallback."""
    arguments = [(*o.arguments, wake_relay, notify_events) for o in operations]
    if len(operations) == 1:
        row = await conn.fetchrow(_ACCEPT, *arguments[0])
        rows = [] if row is None else [row]
    else:
        async with conn.transaction():
            rows = await conn.fetchmany(_ACCEPT, arguments)
    created: dict[uuid.UUID, int] = {r["id"]: r["seq"] for r in rows}
    outcomes: list[Accepted | IdempotencyConflict] = []
    for operation in operations:
        seq = created.get(operation.operation_id)
        if seq is not None:
            outcomes.append(Accepted(operation.operation_id, created=True, seq=seq))
            continue
        try:
            outcomes.append(
                await _replayed(
                    conn, operation.principal, operation.idempotency_key, operation.digest
                )
            )
        except IdempotencyConflict as conflict:
            outcomes.append(conflict)
    return outcomes


async def _replayed(
    conn: asyncpg.Connection, principal: str, idempotency_key: str | None, digest: str
) -> Accepted:
    """The operation an earlier request with the same Idempotency-Key created."""
    replayed = await find_replayed(conn, principal, idempotency_key, digest)
    assert replayed is not None
    return replayed


async def find_replayed(
    conn: asyncpg.Connection, principal: str, idempotency_key: str | None, digest: str
) -> Accepted | None:
    """The operation this principal's earlier request with this Idempotency-Key created,
    whatever its status (running or finished); None if the key is new (or there is none).
    The same key with another request (`request_hash` of another kind, target or body) is an
    IdempotencyConflict."""
    if idempotency_key is None:
        return None
    existing = await conn.fetchrow(
        "SELECT id, request_hash FROM operations WHERE principal = $1 AND idempotency_key = $2",
        principal,
        idempotency_key,
    )
    if existing is None:
        return None
    if existing["request_hash"] != digest:
        raise IdempotencyConflict(existing["id"])
    return Accepted(existing["id"], created=False)


# A key ending so is scoped to the operation's target: it names the same request only while
# nothing else happened on that target since (see `scoped_key`).
TARGET_SCOPED = ":target"


async def scoped_key(
    conn: asyncpg.Connection,
    principal: str,
    idempotency_key: str | None,
    *,
    target_type: str,
    target_id: str,
) -> str | None:
    """The key an operation is stored under. A key is kept as it is, except a target-scoped one
    (`...:target`, the MCP's key for a call without a request_id): it is completed with the id
    of the latest operation on the same target other than this principal's requests with this
    same key. A retry sees the same latest operation, so the same stored key (the operation it
    started); after anything else on the target (another change, by anyone) the same request
    is a new one."""
    if idempotency_key is None or not idempotency_key.endswith(TARGET_SCOPED):
        return idempotency_key
    latest = await conn.fetchval(
        "SELECT id FROM operations WHERE target_type = $1 AND target_id = $2"
        " AND NOT (principal = $3 AND idempotency_key IS NOT NULL"
        " AND left(idempotency_key, length($4) + 1) = $4 || ':')"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        target_type,
        target_id,
        principal,
        idempotency_key,
    )
    return f"{idempotency_key}:{latest or 'first'}"


async def retry_operation(
    conn: asyncpg.Connection, operation_id: uuid.UUID, *, principal: str, source: str
) -> list[str]:
    """Re-run the failed stages of a failed operation; finished stages are kept as they are."""
    from shared.contracts.commands import COMMANDS

    async with conn.transaction():
        op = await conn.fetchrow("SELECT * FROM operations WHERE id = $1 FOR UPDATE", operation_id)
        if op is None:
            raise OperationNotFound(str(operation_id))
        if op["status"] not in ("failed", "cancelled"):
            raise NotRetryable(
                f"operation {operation_id} is {op['status']}; only a failed or cancelled operation"
                " can be retried"
            )
        stages = await conn.fetch(
            "UPDATE stages SET status = 'pending', error = NULL, external_id = NULL,"
            " progress = NULL, finished_at = NULL, updated_at = now()"
            " WHERE operation_id = $1 AND status IN ('failed', 'cancelled') RETURNING name",
            operation_id,
        )
        attempt = op["attempt"] + 1
        await conn.execute(
            "UPDATE operations SET status = 'pending', attempt = $2, error = NULL,"
            " cancel_requested_at = NULL, finished_at = NULL, updated_at = now() WHERE id = $1",
            operation_id,
            attempt,
        )
        command = COMMANDS[op["command_type"]].from_payload(op["command"])
        envelope = command_envelope(
            command, operation_id, principal=op["principal"], source=op["source"], attempt=attempt
        )
        await enqueue(conn, command.subject(), envelope)
        names = sorted(r["name"] for r in stages)
        await append_event(
            conn,
            operation_id=operation_id,
            domain=op["domain"],
            event=OperationRetried(kind=op["kind"], attempt=attempt, stages=names),
            principal=principal,
            source=source,
        )
    return names


async def request_cancel(
    conn: asyncpg.Connection, operation_id: uuid.UUID, *, principal: str, source: str
) -> str:
    """Ask an operation to stop; returns its status afterwards.

    A pending operation (not yet picked up) is cancelled at once. A running one is stopped by
    the stage engine at its next step: no new stage starts and polls end; cloud work already
    submitted is not rolled back (delete the resource to remove it).
    """
    async with conn.transaction():
        op = await conn.fetchrow("SELECT * FROM operations WHERE id = $1 FOR UPDATE", operation_id)
        if op is None:
            raise OperationNotFound(str(operation_id))
        if op["status"] in TERMINAL:
            raise NotRetryable(f"operation {operation_id} is already {op['status']}")
        await conn.execute(
            "UPDATE operations SET cancel_requested_at = now(), updated_at = now() WHERE id = $1",
            operation_id,
        )
        await append_event(
            conn,
            operation_id=operation_id,
            domain=op["domain"],
            event=CancelRequested(kind=op["kind"]),
            principal=principal,
            source=source,
        )
        if op["status"] == "pending":
            await conn.execute(
                "UPDATE operations SET status = 'cancelled', finished_at = now(), updated_at = now()"
                " WHERE id = $1",
                operation_id,
            )
            await append_event(
                conn,
                operation_id=operation_id,
                domain=op["domain"],
                event=OperationCancelled(kind=op["kind"], stages=[]),
                principal=principal,
                source=source,
            )
            return "cancelled"
    return "cancelling"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


async def load_operation(
    conn: asyncpg.Connection, operation_id: uuid.UUID, *, with_events: bool = True
) -> dict[str, Any] | None:
    """An operation with its stages (in position order) and, optionally, its events."""
    op = await conn.fetchrow("SELECT * FROM operations WHERE id = $1", operation_id)
    if op is None:
        return None
    stages = await conn.fetch(
        "SELECT * FROM stages WHERE operation_id = $1 ORDER BY position", operation_id
    )
    result = operation_summary(op)
    result["stages"] = [
        {
            "name": s["name"],
            "title": s["title"],
            "needs": list(s["needs"]),
            "status": s["status"],
            "attempts": s["attempts"],
            "external_id": s["external_id"],
            "progress": s["progress"],
            "outputs": s["outputs"],
            "error": s["error"],
            "started_at": _iso(s["started_at"]),
            "finished_at": _iso(s["finished_at"]),
        }
        for s in stages
    ]
    if with_events:
        rows = await conn.fetch(
            "SELECT * FROM events WHERE operation_id = $1 ORDER BY seq", operation_id
        )
        result["events"] = [event_row(r) for r in rows]
    return result


def operation_summary(op: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(op["id"]),
        "kind": op["kind"],
        "target_type": op["target_type"],
        "target_id": op["target_id"],
        "request": op["request"],
        "principal": op["principal"],
        "source": op["source"],
        "status": op["status"],
        "cancel_requested": op["cancel_requested_at"] is not None,
        "attempt": op["attempt"],
        "error": op["error"],
        "result": op["result"],
        "created_at": _iso(op["created_at"]),
        "updated_at": _iso(op["updated_at"]),
        "finished_at": _iso(op["finished_at"]),
    }


# A NOTIFY payload holds at most 8000 bytes: an event that fits travels in its notification
# (the live stream then needs no read), a larger one as its sequence number alone.
_NOTE_LIMIT = 7900


def event_note(envelope: Envelope, operation_id: uuid.UUID | None, subject: str) -> str:
    """What follows the sequence number in the event's notification: ' ' and the event as
    `event_row` shows it (without `seq`), or '' when it does not fit."""
    note = orjson.dumps(
        {
            "event_id": str(envelope.message_id),
            "operation_id": str(operation_id) if operation_id else None,
            "type": envelope.type,
            "subject": subject,
            "principal": envelope.principal,
            "occurred_at": _iso(envelope.occurred_at),
            "payload": envelope.payload,
        }
    ).decode()
    return " " + note if len(note) < _NOTE_LIMIT else ""


def read_event_note(note: str) -> tuple[int, dict[str, Any] | None]:
    """The sequence number of a notified event, and the event when it travelled along."""
    seq, _, body = note.partition(" ")
    if not body:
        return int(seq), None
    return int(seq), {"seq": int(seq), **orjson.loads(body)}


def event_row(r: asyncpg.Record) -> dict[str, Any]:
    return {
        "seq": r["seq"],
        "event_id": str(r["event_id"]),
        "operation_id": str(r["operation_id"]) if r["operation_id"] else None,
        "type": r["type"],
        "subject": r["subject"],
        "principal": r["principal"],
        "occurred_at": _iso(r["occurred_at"]),
        "payload": r["payload"],
    }


__all__ = [
    "NOTIFY_EVENTS",
    "TERMINAL",
    "Accepted",
    "EventRecord",
    "IdempotencyConflict",
    "NotRetryable",
    "OperationNotFound",
    "append_event",
    "create_operation",
    "enqueue",
    "event_note",
    "event_record",
    "load_operation",
    "read_event_note",
    "retry_operation",
    "utcnow",
    "write_event_call",
]
