"""Accepting a command: persist the operation and its outbox row, answer 202."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import asyncpg
import orjson
from fastapi.responses import JSONResponse

from gateway import records
from gateway.deps import Mutation
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.records import ClusterRecord
from shared.boundary import api_path
from shared.bus import Bus
from shared.contracts.commands import Command
from shared.contracts.subjects import owning_service
from shared.db import CONNECTION_ERRORS, connect
from shared.logging import get_logger
from shared.operations import (
    NOTIFY_EVENTS,
    TARGET_SCOPED,
    Accepted,
    IdempotencyConflict,
    NewOperation,
    create_operation,
    find_replayed,
    new_operation,
    persist_operations,
    request_hash,
    scoped_key,
)
from shared.outbox import OutboxRelay

log = get_logger("gateway.accept")

_KEY = re.compile(r"^[A-Za-z0-9._:\-]{1,200}$")


def check_idempotency_key(key: str | None) -> str | None:
    if key is not None and not _KEY.match(key):
        raise ApiError(
            400,
            "invalid_idempotency_key",
            "Idempotency-Key must be 1-200 characters of letters, digits, '.', '_', ':' or '-'",
            hint="use a UUID",
            fields=[
                {
                    "field": "header.Idempotency-Key",
                    "rule": "pattern",
                    "message": "invalid characters or length",
                    "hint": "use a UUID",
                }
            ],
        )
    return key


def _session_ended(exc: asyncpg.PostgresError) -> bool:
    """The error ended the server's session rather than refusing one statement."""
    sqlstate = str(getattr(exc, "sqlstate", "") or "")
    return isinstance(exc, CONNECTION_ERRORS) or sqlstate.startswith(("08", "57P"))


class AcceptQueue:
    """Group commit for accepts: while one batch of operations is being written, the ones that
    arrive wait and go together in the next (one transaction, one WAL flush). Under light load
    a batch is one operation, written in the request's own task, and nothing waits; under heavy
    load the event-order lock and the flush are paid once per batch instead of once per request.
    One batch is written at a time, through the queue's own connection (no pool round for each
    batch).

    What a batch committed is announced after the answers, off the requests' path: the
    OperationAccepted events to this process's live stream (`announce`, in-process) and, by
    NOTIFY, to the other gateways'; with a relay, the commands and events to the bus by the
    relay's `publish_committed`, instead of waiting for the relay to be woken and to claim them."""

    MAX_BATCH = 64

    def __init__(
        self,
        pool: asyncpg.Pool,
        dsn: str,
        relay: OutboxRelay | None = None,
        announce: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self.relay = relay
        self.announce = announce
        self._conn: asyncpg.Connection | None = None
        self._waiting: list[tuple[NewOperation, asyncio.Future[Accepted]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._writing_inline = False
        self._announcing: set[asyncio.Task[None]] = set()

    async def submit(self, operation: NewOperation) -> Accepted:
        future: asyncio.Future[Accepted] = asyncio.get_running_loop().create_future()
        writer_busy = self._writer is not None and not self._writer.done()
        if self._writing_inline or writer_busy or self._waiting:
            self._waiting.append((operation, future))  # goes with the next batch
            self._start_writer()
        else:
            # Nothing in flight: written now, without a hand-over to the writer task.
            self._writing_inline = True
            try:
                await self._settle([(operation, future)])
            except Exception as exc:
                _resolve(future, exc)
            finally:
                self._writing_inline = False
                self._start_writer()
        return await future

    async def close(self) -> None:
        """Wait for what is being written and announced, and close the connection."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer
        if self._announcing:
            await asyncio.gather(*self._announcing, return_exceptions=True)
        await self._drop_connection()

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    def _start_writer(self) -> None:
        """The writer task takes the batches that arrived while one was being written."""
        idle = self._writer is None or self._writer.done()
        if self._waiting and not self._writing_inline and idle:
            self._writer = asyncio.create_task(self._write(), name="accept-writer")

    async def _write(self) -> None:
        while self._waiting:
            batch = self._waiting[: self.MAX_BATCH]
            del self._waiting[: self.MAX_BATCH]
            try:
                await self._settle(batch)
            except Exception as exc:
                if len(batch) == 1:
                    _resolve(batch[0][1], exc)
                    continue
                # One bad row must not fail its neighbours: write them one by one.
                log.warning("batched accept failed; writing singly", error=type(exc).__name__)
                for one in batch:
                    try:
                        await self._settle([one])
                    except Exception as single:
                        _resolve(one[1], single)

    async def _settle(self, batch: list[tuple[NewOperation, asyncio.Future[Accepted]]]) -> None:
        if self._conn is None or self._conn.is_closed():
            await self._drop_connection()
            self._conn = await connect(self.dsn)
        operations = [operation for operation, _ in batch]
        try:
            outcomes = await persist_operations(
                self._conn, operations, wake_relay=self.relay is None, notify_events=False
            )
        except asyncpg.PostgresError as exc:
            if _session_ended(exc):
                # The server ended the session (a shutdown or a crash: PostgreSQL's FATAL
                # 57P01-57P03, class 08): a connection kept after it fails the next batch.
                await self._drop_connection()
            raise  # otherwise refused by the server: the connection is fine
        except BaseException:
            # Lost, or left mid-statement: the next batch opens a new one.
            await self._drop_connection()
            raise
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            _resolve(future, outcome)
        created = [
            (operation, outcome.seq)
            for operation, outcome in zip(operations, outcomes, strict=True)
            if isinstance(outcome, Accepted) and outcome.seq is not None
        ]
        if created:
            notes = [operation.notification(seq) for operation, seq in created]
            messages = [message for operation, _ in created for message in operation.messages]
            task = asyncio.create_task(self._announce(notes, messages), name="accept-announce")
            self._announcing.add(task)
            task.add_done_callback(self._announcing.discard)

    async def _announce(
        self, notes: list[str], messages: list[tuple[str, uuid.UUID, bytes]]
    ) -> None:
        if self.announce is not None:
            self.announce(notes)
        if self.relay is not None:
            await asyncio.gather(self._notify(notes), self.relay.publish_committed(messages))
        else:
            await self._notify(notes)

    async def _notify(self, notes: list[str]) -> None:
        try:
            async with self.pool.acquire() as conn:
                await conn.execute(NOTIFY_EVENTS, notes)
        except Exception as exc:
            # The other gateways' live streams read these events at their next poll.
            log.warning("notifying accepted events failed", error=repr(exc))


def _resolve(future: asyncio.Future[Accepted], outcome: Accepted | BaseException) -> None:
    if future.done():  # the request went away (client disconnect); its outcome is stored
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


_queues: dict[int, AcceptQueue] = {}


def open_accept_queue(
    pool: asyncpg.Pool,
    dsn: str,
    relay: OutboxRelay | None = None,
    announce: Callable[[list[str]], None] | None = None,
) -> AcceptQueue:
    """Route this pool's accepts through a queue (the gateway does it at startup)."""
    queue = _queues[id(pool)] = AcceptQueue(pool, dsn, relay, announce)
    return queue


async def close_accept_queue(pool: asyncpg.Pool) -> None:
    queue = _queues.pop(id(pool), None)
    if queue is not None:
        await queue.close()


def _conflict(exc: IdempotencyConflict) -> ApiError:
    return ApiError(
        409,
        "idempotency_conflict",
        "this Idempotency-Key was already used with a different request",
        hint="use a new key for a new request, or resend the original body",
        extra={"operation_id": str(exc.operation_id)},
    )


def _answer(accepted: Accepted) -> JSONResponse:
    operation_id = str(accepted.operation_id)
    return JSONResponse(
        {
            "operation_id": operation_id,
            "status_url": api_path("operations", operation_id),
            "created": accepted.created,
        },
        status_code=202,
        headers={"Location": api_path("operations", operation_id)},
    )


async def replay(
    mutation: Mutation,
    kind: str | type[Command],
    *,
    target_type: str,
    target_id: str,
    request: dict[str, Any],
) -> JSONResponse | None:
    """The retry rule, resolved before anything else a mutation checks: a request whose
    Idempotency-Key was used before answers that request's operation, running or finished (202,
    `created: false`); the same key with another request is a 409. None: the key is new (or
    there is none, or this is a dry run), and the route goes on with its checks.

    `plan_then_accept`, the one way a route accepts, calls it first (the key is checked even
    for a dry run)."""
    key = check_idempotency_key(mutation.idempotency_key)
    if key is None or mutation.dry_run:
        return None
    if not isinstance(kind, str):
        kind = kind.kind()
    async with mutation.pool.acquire() as conn:
        stored = await scoped_key(
            conn,
            mutation.principal.name,
            key,
            target_type=target_type,
            target_id=target_id,
        )
        try:
            accepted = await find_replayed(
                conn, mutation.principal.name, stored, request_hash(kind, target_id, request)
            )
        except IdempotencyConflict as exc:
            raise _conflict(exc) from exc
    return None if accepted is None else _answer(accepted)


async def accept(
    mutation: Mutation,
    command: Command,
    *,
    target_type: str,
    target_id: str,
    request: dict[str, Any],
    reserve: Reserve | None = None,
) -> JSONResponse:
    """Persist the operation (with its command queued for the bus) and answer 202; a request
    repeated with its Idempotency-Key answers the first one's operation."""
    pool, principal, source = mutation.pool, mutation.principal, mutation.source
    key = check_idempotency_key(mutation.idempotency_key)
    if key is not None and key.endswith(TARGET_SCOPED):
        async with pool.acquire() as conn:
            key = await scoped_key(
                conn, principal.name, key, target_type=target_type, target_id=target_id
            )
    try:
        queue = _queues.get(id(pool))
        if queue is not None and reserve is None:
            accepted = await queue.submit(
                new_operation(
                    command,
                    target_type=target_type,
                    target_id=target_id,
                    request=request,
                    principal=principal.name,
                    source=source,
                    idempotency_key=key,
                )
            )
        else:
            async with pool.acquire() as conn:
                accepted = await create_operation(
                    conn,
                    command,
                    target_type=target_type,
                    target_id=target_id,
                    request=request,
                    principal=principal.name,
                    source=source,
                    idempotency_key=key,
                    reserve=reserve,
                )
    except IdempotencyConflict as exc:
        raise _conflict(exc) from exc
    return _answer(accepted)


Refusal = Callable[[ApiError], ApiError]
Planner = Callable[[Bus, Command], Awaitable[dict[str, Any]]]
Reserve = Callable[[asyncpg.Connection, uuid.UUID], Awaitable[None]]


def unchanged(exc: ApiError) -> ApiError:
    return exc


def refusal_mapper(
    *,
    invalid: tuple[str, str] | None = None,
    conflicts: frozenset[str] = frozenset(),
    missing: frozenset[str] = frozenset(),
    rules: Mapping[str, tuple[str, str]] | None = None,
    hint: str = "",
    values: re.Pattern[str] | None = None,
    malformed_is_400: bool = False,
) -> Refusal:
    """How a domain service's refusal reads at the edge: rules broken on fields (422: a refusal
    that names its fields, each with its rule; `invalid` is the code whose message starts with
    the field, and its rule; `rules` names the field and rule of a code, `values` finds the
    refused values in its message), a state conflict (409), something gone (404), a malformed
    request (400 when `malformed_is_400`)."""

    def refusal(exc: ApiError) -> ApiError:
        if exc.code == "invalid_request" and exc.fields:
            message = "; ".join(f"{f['field']}: {f['message']}" for f in exc.fields[:5])
            return ApiError(422, "validation_error", message, fields=exc.fields)
        if invalid is not None and exc.code == invalid[0]:
            field, _, message = exc.message.partition(": ")
            return field_error(field, invalid[1], message or exc.message, exc.hint or "")
        if rules and exc.code in rules:
            field, rule = rules[exc.code]
            error = field_error(field, rule, exc.message, exc.hint or hint)
            found = values.findall(exc.message) if values is not None else []
            error.fields = [{**error.fields[0], "value": value} for value in found] or error.fields
            return error
        if exc.code in conflicts:
            return ApiError(409, exc.code, exc.message, hint=exc.hint)
        if exc.code in missing:
            return ApiError(404, "not_found", exc.message, hint=exc.hint)
        if exc.code == "invalid_request" and malformed_is_400:
            return ApiError(400, exc.code, exc.message, hint=exc.hint)
        return exc

    return refusal


async def domain_plan(bus: Bus, command: Command, refusal: Refusal = unchanged) -> dict[str, Any]:
    """The plan the owning service computes from actual state (its refusals translated)."""
    try:
        plan: dict[str, Any] = await query(
            bus,
            owning_service(command.domain),
            "plan",
            {"type": type(command).__name__, "payload": command.model_dump(mode="json")},
            timeout=30,
        )
    except ApiError as exc:
        raise refusal(exc) from exc
    return plan


async def plan_then_accept(
    bus: Bus,
    mutation: Mutation,
    kind: type[Command],
    build: Callable[[], Awaitable[Command]],
    *,
    target_type: str,
    target_id: str,
    requested: dict[str, Any],
    refusal: Refusal = unchanged,
    planner: Planner | None = None,
    verdict: bool = True,
    reserve: Reserve | None = None,
) -> JSONResponse:
    """The one way a mutation is accepted, in this order:

    1. the retry rule (`replay`): a request whose Idempotency-Key was used before answers that
       request's operation, before anything live is read or checked;
    2. the command, built by the route from the read model (`build`: its refusals, such as a
       cluster that is not ready, are the route's);
    3. `?dry_run=true`: the plan, in one round trip to the owning service (`planner`, by default
       its `plan` query); nothing is stored;
    4. the plan's verdict (when `verdict`): a refused rule is a 4xx before anything is stored;
       with NATS down or the service slow the command is still accepted and its workflow checks
       the same rules;
    5. the operation (202), with the plan's `noop`, `diff`, `notes` and the `plan` itself."""
    replayed = await replay(
        mutation, kind, target_type=target_type, target_id=target_id, request=requested
    )
    if replayed is not None:
        return replayed
    command = await build()
    plan_of = planner or (lambda bus, command: domain_plan(bus, command, refusal))
    if mutation.dry_run:
        return JSONResponse({"dry_run": True, "plan": await plan_of(bus, command)})
    plan: dict[str, Any] | None = None
    if verdict and bus.connected:
        try:
            plan = await plan_of(bus, command)
        except ApiError as exc:
            if exc.status not in (503, 504):
                raise
    accepted = await accept(
        mutation,
        command,
        target_type=target_type,
        target_id=target_id,
        request=requested,
        reserve=reserve,
    )
    if not verdict:
        return accepted
    body = orjson.loads(accepted.body)
    for key in ("noop", "diff", "notes"):
        body[key] = plan.get(key) if plan is not None else None
    body["plan"] = plan
    return JSONResponse(body, status_code=202, headers={"Location": body["status_url"]})


async def on_cluster(
    bus: Bus,
    mutation: Mutation,
    cluster: str,
    kind: type[Command],
    command: Callable[[ClusterRecord], Command],
    *,
    requested: dict[str, Any],
    target: tuple[str, str] | None = None,
    refusal: Refusal = unchanged,
    planner: Planner | None = None,
) -> JSONResponse:
    """`plan_then_accept` of a command on a known cluster, built from its record (`command`
    refuses what the cluster cannot do yet); the target is the cluster unless named."""

    async def build() -> Command:
        return command(await records.cluster(mutation.pool, cluster))

    target_type, target_id = target or ("cluster", cluster)
    return await plan_then_accept(
        bus,
        mutation,
        kind,
        build,
        target_type=target_type,
        target_id=target_id,
        requested=requested,
        refusal=refusal,
        planner=planner,
    )
