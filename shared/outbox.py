"""The outbox relay: publishes rows written in the same transaction as the state they announce.

Rows are claimed with FOR UPDATE SKIP LOCKED (any number of relays may run), published with
Nats-Msg-Id = the message id (a re-publish after a crash is dropped by JetStream), and deleted in
the claiming transaction. LISTEN/NOTIFY wakes the relay; a slow poll covers missed notifications.
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

from shared.bus import Bus
from shared.db import connect
from shared.logging import get_logger

log = get_logger("shared.outbox")

BATCH = 256


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

    async def drain_once(self) -> int:
        """Publish one batch; returns how many rows left the outbox."""
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT id, subject, message_id, body FROM outbox ORDER BY id"
                " LIMIT $1 FOR UPDATE SKIP LOCKED",
                BATCH,
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

    async def run(self) -> None:
        listener: asyncpg.Connection | None = None
        delay = 0.1
        while True:
            try:
                if listener is None or listener.is_closed():
                    listener = await connect(self.dsn)
                    await listener.add_listener("outbox", self._notified)
                await self.bus.wait_ready()
                while await self.drain_once() == BATCH:
                    pass
                delay = 0.1
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
            except asyncio.CancelledError:
                if listener is not None:
                    with contextlib.suppress(Exception):
                        await listener.close()
                raise
            except Exception as exc:
                # NATS or PostgreSQL unavailable: rows stay in the outbox, retried with backoff.
                log.warning("outbox relay paused", error=repr(exc), retry_in=delay)
                if listener is not None and listener.is_closed():
                    listener = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _notified(self, *_: object) -> None:
        self._wake.set()
