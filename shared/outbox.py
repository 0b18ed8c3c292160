"""The outbox relay: publishes rows written in the same transaction as the state they announce.

Rows are claimed with FOR UPDATE SKIP LOCKED (any number of relays may run), published with
Nats-Msg-Id = the message id (a re-publish after a crash is dropped by JetStream), and deleted in
the claiming transaction. LISTEN/NOTIFY wakes the relay of the process that queued the rows (the
notification carries the writer's application_name); the others ignore it, and a slow poll on
every relay covers missed notifications and rows left by a process that stopped.

A writer that publishes its own rows right after commit (`publish_committed`) leaves their
deletion to the relay, which deletes what was published within `DELETE_SECONDS` in one
statement: one transaction for a batch of accepts instead of one each.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import asyncpg

from shared.bus import Bus
from shared.db import PROCESS_TAG, connect
from shared.logging import get_logger

log = get_logger("shared.outbox")

BATCH = 256
DELETE_SECONDS = 0.1


class OutboxRelay:
    def __init__(
        self, pool: asyncpg.Pool, bus: Bus, dsn: str, *, poll_seconds: float = 1.0
    ) -> None:
        self.pool = pool
        self.bus = bus
        self.dsn = dsn
        self.poll_seconds = poll_seconds
        self._wake = asyncio.Event()
        self.published = 0
        self._published_ids: list[uuid.UUID] = []  # published, their rows not yet deleted
        self._deleting: asyncio.Task[None] | None = None

    async def drain_once(self) -> int:
        """Publish one batch; returns how many rows left the outbox."""
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT id, subject, message_id, body FROM outbox"
                " WHERE NOT (message_id = ANY($2::uuid[]))"
                " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
                BATCH,
                self._published_ids,
            )
            if not rows:
                return 0
            await asyncio.gather(
                *(self.bus.publish(r["subject"], r["body"], str(r["message_id"])) for r in rows)
            )
            await conn.execute(
                "DELETE FROM outbox WHERE id = ANY($1::bigint[])", [r["id"] for r in rows]
            )
        self.published += len(rows)
        return len(rows)

    async def publish_committed(self, messages: list[tuple[str, uuid.UUID, bytes]]) -> None:
        """Publish messages whose outbox rows the caller has just committed (subject, message
        id, body), without a wake-up and a claim in between; their rows are deleted with the
        next batch. Should anything fail, the rows stay and the drain publishes them; a message
        published twice (here and by another relay's poll) is dropped by JetStream."""
        if not self.bus.connected:
            self._wake.set()  # the drain waits for NATS, with its backoff
            return
        try:
            await asyncio.gather(*(self.bus.publish(s, body, str(m)) for s, m, body in messages))
        except Exception as exc:
            log.warning("publishing after commit failed; the relay takes over", error=repr(exc))
            self._wake.set()
            return
        self.published += len(messages)
        self._published_ids.extend(m for _, m, _ in messages)
        if self._deleting is None or self._deleting.done():
            self._deleting = asyncio.create_task(self._delete_published(), name="outbox-delete")

    async def _delete_published(self) -> None:
        while self._published_ids:
            await asyncio.sleep(DELETE_SECONDS)
            await self.delete_published()

    async def delete_published(self) -> None:
        """Delete the rows of what `publish_committed` has published."""
        ids, self._published_ids = self._published_ids, []
        if not ids:
            return
        try:
            async with self.pool.acquire() as conn:
                await conn.execute("DELETE FROM outbox WHERE message_id = ANY($1::uuid[])", ids)
        except Exception as exc:
            # The rows stay; the drain publishes them again and JetStream drops the duplicates.
            log.warning("deleting published outbox rows failed", error=repr(exc))
            self._wake.set()

    async def run(self) -> None:
        listener: asyncpg.Connection | None = None
        delay = 0.1
        while True:
            try:
                if listener is None or listener.is_closed():
                    listener = await connect(self.dsn)
                    await listener.add_listener("outbox", self._notified)
                await self.bus.wait_ready()
                # Cleared before the drain: a wake-up that arrives during it (its rows perhaps
                # committed after the drain's snapshot) drains again at once.
                self._wake.clear()
                while await self.drain_once() == BATCH:
                    pass
                delay = 0.1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
            except asyncio.CancelledError:
                if listener is not None:
                    with contextlib.suppress(Exception):
                        await listener.close()
                with contextlib.suppress(Exception):
                    await self.delete_published()
                raise
            except Exception as exc:
                # NATS or PostgreSQL unavailable: rows stay in the outbox, retried with backoff.
                log.warning("outbox relay paused", error=repr(exc), retry_in=delay)
                if listener is not None and listener.is_closed():
                    listener = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _notified(self, _conn: object, _pid: int, _channel: str, writer: str) -> None:
        # Another Hyperpilot process's rows are its own relay's (an unnamed writer's: anyone's).
        if writer == PROCESS_TAG or not writer.startswith("hyperpilot:"):
            self._wake.set()
