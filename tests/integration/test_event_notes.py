"""An event's notification carries the event itself when it fits: the live stream delivers it
without reading the table, so it must be exactly what the table gives back; one that arrives
while the live stream reads the table makes it read again."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from gateway.stream import EventBroadcaster
from shared.contracts.events import StageProgress
from shared.db import connect
from shared.operations import append_event, event_row, read_event_note
from tests.integration.helpers import SecondRead, new_operation, runs_again


async def _notes(database_url: str) -> tuple[asyncpg.Connection, asyncio.Queue[str]]:
    listener = await connect(database_url)
    notes: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("events", lambda *args: notes.put_nowait(args[3]))
    return listener, notes


async def test_a_notified_event_is_the_row_the_table_returns(
    pool: asyncpg.Pool, database_url: str
) -> None:
    listener, notes = await _notes(database_url)
    try:
        operation_id = await new_operation(pool)  # OperationAccepted, written by the accept
        async with pool.acquire() as conn, conn.transaction():
            await append_event(
                conn,
                operation_id=operation_id,
                domain="storage",
                event=StageProgress(stage="bucket", message='ünïcode "quoted" 1.5 GiB'),
                principal="tester",
            )
        received = [read_event_note(await asyncio.wait_for(notes.get(), 5)) for _ in range(2)]
        async with pool.acquire() as conn:
            rows = await conn.fetch("SELECT * FROM events ORDER BY seq")
        assert [seq for seq, _ in received] == [r["seq"] for r in rows]
        assert [event for _, event in received] == [event_row(r) for r in rows]
    finally:
        await listener.close()


async def test_an_event_too_large_for_a_notification_sends_its_sequence_number_alone(
    pool: asyncpg.Pool, database_url: str
) -> None:
    listener, notes = await _notes(database_url)
    try:
        async with pool.acquire() as conn, conn.transaction():
            seq = await append_event(
                conn,
                operation_id=uuid.uuid4(),
                domain="storage",
                event=StageProgress(stage="bucket", message="x" * 9000),
                principal="tester",
            )
        assert read_event_note(await asyncio.wait_for(notes.get(), 5)) == (seq, None)
    finally:
        await listener.close()


async def test_a_notification_during_a_read_of_the_live_stream_reads_again_without_waiting(
    pool: asyncpg.Pool, database_url: str
) -> None:
    # The event notified while the live stream reads the table may be past the read's snapshot.
    broadcaster = EventBroadcaster(pool, database_url, poll_seconds=3600)
    # a gap after what it has delivered: the table must be read
    gap = SecondRead(
        lambda: broadcaster._notified(None, 0, "events", f"{broadcaster.last_seq + 5}")
    )
    broadcaster._fan_out = gap  # type: ignore[method-assign]
    await runs_again(broadcaster.run(), gap)
