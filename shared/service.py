"""The process shell of a domain service: pool, bus, outbox relay, consumer, health, shutdown."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import asyncpg
import uvloop

from shared.bus import Bus
from shared.config import Settings, get_settings
from shared.consumer import CommandConsumer, ConsumerSettings, Handler
from shared.db import create_pool
from shared.logging import configure_logging, get_logger
from shared.outbox import OutboxRelay
from shared.stages import RetryPolicy, StageEngine

log = get_logger("shared.service")

# Threads for blocking SDK calls: boto3 keeps 10 connections per client, so 10 calls in flight
# reuse them all (more would open and discard a connection each).
IO_THREADS = 10


@dataclass
class ServiceRuntime:
    """What a service's bootstrap gets to build its handlers with."""

    settings: Settings
    pool: asyncpg.Pool
    bus: Bus
    engine: StageEngine


HandlerFactory = Callable[[ServiceRuntime], dict[str, Handler]]
# Long-running companions of the consumer (e.g. a request/reply responder), started once NATS
# is ready and cancelled at shutdown.
Companion = Callable[[ServiceRuntime], Coroutine[Any, Any, None]]


async def _health_server(port: int, is_ready: Callable[[], bool]) -> asyncio.Server:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            request = await reader.readuntil(b"\r\n\r\n")
            path = request.split(b" ", 2)[1] if b" " in request else b"/"
            ok = path.startswith(b"/healthz") or is_ready()
            body = b'{"status":"ok"}' if ok else b'{"status":"starting"}'
            status = b"200 OK" if ok else b"503 Service Unavailable"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "0.0.0.0", port)


def run(
    name: str,
    subjects: list[str],
    build_handlers: HandlerFactory,
    companions: tuple[Companion, ...] = (),
) -> None:
    """`python -m <service>`: serve on uvloop, as the gateway is served, with the settings
    from the environment."""
    uvloop.run(serve(name, subjects, build_handlers, get_settings(), companions))


async def serve(
    name: str,
    subjects: list[str],
    build_handlers: HandlerFactory,
    settings: Settings,
    companions: tuple[Companion, ...] = (),
) -> None:
    """Run a domain service until SIGINT/SIGTERM."""
    configure_logging(settings.log_level, settings.log_format)
    # Adapters run blocking SDK calls in the default executor; its stock size (cores + 4, so 6
    # on two cores) capped the calls in flight well below the commands the consumer runs.
    asyncio.get_running_loop().set_default_executor(
        concurrent.futures.ThreadPoolExecutor(
            max_workers=IO_THREADS, thread_name_prefix=f"{name}-io"
        )
    )
    pool = await _pool_with_retry(settings.database_url)
    bus = Bus(settings.nats_url, name=name)
    bus.start()
    engine = StageEngine(
        pool,
        poll_initial=settings.poll_initial_seconds,
        poll_max=settings.poll_max_seconds,
        retry=RetryPolicy(),
    )
    runtime = ServiceRuntime(settings=settings, pool=pool, bus=bus, engine=engine)
    consumer = CommandConsumer(
        name=name,
        subjects=subjects,
        handlers=build_handlers(runtime),
        pool=pool,
        bus=bus,
        dsn=settings.database_url,
        settings=ConsumerSettings(
            ack_wait=settings.ack_wait_seconds,
            max_deliver=settings.max_deliver,
            concurrency=settings.consumer_concurrency,
        ),
    )
    relay = OutboxRelay(pool, bus, settings.database_url, poll_seconds=settings.outbox_poll_seconds)
    tasks = [
        asyncio.create_task(relay.run(), name=f"{name}-outbox"),
        asyncio.create_task(consumer.run(), name=f"{name}-consumer"),
        *(asyncio.create_task(companion(runtime)) for companion in companions),
    ]
    health = None
    if settings.health_port:
        health = await _health_server(settings.health_port, bus.ready.is_set)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info("service started", service=name, subjects=subjects)
    await stop.wait()
    log.info("service stopping", service=name)
    await consumer.stop()
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(BaseException):
            await task
    if health is not None:
        health.close()
    await bus.close()
    await pool.close()


async def _pool_with_retry(dsn: str) -> asyncpg.Pool:
    delay = 0.2
    while True:
        try:
            return await create_pool(dsn)
        except Exception as exc:
            log.warning("postgres unavailable, retrying", error=str(exc), delay=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
