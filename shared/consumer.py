"""The consumer runtime: one durable JetStream pull consumer per service, shared by its replicas.

For each command: skip it if the inbox says it was handled; take the operation's lock (a session
advisory lock, released by PostgreSQL if this process dies) so two deliveries never work one
operation at once; keep the message alive with in-progress acks while the handler runs; ack when
the handler has committed the terminal state together with the inbox mark.

Errors decide what happens: a permanent error fails the operation with its reason and terminates
the message; anything else is redelivered with backoff, and the last allowed delivery fails the
operation with the reason. Nothing is dropped silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import FetchTimeoutError
from pydantic import ValidationError

from shared.bus import Bus
from shared.contracts.envelope import Envelope
from shared.contracts.events import OperationFailed
from shared.contracts.subjects import COMMANDS_STREAM
from shared.db import CONNECTION_ERRORS
from shared.errors import PermanentError
from shared.logging import get_logger
from shared.operations import TERMINAL, append_event
from shared.stages import Delivery, mark_handled

log = get_logger("shared.consumer")

Handler = Callable[[Envelope, Delivery], Awaitable[None]]


@dataclass(frozen=True)
class ConsumerSettings:
    ack_wait: float = 30.0
    max_deliver: int = 10
    concurrency: int = 16


def operation_lock_key(operation_id: uuid.UUID) -> int:
    # 63-bit key from the id: collisions only serialise two unrelated operations.
    return int.from_bytes(operation_id.bytes[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


class CommandConsumer:
    def __init__(
        self,
        *,
        name: str,
        subjects: list[str],
        handlers: dict[str, Handler],
        pool: asyncpg.Pool,
        bus: Bus,
        dsn: str,
        settings: ConsumerSettings,
    ) -> None:
        self.name = name
        self.subjects = subjects
        self.handlers = handlers
        self.pool = pool
        self.bus = bus
        self.dsn = dsn
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        # Connections that hold the operation locks: pooled, because opening one per command
        # cost more than the rest of the pipeline. Releasing a connection to the pool resets
        # its session (asyncpg runs pg_advisory_unlock_all()), which frees the lock.
        self._lock_pool: asyncpg.Pool | None = None
        self._lock_pool_made = asyncio.Lock()  # one pool, whichever command comes first
        self.handled = 0

    async def ensure_consumer(self) -> None:
        config = ConsumerConfig(
            durable_name=self.name,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=self.settings.ack_wait,
            # Unlimited at the server: the runtime counts deliveries itself so that the last
            # one fails the operation with its reason instead of vanishing.
            max_deliver=-1,
            max_ack_pending=max(self.settings.concurrency * 4, 64),
            filter_subjects=self.subjects,
        )
        await self.bus.js.add_consumer(COMMANDS_STREAM, config)

    async def run(self) -> None:
        while True:
            try:
                await self.bus.wait_ready()
                await self.ensure_consumer()
                sub = await self.bus.js.pull_subscribe_bind(
                    durable=self.name, stream=COMMANDS_STREAM
                )
                log.info("consuming", consumer=self.name, subjects=self.subjects)
                while True:
                    await self._slots.acquire()
                    self._slots.release()
                    free = max(1, self._free_slots())
                    try:
                        messages = await sub.fetch(free, timeout=1.0)
                    except (FetchTimeoutError, TimeoutError):
                        continue
                    for msg in messages:
                        await self._slots.acquire()
                        task = asyncio.create_task(self._handle(msg))
                        self._tasks.add(task)
                        task.add_done_callback(self._done)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("consumer loop restarting", consumer=self.name, error=repr(exc))
                await asyncio.sleep(0.5)

    def _free_slots(self) -> int:
        return self._slots._value

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._lock_pool is not None:
            # Bounded: a connection a cancelled task never gave back must not hold the stop.
            try:
                await asyncio.wait_for(self._lock_pool.close(), 5)
            except Exception:
                self._lock_pool.terminate()

    async def _locks(self) -> asyncpg.Pool:
        async with self._lock_pool_made:
            if self._lock_pool is None:
                pool = await asyncpg.create_pool(
                    self.dsn, min_size=0, max_size=self.settings.concurrency
                )
                assert pool is not None
                self._lock_pool = pool
        return self._lock_pool

    async def _handle(self, msg: Msg) -> None:
        delivered = msg.metadata.num_delivered
        try:
            envelope = Envelope.from_bytes(msg.data)
        except (ValidationError, ValueError) as exc:
            # No operation id to fail: record the poison message loudly and drop it from the queue.
            log.error("poison message terminated", subject=msg.subject, error=str(exc))
            await msg.term()
            return
        delivery = Delivery(
            consumer=self.name,
            message_id=envelope.message_id,
            principal=envelope.principal,
            source=envelope.source,
        )
        handler = self.handlers.get(envelope.type)
        if handler is None:
            await self._fail(
                envelope,
                delivery,
                PermanentError(
                    "UnknownCommand",
                    f"{self.name} has no handler for {envelope.type}",
                    "upgrade the service that consumes this subject",
                ),
            )
            await msg.term()
            return
        lock_conn: asyncpg.Connection | None = None
        heartbeat: asyncio.Task[None] | None = None
        try:
            locks = await self._locks()
            lock_conn = await locks.acquire()
            # One round trip: a message already handled (its inbox row) is only acknowledged;
            # otherwise the operation's lock is tried (NULL: handled, no lock taken), and its
            # attempt read (the stage engine starts that attempt in one statement).
            row = await lock_conn.fetchrow(
                "SELECT CASE WHEN EXISTS"
                " (SELECT 1 FROM inbox WHERE consumer = $1 AND message_id = $2)"
                " THEN NULL ELSE pg_try_advisory_lock($3) END AS locked,"
                " (SELECT attempt FROM operations WHERE id = $4) AS attempt",
                self.name,
                envelope.message_id,
                operation_lock_key(envelope.correlation_id),
                envelope.correlation_id,
            )
            locked = row["locked"]
            if locked is None:
                await msg.ack()
                return
            if not locked:
                # Another replica is working this operation: look again later.
                await msg.nak(delay=self.settings.ack_wait / 2)
                return
            heartbeat = asyncio.create_task(self._keep_alive(msg))
            await handler(envelope, dataclasses.replace(delivery, attempt=row["attempt"]))
            await msg.ack()
            self.handled += 1
        except PermanentError as exc:
            await self._fail(envelope, delivery, exc)
            await msg.term()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if delivered >= self.settings.max_deliver:
                await self._fail(
                    envelope,
                    delivery,
                    PermanentError(
                        "DeliveryLimitReached",
                        f"gave up after {delivered} deliveries: {exc!r}",
                        "fix the cause, then retry the operation",
                    ),
                )
                await msg.term()
                return
            backoff = min(2.0**delivered * 0.25, 30.0)
            kind = "database unavailable" if isinstance(exc, CONNECTION_ERRORS) else "handler error"
            log.warning(kind, consumer=self.name, error=repr(exc), redeliver_in=backoff)
            with contextlib.suppress(Exception):
                await msg.nak(delay=backoff)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
                with contextlib.suppress(BaseException):
                    await heartbeat
            if lock_conn is not None and self._lock_pool is not None:
                with contextlib.suppress(Exception):
                    await self._lock_pool.release(lock_conn)

    async def _keep_alive(self, msg: Msg) -> None:
        while True:
            await asyncio.sleep(self.settings.ack_wait / 3)
            with contextlib.suppress(Exception):
                await msg.in_progress()

    async def _fail(self, envelope: Envelope, delivery: Delivery, error: PermanentError) -> None:
        """End the operation as failed with the reason; never a silent drop."""
        log.error(
            "operation failed by consumer",
            operation_id=str(envelope.correlation_id),
            error=str(error),
        )
        try:
            async with self.pool.acquire() as conn, conn.transaction():
                op = await conn.fetchrow(
                    "SELECT status, kind, domain FROM operations WHERE id = $1 FOR UPDATE",
                    envelope.correlation_id,
                )
                if op is not None and op["status"] not in TERMINAL:
                    await conn.execute(
                        "UPDATE operations SET status = 'failed', error = $2, updated_at = now(),"
                        " finished_at = now() WHERE id = $1",
                        envelope.correlation_id,
                        error.to_json(),
                    )
                    await append_event(
                        conn,
                        operation_id=envelope.correlation_id,
                        domain=op["domain"],
                        event=OperationFailed(kind=op["kind"], error=error.to_json()),
                        principal=delivery.principal,
                        source=delivery.source,
                    )
                await mark_handled(conn, delivery)
        except Exception as exc:
            log.error("could not record failure", error=repr(exc))
