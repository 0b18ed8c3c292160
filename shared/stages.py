"""The stage engine: an operation is a dependency graph of stages, run to a terminal state.

- Independent stages run concurrently; a stage starts once everything it needs has finished.
- A stage's `run` makes (or finds) its mutation and returns `Submitted(external_id)` or `Done`.
  The engine persists "submitted, external id X" before it polls, so a redelivered command
  resumes the poll and never replays the mutation. `run` itself is level-triggered: it reads
  actual state first, so a crash between the cloud call and the persist cannot repeat it.
- Polling runs with backoff until `poll` returns `Done` or raises `PermanentError`; an AWS event
  about the stage's external id (shared/wake.py) ends a backoff sleep at once.
- `TemporaryError` (throttling, 5xx) is retried inside the stage with backoff; a stage that
  fails keeps its error (code, message, next step) and is retried alone by a later attempt.
- A stage an earlier attempt started (its process or PostgreSQL died before the result was
  recorded, or it failed and the operation was retried) that now finds its effect in place is
  recorded `succeeded`, with a StageProgress event saying it was found done, never `noop`: the
  engine cannot tell whether that attempt's call took effect, and if it did, the work is this
  operation's. `noop` (nothing changed) is kept for a stage that matched on its first run, so
  an operation ends `noop` only when nothing it ran had been started before.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import asyncpg

from shared.contracts.commands import Command
from shared.contracts.events import (
    Event,
    OperationCancelled,
    OperationFailed,
    OperationNoop,
    OperationStarted,
    OperationSucceeded,
    StageFailed,
    StageProgress,
    StageRetrying,
    StageStarted,
    StageSubmitted,
    StageSucceeded,
)
from shared.errors import PermanentError, StageError, TemporaryError
from shared.logging import get_logger
from shared.operations import TERMINAL, append_event, event_record, write_event_call
from shared.wake import Wakes

log = get_logger("shared.stages")

FINISHED = frozenset({"succeeded", "noop"})

C = TypeVar("C", bound=Command)


@dataclass(frozen=True)
class Done:
    outputs: dict[str, Any] = field(default_factory=dict)
    noop: bool = False  # actual state already matched: nothing was changed


@dataclass(frozen=True)
class Submitted:
    external_id: str
    outputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pending:
    progress: str | None = None


@dataclass
class StageContext(Generic[C]):
    operation_id: uuid.UUID
    stage: str
    command: dict[str, Any]  # the stored payload, as the bus carried it
    outputs: dict[str, dict[str, Any]]  # outputs of every finished stage, by stage name
    external_id: str | None
    own_outputs: dict[str, Any]
    _report: Callable[[str], Awaitable[None]]
    _parsed: C | None = None

    @property
    def cmd(self) -> C:
        """The command, parsed once per run from `command` by the workflow's `command` type."""
        if self._parsed is None:
            raise TypeError(f"stage {self.stage}: its workflow declares no command type")
        return self._parsed

    def output(self, stage: str, key: str) -> Any:
        return self.outputs[stage][key]

    async def progress(self, message: str) -> None:
        await self._report(message)


RunFn = Callable[[StageContext[Any]], Awaitable[Done | Submitted]]
PollFn = Callable[[StageContext[Any]], Awaitable[Done | Pending]]


@dataclass(frozen=True)
class Stage:
    name: str
    title: str
    run: RunFn
    poll: PollFn | None = None
    needs: tuple[str, ...] = ()
    # Its wait ends with a state change AWS sends as an event about its external id (a HyperPod
    # cluster becoming InService, shared/wake.py): while events flow it polls less often.
    evented: bool = False


@dataclass(frozen=True)
class Outcome:
    status: str  # succeeded | noop | failed | cancelled
    command: dict[str, Any]
    outputs: dict[str, dict[str, Any]]
    error: dict[str, Any] | None


Hook = Callable[[asyncpg.Connection, uuid.UUID, dict[str, Any]], Awaitable[None]]
FinalHook = Callable[[asyncpg.Connection, uuid.UUID, Outcome], Awaitable[list[Event]]]


@dataclass(frozen=True)
class Workflow(Generic[C]):
    kind: str
    domain: str
    stages: tuple[Stage, ...]
    on_start: Hook | None = None  # runs in the transaction that marks the operation running
    on_finish: FinalHook | None = None  # runs in the transaction that ends it; returns events
    # The command type: the engine parses the payload once and stages read it as `ctx.cmd`.
    command: type[C] | None = None

    def __post_init__(self) -> None:
        names = [s.name for s in self.stages]
        if len(names) != len(set(names)):
            raise ValueError(f"{self.kind}: duplicate stage names")
        known = set(names)
        for stage in self.stages:
            missing = set(stage.needs) - known
            if missing:
                raise ValueError(f"{self.kind}: stage {stage.name} needs unknown {sorted(missing)}")
        self.topological_order()

    def topological_order(self) -> list[str]:
        """Stage names in an order that respects `needs`; raises on a cycle."""
        order: list[str] = []
        state: dict[str, int] = {}
        by_name = {s.name: s for s in self.stages}

        def visit(name: str) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                raise ValueError(f"{self.kind}: stage dependency cycle through {name}")
            state[name] = 1
            for need in by_name[name].needs:
                visit(need)
            state[name] = 2
            order.append(name)

        for stage in self.stages:
            visit(stage.name)
        return order

    def critical_path(self, durations: Mapping[str, float]) -> float:
        """The longest chain of dependent durations: the floor of the workflow's total time."""
        finish: dict[str, float] = {}
        by_name = {s.name: s for s in self.stages}
        for name in self.topological_order():
            start = max((finish[n] for n in by_name[name].needs), default=0.0)
            finish[name] = start + durations.get(name, 0.0)
        return max(finish.values(), default=0.0)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 8  # temporary errors tolerated per call
    initial: float = 0.2
    maximum: float = 10.0


@dataclass(frozen=True)
class Delivery:
    """The command being handled: who asked, and the inbox key that marks it handled."""

    consumer: str
    message_id: uuid.UUID
    principal: str
    source: str
    attempt: int | None = None  # the operation's attempt, as read with its lock (None: unknown)


# Starting (or resuming) an operation in one statement: lock its row; unless it is terminal,
# record its stages (kept as they are when resuming) and mark a pending one running. Answers
# the status and attempt from before.
_LOCK_AND_STAGE = (
    "WITH op AS (SELECT status, attempt FROM operations WHERE id = $1 FOR UPDATE),"
    " staged AS (INSERT INTO stages (operation_id, name, position, title, needs)"
    " SELECT $1, s.name, s.position, s.title, s.needs"
    " FROM op, jsonb_to_recordset($2::jsonb) AS s(name text, position int, title text, needs text[])"
    " WHERE op.status <> ALL($3::text[]) ON CONFLICT DO NOTHING),"
)
_START = (
    _LOCK_AND_STAGE + " running AS (UPDATE operations SET status = 'running', updated_at = now()"
    " FROM op WHERE operations.id = $1 AND op.status = 'pending')"
    " SELECT status, attempt FROM op"
)

# The same, for a workflow without an on_start hook whose attempt is known ($4): moving the
# operation from pending to running writes its OperationStarted event for that attempt
# ($5-$14, an `EventRecord`; `write_event` takes the event-order lock, writes and queues it (the
# event row is its audit row) and notifies at commit). `started` says whether it did; pending and not started (another attempt
# found) leaves the operation pending for the general path.
_START_AND_EVENT = (
    _LOCK_AND_STAGE + " running AS (UPDATE operations SET status = 'running', updated_at = now()"
    " FROM op WHERE operations.id = $1 AND op.status = 'pending' AND op.attempt = $4),"
    " event AS (SELECT " + write_event_call(5) + " FROM op"
    " WHERE op.status = 'pending' AND op.attempt = $4)"
    " SELECT status, attempt, EXISTS (SELECT FROM event) AS started FROM op"
)


class StageEngine:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        poll_initial: float = 0.05,
        poll_max: float = 15.0,
        retry: RetryPolicy = RetryPolicy(),
        wakes: Wakes | None = None,
    ) -> None:
        self.pool = pool
        self.poll_initial = poll_initial
        self.poll_max = poll_max
        self.retry = retry
        # The waits AWS events can end early (shared/wake.py); without an event source every
        # wait polls with the backoff alone.
        self.wakes = wakes if wakes is not None else Wakes()

    async def run(
        self,
        workflow: Workflow[Any],
        operation_id: uuid.UUID,
        command: dict[str, Any],
        delivery: Delivery,
    ) -> str:
        """Run (or resume) the operation; returns its terminal status."""
        started = await self._start(workflow, operation_id, command, delivery)
        if started is not None:
            return started
        runner = _Run(self, workflow, operation_id, command, delivery)
        return await runner.execute()

    async def _start(
        self,
        workflow: Workflow[Any],
        operation_id: uuid.UUID,
        command: dict[str, Any],
        delivery: Delivery,
    ) -> str | None:
        stages = [
            {"name": s.name, "position": i, "title": s.title, "needs": list(s.needs)}
            for i, s in enumerate(workflow.stages)
        ]
        async with self.pool.acquire() as conn:
            if workflow.on_start is None and delivery.attempt is not None:
                # One statement, its own transaction: no hook to run in between.
                op = await conn.fetchrow(
                    _START_AND_EVENT,
                    operation_id,
                    stages,
                    list(TERMINAL),
                    delivery.attempt,
                    *event_record(
                        operation_id,
                        workflow.domain,
                        OperationStarted(kind=workflow.kind, attempt=delivery.attempt),
                        principal=delivery.principal,
                        source=delivery.source,
                    ),
                )
                if op is not None and (op["started"] or op["status"] != "pending"):
                    if op["status"] in TERMINAL:
                        await mark_handled(conn, delivery)
                        return str(op["status"])
                    return None
            # The hook and the event follow the start in its transaction; the event-order lock
            # is taken last, so it is held for one statement and the COMMIT.
            async with conn.transaction():
                op = await conn.fetchrow(_START, operation_id, stages, list(TERMINAL))
                if op is None:
                    raise PermanentError(
                        "OperationNotFound", f"operation {operation_id} does not exist"
                    )
                if op["status"] in TERMINAL:
                    await mark_handled(conn, delivery)
                    return str(op["status"])
                if op["status"] == "pending":
                    if workflow.on_start is not None:
                        await workflow.on_start(conn, operation_id, command)
                    await append_event(
                        conn,
                        operation_id=operation_id,
                        domain=workflow.domain,
                        event=OperationStarted(kind=workflow.kind, attempt=op["attempt"]),
                        principal=delivery.principal,
                        source=delivery.source,
                    )
        return None


async def mark_handled(conn: asyncpg.Connection, delivery: Delivery) -> None:
    await conn.execute(
        "INSERT INTO inbox (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        delivery.consumer,
        delivery.message_id,
    )


class _Cancelled(Exception):
    """The operation was asked to stop: the stage ends as cancelled."""


class _Run:
    """One pass of the engine over one operation."""

    def __init__(
        self,
        engine: StageEngine,
        workflow: Workflow[Any],
        operation_id: uuid.UUID,
        command: dict[str, Any],
        delivery: Delivery,
    ) -> None:
        self.engine = engine
        self.workflow = workflow
        self.operation_id = operation_id
        self.command = command
        self.parsed = None if workflow.command is None else workflow.command.from_payload(command)
        self.delivery = delivery
        self.by_name = {s.name: s for s in workflow.stages}
        self.status: dict[str, str] = {}
        self.external: dict[str, str | None] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, dict[str, Any]] = {}
        self.attempts: dict[str, int] = {}  # each stage's runs before its run in this pass

    async def execute(self) -> str:
        async with self.engine.pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT name, status, attempts, external_id, outputs, error FROM stages"
                " WHERE operation_id = $1",
                self.operation_id,
            )
        for r in rows:
            self.status[r["name"]] = r["status"]
            self.attempts[r["name"]] = r["attempts"]
            self.external[r["name"]] = r["external_id"]
            self.outputs[r["name"]] = r["outputs"] or {}
            if r["error"]:
                self.errors[r["name"]] = r["error"]

        running: dict[asyncio.Task[None], str] = {}
        try:
            while True:
                starting = not await self._cancel_requested()
                for name in self.workflow.topological_order() if starting else ():
                    if name in running.values() or self.status[name] in (
                        *FINISHED,
                        "failed",
                        "cancelled",
                    ):
                        continue
                    needs = self.by_name[name].needs
                    if all(self.status[n] in FINISHED for n in needs):
                        task = asyncio.create_task(self._stage(self.by_name[name]))
                        running[task] = name
                if not running:
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.pop(task)
                    task.result()  # persistence errors propagate: the command is redelivered
        finally:
            for task in running:
                task.cancel()
            for task in running:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        return await self._finish()

    async def _cancel_requested(self) -> bool:
        async with self.engine.pool.acquire() as conn:
            requested = await conn.fetchval(
                "SELECT cancel_requested_at IS NOT NULL FROM operations WHERE id = $1",
                self.operation_id,
            )
        return bool(requested)

    async def _finish(self) -> str:
        failed = [n for n in self.workflow.topological_order() if self.status[n] == "failed"]
        cancelled = [n for n in self.workflow.topological_order() if self.status[n] == "cancelled"]
        unfinished = [n for n in self.status if self.status[n] not in FINISHED]
        if not failed and unfinished and await self._cancel_requested():
            return await self._end_cancelled(cancelled)
        blocked = [
            n
            for n in self.workflow.topological_order()
            if self.status[n] not in (*FINISHED, "failed")
        ]
        if failed:
            first = self.errors.get(failed[0], {"code": "StageFailed", "message": failed[0]})
            error = {
                "stage": failed[0],
                "code": first.get("code"),
                "message": first.get("message"),
                "hint": first.get("hint"),
                "failed_stages": failed,
                "blocked_stages": blocked,
            }
            status = "failed"
        elif all(self.status[n] == "noop" for n in self.status):
            status, error = "noop", None
        else:
            status, error = "succeeded", None
        outcome = Outcome(status=status, command=self.command, outputs=self.outputs, error=error)
        async with self.engine.pool.acquire() as conn, conn.transaction():
            extra: list[Event] = []
            if self.workflow.on_finish is not None:
                extra = await self.workflow.on_finish(conn, self.operation_id, outcome)
            result = {name: out for name, out in self.outputs.items() if out}
            await conn.execute(
                "UPDATE operations SET status = $2, error = $3, result = $4, updated_at = now(),"
                " finished_at = now() WHERE id = $1",
                self.operation_id,
                status,
                error,
                result,
            )
            for event in extra:
                await self._event(conn, event)
            final: Event
            if status == "failed":
                assert error is not None
                final = OperationFailed(kind=self.workflow.kind, error=error)
            elif status == "noop":
                final = OperationNoop(
                    kind=self.workflow.kind, reason="actual state already matched"
                )
            else:
                final = OperationSucceeded(kind=self.workflow.kind, result=result)
            await self._event(conn, final)
            await mark_handled(conn, self.delivery)
        log.info("operation finished", operation_id=str(self.operation_id), status=status)
        return status

    async def _end_cancelled(self, stopped: list[str]) -> str:
        outcome = Outcome(
            status="cancelled", command=self.command, outputs=self.outputs, error=None
        )
        async with self.engine.pool.acquire() as conn, conn.transaction():
            if self.workflow.on_finish is not None:
                for event in await self.workflow.on_finish(conn, self.operation_id, outcome):
                    await self._event(conn, event)
            await conn.execute(
                "UPDATE operations SET status = 'cancelled', result = $2, updated_at = now(),"
                " finished_at = now() WHERE id = $1",
                self.operation_id,
                {name: out for name, out in self.outputs.items() if out},
            )
            await self._event(conn, OperationCancelled(kind=self.workflow.kind, stages=stopped))
            await mark_handled(conn, self.delivery)
        log.info("operation cancelled", operation_id=str(self.operation_id), stopped=stopped)
        return "cancelled"

    async def _event(self, conn: asyncpg.Connection, event: Event) -> None:
        await append_event(
            conn,
            operation_id=self.operation_id,
            domain=self.workflow.domain,
            event=event,
            principal=self.delivery.principal,
            source=self.delivery.source,
        )

    def _context(self, stage: Stage) -> StageContext[Any]:
        async def report(message: str) -> None:
            await self._progress(stage.name, message)

        return StageContext(
            operation_id=self.operation_id,
            stage=stage.name,
            command=self.command,
            outputs={n: self.outputs.get(n, {}) for n in self.status if self.status[n] in FINISHED},
            external_id=self.external.get(stage.name),
            own_outputs=dict(self.outputs.get(stage.name, {})),
            _report=report,
            _parsed=self.parsed,
        )

    async def _stage(self, stage: Stage) -> None:
        try:
            if self.external.get(stage.name) is None:
                await self._start_stage(stage)
                result = await self._call(stage, stage.run)
                if isinstance(result, Done):
                    await self._succeed(stage.name, result)
                    return
                self.external[stage.name] = result.external_id
                self.outputs[stage.name] = {**self.outputs.get(stage.name, {}), **result.outputs}
                await self._update(
                    stage.name,
                    "status = 'submitted', external_id = $3, outputs = $4",
                    StageSubmitted(stage=stage.name, external_id=result.external_id),
                    result.external_id,
                    self.outputs[stage.name],
                )
                self.status[stage.name] = "submitted"
            if stage.poll is None:
                await self._succeed(stage.name, Done())
                return
            delay = self.engine.poll_initial
            key = self.external.get(stage.name)
            wakes = self.engine.wakes
            while True:
                if await self._cancel_requested():
                    raise _Cancelled
                # Armed before the poll: an event about `key` arriving meanwhile ends the sleep.
                armed = wakes.arm(key) if key else None
                try:
                    polled = await self._call(stage, stage.poll)
                    if isinstance(polled, Done):
                        await self._succeed(stage.name, polled)
                        return
                    if polled.progress:
                        await self._progress(stage.name, polled.progress)
                    if armed is None:
                        await asyncio.sleep(delay)
                    else:
                        await wakes.sleep(armed, delay)
                finally:
                    if key and armed is not None:
                        wakes.disarm(key, armed)
                longest = self.engine.poll_max
                if key and stage.evented:
                    longest = wakes.poll_max(key, longest)
                delay = min(delay * 1.5, longest)
        except _Cancelled:
            self.status[stage.name] = "cancelled"
            await self._update(
                stage.name,
                "status = 'cancelled', finished_at = now()",
                StageFailed(
                    stage=stage.name,
                    error={
                        "code": "Cancelled",
                        "message": "the operation was cancelled while this stage waited",
                        "hint": "work already submitted to AWS goes on; delete the resource to remove it",
                    },
                ),
            )
        except PermanentError as exc:
            self.status[stage.name] = "failed"
            self.errors[stage.name] = exc.to_json()
            await self._update(
                stage.name,
                "status = 'failed', error = $3, finished_at = now()",
                StageFailed(stage=stage.name, error=exc.to_json()),
                exc.to_json(),
            )

    async def _start_stage(self, stage: Stage) -> None:
        async with self.engine.pool.acquire() as conn, conn.transaction():
            attempts = await conn.fetchval(
                "UPDATE stages SET status = 'running', attempts = attempts + 1,"
                " started_at = coalesce(started_at, now()), error = NULL, updated_at = now()"
                " WHERE operation_id = $1 AND name = $2 RETURNING attempts",
                self.operation_id,
                stage.name,
            )
            await self._event(
                conn, StageStarted(stage=stage.name, title=stage.title, attempt=attempts)
            )
        self.status[stage.name] = "running"
        # The runs before this one, counted by the statement that started this one.
        self.attempts[stage.name] = attempts - 1

    async def _call(self, stage: Stage, fn: Callable[[StageContext[Any]], Awaitable[Any]]) -> Any:
        policy = self.engine.retry
        delay = policy.initial
        for attempt in range(1, policy.attempts + 1):
            try:
                return await fn(self._context(stage))
            except TemporaryError as exc:
                if attempt == policy.attempts:
                    raise PermanentError(
                        exc.code,
                        exc.message,
                        exc.hint or "the service kept refusing; retry the operation later",
                    ) from exc
                async with self.engine.pool.acquire() as conn, conn.transaction():
                    await self._event(
                        conn,
                        StageRetrying(stage=stage.name, error=exc.to_json(), delay_seconds=delay),
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, policy.maximum)
            except StageError:
                raise
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:
                log.exception("stage raised", stage=stage.name)
                raise PermanentError(
                    "InternalError",
                    f"{stage.title} raised {type(exc).__name__}: {exc}",
                    "this is a defect in Hyperpilot; retry the operation, and report it if it recurs",
                ) from exc
        raise AssertionError("unreachable")

    async def _succeed(self, name: str, done: Done) -> None:
        earlier = self.attempts.get(name, 0)
        found_done = done.noop and earlier > 0
        noop = done.noop and not found_done
        status = "noop" if noop else "succeeded"
        self.status[name] = status
        self.outputs[name] = {**self.outputs.get(name, {}), **done.outputs}
        async with self.engine.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                f"UPDATE stages SET status = '{status}', outputs = $3, finished_at = now(),"
                " progress = NULL, updated_at = now() WHERE operation_id = $1 AND name = $2",
                self.operation_id,
                name,
                self.outputs[name],
            )
            if found_done:
                runs = "an earlier run" if earlier == 1 else f"{earlier} earlier runs"
                await self._event(
                    conn,
                    StageProgress(
                        stage=name,
                        message=(
                            f"found done: {runs} of this stage did not record it done"
                            " (interrupted or failed), and its effect is now in place;"
                            " counted as this operation's work, not as nothing to do"
                        ),
                    ),
                )
            await self._event(
                conn, StageSucceeded(stage=name, noop=noop, outputs=self.outputs[name])
            )

    async def _progress(self, name: str, message: str) -> None:
        async with self.engine.pool.acquire() as conn, conn.transaction():
            previous = await conn.fetchval(
                "UPDATE stages s SET progress = $3, updated_at = now() FROM"
                " (SELECT progress FROM stages WHERE operation_id = $1 AND name = $2 FOR UPDATE) old"
                " WHERE s.operation_id = $1 AND s.name = $2 RETURNING old.progress",
                self.operation_id,
                name,
                message,
            )
            if previous != message:
                await self._event(conn, StageProgress(stage=name, message=message))

    async def _update(self, name: str, assignments: str, event: Event, *args: Any) -> None:
        async with self.engine.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                f"UPDATE stages SET {assignments}, updated_at = now()"
                " WHERE operation_id = $1 AND name = $2",
                self.operation_id,
                name,
                *args,
            )
            await self._event(conn, event)
