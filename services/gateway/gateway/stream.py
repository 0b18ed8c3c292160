"""The live event stream: one LISTEN connection fans new events out to every subscriber.

A subscriber first replays what it missed from PostgreSQL (`after=seq`), then follows the
live feed; sequence numbers make the hand-over exact (no gap, no repeat). A subscriber that
cannot keep up is disconnected and resumes from its last sequence number. Every
KEEP_ALIVE_SECONDS the live feed also carries KEEP_ALIVE to every subscriber, so that an idle
stream shows it is alive without a timer per subscriber. A subscription given a future
(`ended`, e.g. done when the token that opened it is revoked) ends as soon as it is done.

The LISTEN connection also follows other channels for the gateway (`listen`): token
revocations.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import asyncpg

from shared.db import connect
from shared.logging import get_logger
from shared.operations import event_row, read_event_note

log = get_logger("gateway.stream")

QUEUE_LIMIT = 10_000
PAGE = 500
KEEP_ALIVE_SECONDS = 15.0
POLL_SECONDS = 1.0  # the table is read this often without a notification (one lost, or none)
KEEP_ALIVE: dict[str, Any] = {}  # yielded by `subscribe` (compare by identity)
_ENDED: dict[str, Any] = {}  # wakes a subscriber whose subscription ended


class SubscriberTooSlow(Exception):
    """The subscriber fell behind the live feed; it resumes from its last sequence number."""


class _Subscriber:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE_LIMIT)
        self.overflowed = False
        self.ended = False

    def end(self, _ended: object = None) -> None:
        self.ended = True
        self.offer(_ENDED)

    def offer(self, event: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True


class EventBroadcaster:
    def __init__(
        self,
        pool: asyncpg.Pool,
        dsn: str,
        keep_alive_seconds: float = KEEP_ALIVE_SECONDS,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self.keep_alive_seconds = keep_alive_seconds
        self.poll_seconds = poll_seconds
        self._last_keep_alive = time.monotonic()
        self.last_seq = 0
        self._subscribers: set[_Subscriber] = set()
        self._wake = asyncio.Event()
        self._reading = False
        self._changed: asyncio.Future[None] | None = None
        self._channels: dict[str, Callable[[str | None], None]] = {}
        self._listening: set[str] = set()

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def listen(self, channel: str, noticed: Callable[[str | None], None]) -> None:
        """Also follow `channel` on the LISTEN connection: `noticed(payload)` for each of its
        notifications, and `noticed(None)` each time listening (re)starts (notifications sent
        while it was not listening are lost)."""
        self._channels[channel] = noticed
        self._wake.set()

    def _channel_notified(self, _conn: object, _pid: int, channel: str, payload: str) -> None:
        try:
            self._channels[channel](payload)
        except Exception as exc:
            log.error("a notification was not handled", channel=channel, error=repr(exc))

    async def run(self) -> None:
        listener: asyncpg.Connection | None = None
        while True:
            try:
                if listener is None or listener.is_closed():
                    self._listening = set()
                    listener = await connect(self.dsn)
                    await listener.add_listener("events", self._notified)
                    async with self.pool.acquire() as conn:
                        latest = await conn.fetchval("SELECT coalesce(max(seq), 0) FROM events")
                    self.last_seq = max(self.last_seq, latest) if self.last_seq else latest
                # Cleared before the read: a notification that arrives during it (its event
                # perhaps committed after the read's snapshot) runs the loop again at once.
                self._wake.clear()
                for channel in [c for c in self._channels if c not in self._listening]:
                    await listener.add_listener(channel, self._channel_notified)
                    self._listening.add(channel)
                    self._channels[channel](None)
                await self._fan_out()
                self._keep_alive()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
            except asyncio.CancelledError:
                if listener is not None:
                    with contextlib.suppress(Exception):
                        await listener.close()
                raise
            except Exception as exc:
                log.warning("event stream paused", error=repr(exc))
                listener = None
                await asyncio.sleep(0.5)

    def committed(self, notes: list[str]) -> None:
        """Events this process has just committed, as their notifications: delivered without
        waiting for PostgreSQL to notify them back."""
        for note in notes:
            self._notified(None, 0, "events", note)

    def _notified(self, _conn: object, _pid: int, _channel: str, note: str) -> None:
        # Mostly in `seq` order (in-transaction notifications arrive in commit order): the next
        # event, when it travelled in its notification, goes straight out; one already delivered
        # (announced in-process, then notified) is dropped; anything else (a gap, a large
        # event, a read in progress) is read from the table.
        try:
            seq, event = read_event_note(note)
        except ValueError:
            seq, event = 0, None
        if 0 < seq <= self.last_seq:
            return
        if event is None or self._reading or seq != self.last_seq + 1:
            self._wake.set()
            return
        self._deliver([event])

    def _deliver(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            for sub in self._subscribers:
                sub.offer(event)
            self.last_seq = event["seq"]
        if events and self._changed is not None:
            if not self._changed.done():
                self._changed.set_result(None)
            self._changed = None

    def _keep_alive(self) -> None:
        now = time.monotonic()
        if now - self._last_keep_alive >= self.keep_alive_seconds:
            self._last_keep_alive = now
            for sub in self._subscribers:
                sub.offer(KEEP_ALIVE)

    async def _fan_out(self) -> None:
        while True:
            self._reading = True
            try:
                async with self.pool.acquire() as conn:
                    rows = await conn.fetch(
                        "SELECT * FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
                        self.last_seq,
                        PAGE,
                    )
            finally:
                self._reading = False
            self._deliver([event_row(row) for row in rows])
            if len(rows) < PAGE:
                return

    async def wait_for_change(self, timeout: float) -> None:
        """Returns when new events arrived (or after `timeout`): for long polls."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._changed), timeout)

    async def subscribe(
        self,
        after: int,
        operation_id: str | None = None,
        ended: asyncio.Future[None] | None = None,
    ) -> AsyncGenerator[dict[str, Any]]:
        """Events after `after` (of one operation, if given), then the live feed, until `ended`
        is done (nothing is yielded after that, even what was already queued)."""
        sub = _Subscriber()
        self._subscribers.add(sub)
        if ended is not None:
            ended.add_done_callback(sub.end)
        try:
            sent = after
            # Replay from the database until caught up with what the live feed has delivered.
            while True:
                async with self.pool.acquire() as conn:
                    rows = await conn.fetch(
                        "SELECT * FROM events WHERE seq > $1 ORDER BY seq LIMIT $2", sent, PAGE
                    )
                for row in rows:
                    if sub.ended:
                        return
                    sent = row["seq"]
                    event = event_row(row)
                    if operation_id is None or event["operation_id"] == operation_id:
                        yield event
                if len(rows) < PAGE:
                    break
            while True:
                if sub.ended:
                    return
                if sub.overflowed:
                    raise SubscriberTooSlow
                event = await sub.queue.get()
                if sub.ended:
                    return
                if event is KEEP_ALIVE:
                    yield event
                    continue
                if event["seq"] <= sent:
                    continue
                sent = event["seq"]
                if operation_id is None or event["operation_id"] == operation_id:
                    yield event
        finally:
            self._subscribers.discard(sub)
            if ended is not None:
                ended.remove_done_callback(sub.end)
