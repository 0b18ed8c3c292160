"""The NATS JetStream connection: connect (and keep reconnecting), declare the streams."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError

from shared.config import get_settings
from shared.contracts.subjects import (
    COMMANDS_STREAM,
    COMMANDS_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
)
from shared.logging import get_logger

log = get_logger("shared.bus")

# Nats-Msg-Id duplicates are dropped within this window; the outbox relay re-publishes only
# rows whose transaction it could not finish, long before the window ends.
DUPLICATE_WINDOW_SECONDS = 600.0
EVENT_RETENTION_SECONDS = 7 * 24 * 3600.0


def streams(replicas: int = 1) -> tuple[StreamConfig, ...]:
    """The two streams, each stored on `replicas` servers of the NATS cluster (1, 3 or 5)."""
    return (
        StreamConfig(
            name=COMMANDS_STREAM,
            subjects=[COMMANDS_SUBJECTS],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            duplicate_window=DUPLICATE_WINDOW_SECONDS,
            num_replicas=replicas,
        ),
        StreamConfig(
            name=EVENTS_STREAM,
            subjects=[EVENTS_SUBJECTS],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=EVENT_RETENTION_SECONDS,
            discard=DiscardPolicy.OLD,
            duplicate_window=DUPLICATE_WINDOW_SECONDS,
            num_replicas=replicas,
        ),
    )


async def ensure_streams(js: JetStreamContext, replicas: int | None = None) -> None:
    """Declare the streams (or update them, a change of replicas included).

    `replicas` defaults to NATS_STREAM_REPLICAS: 1 for the embedded single server, 3 on a
    three-node cluster (a stream keeps working while one of its servers is down).
    """
    if replicas is None:
        replicas = get_settings().nats_stream_replicas
    for config in streams(replicas):
        try:
            await js.add_stream(config)
        except BadRequestError:
            await js.update_stream(config)


def server_urls(url: str) -> list[str]:
    """NATS_URL as the client's server list: one URL, or a cluster's separated by commas."""
    return [part.strip() for part in url.split(",") if part.strip()]


CLOSE_SECONDS = 5.0


class Bus:
    """One NATS connection per process. `ready` is set while JetStream is usable."""

    def __init__(self, url: str, *, name: str) -> None:
        self.url = url
        self.name = name
        self.nc: NATS | None = None
        self._js: JetStreamContext | None = None
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def js(self) -> JetStreamContext:
        if self._js is None:
            raise ConnectionError("not connected to NATS")
        return self._js

    @property
    def connected(self) -> bool:
        return self.nc is not None and self.nc.is_connected

    def start(self) -> None:
        """Connect in the background: a process starts (and accepts work) while NATS is down."""
        self._task = asyncio.create_task(self._connect_forever(), name=f"{self.name}-nats-connect")

    async def _connect_forever(self) -> None:
        delay = 0.2
        while True:
            try:
                self.nc = await nats.connect(
                    server_urls(self.url),
                    name=self.name,
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.5,
                    connect_timeout=2,
                    disconnected_cb=self._on_disconnect,
                    reconnected_cb=self._on_reconnect,
                    error_cb=self._on_error,
                )
                self._js = self.nc.jetstream(timeout=5)
                await ensure_streams(self._js)
                self.ready.set()
                log.info("nats connected", url=self.url)
                return
            except Exception as exc:
                log.warning("nats unavailable, retrying", error=str(exc), delay=delay)
                if self.nc is not None:
                    with contextlib.suppress(Exception):
                        await self.nc.close()
                    self.nc = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def wait_ready(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self.ready.wait(), timeout)

    async def _on_disconnect(self) -> None:
        log.warning("nats disconnected")

    async def _on_reconnect(self) -> None:
        log.info("nats reconnected")
        if self._js is not None:
            with contextlib.suppress(Exception):
                await ensure_streams(self._js)

    async def _on_error(self, exc: Exception) -> None:
        log.debug("nats error", error=str(exc))

    async def publish(self, subject: str, body: bytes, message_id: str) -> Any:
        return await self.js.publish(subject, body, headers={"Nats-Msg-Id": message_id})

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.nc is not None:
            # close, not drain: consumers have been stopped, and a pending pull would hold a
            # drain for its whole timeout. Bounded: a close that never returns must not hold
            # the process's shutdown.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.nc.close(), CLOSE_SECONDS)
        self.ready.clear()
