"""The process shell of a domain service: pool, bus, outbox relay, consumer, health, shutdown.

A service is declared once (`Service`, in its `bootstrap.py`): its name, the command domains it
consumes and the function that builds its areas. Each `Area` says which workflow runs each
command type, which planner answers each command's dry run, which read routes it answers and
which long-running companions it needs. `assemble` puts the list together (the command table,
the dry runs, the query routes with `qry.<domain>.plan`, the companions), refusing a command or
a query claimed twice; `serve` runs it with one consumer and one query responder.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg
import uvloop

from shared.bus import Bus
from shared.config import Settings, get_settings
from shared.consumer import CommandConsumer, ConsumerSettings, Handler
from shared.contracts.envelope import Envelope
from shared.contracts.plan import Plan
from shared.contracts.subjects import WAKE_SUBJECT, domain_commands, query_subject
from shared.db import create_pool
from shared.errors import StageError
from shared.logging import configure_logging, get_logger
from shared.memory import limit_arenas, release_freed_memory
from shared.outbox import OutboxRelay
from shared.queries import BadRequest, QueryResponder, Route, temporary_hint
from shared.regions import region_scope
from shared.stages import Delivery, RetryPolicy, StageEngine, Workflow
from shared.wake import Wakes
from shared.wake import decode as decode_wake
from shared.wake import encode as encode_wake

log = get_logger("shared.service")

# Threads for blocking SDK calls: boto3 keeps 10 connections per client, so 10 calls in flight
# reuse them all (more would open and discard a connection each).
IO_THREADS = 10


@dataclass
class ServiceRuntime:
    """What a service's bootstrap builds its areas with."""

    settings: Settings
    pool: asyncpg.Pool
    bus: Bus
    engine: StageEngine


# Long-running companions of the consumer (e.g. a status watcher), started with the service
# and cancelled at shutdown.
Companion = Callable[[ServiceRuntime], Coroutine[Any, Any, None]]
# A command's dry run: what it would do, from actual state (`qry.<domain>.plan`).
Planner = Callable[[dict[str, Any]], Awaitable[Plan]]


@dataclass(frozen=True)
class Area:
    """One topic of a service: what it handles, plans, reads and keeps running."""

    workflows: dict[str, Workflow[Any]] = field(default_factory=dict)  # command type -> workflow
    planners: dict[str, Planner] = field(default_factory=dict)  # command type -> dry run
    read_routes: dict[str, Route] = field(default_factory=dict)  # query subject -> route
    # Long-running tasks of the area (e.g. a node-health watcher), started with the service.
    companions: tuple[Companion, ...] = ()


@dataclass(frozen=True)
class Service:
    """A domain service, as its bootstrap declares it."""

    name: str  # the consumer, the query queue group, the log a failure's hint points to
    domains: tuple[str, ...]  # the command domains consumed; queries are qry.<domains[0]>.*
    areas: Callable[[ServiceRuntime], list[Area]]  # called once per process
    quiet: bool = False  # a query may carry a secret: its text and errors are never logged
    stage_hint: Callable[[StageError], str] = temporary_hint  # a refusal's hint, if it has none

    @property
    def subjects(self) -> list[str]:
        return [domain_commands(domain) for domain in self.domains]

    @property
    def plan_subject(self) -> str:
        return query_subject(self.domains[0], "plan")


@dataclass(frozen=True)
class Assembled:
    """A service's areas, put together."""

    workflows: dict[str, Workflow[Any]]  # command type -> workflow: the command table
    planners: dict[str, Planner]  # command type -> dry run
    routes: dict[str, Route]  # query subject -> route, the plan route included
    companions: tuple[Companion, ...]

    def handlers(self, engine: StageEngine) -> dict[str, Handler]:
        return {command: _run_workflow(engine, wf) for command, wf in self.workflows.items()}


V = TypeVar("V")


def _merge(what: str, tables: Iterable[Mapping[str, V]]) -> dict[str, V]:
    merged: dict[str, V] = {}
    for table in tables:
        for key, value in table.items():
            if key in merged:
                raise ValueError(f"two areas claim the {what} {key}")
            merged[key] = value
    return merged


def assemble(service: Service, runtime: ServiceRuntime) -> Assembled:
    areas = service.areas(runtime)
    planners = _merge("dry run of", (area.planners for area in areas))
    routes = _merge(
        "query",
        [*(area.read_routes for area in areas), {service.plan_subject: plan_route(planners)}],
    )
    return Assembled(
        workflows=_merge("command", (area.workflows for area in areas)),
        planners=planners,
        routes={subject: _in_region(route) for subject, route in routes.items()},
        companions=tuple(c for area in areas for c in area.companions),
    )


def region_of(payload: object) -> object:
    """The region a command or query is about: its `region`, else its `target`'s (the
    governance and feature targets the gateway resolves from the cluster record carry it)."""
    if not isinstance(payload, dict):
        return None
    target = payload.get("target")
    nested = target.get("region") if isinstance(target, dict) else None
    return payload.get("region") or nested


def _in_region(route: Route) -> Route:
    """A query naming a `region` (its cluster's) reads AWS in that region."""

    async def scoped(request: dict[str, Any]) -> Any:
        with region_scope(region_of(request)):
            return await route(request)

    return scoped


def plan_route(planners: dict[str, Planner]) -> Route:
    """`qry.<domain>.plan`: the dry run of `{"type": <command type>, "payload": {...}}`."""

    async def plan(request: dict[str, Any]) -> Any:
        command_type = request.get("type")
        payload = request.get("payload")
        planner = planners.get(str(command_type))
        if planner is None:
            raise BadRequest(
                f"no dry run for {command_type}",
                "dry_run is answered for: " + (", ".join(sorted(planners)) or "no command yet"),
            )
        if not isinstance(payload, dict):
            raise BadRequest("payload is required", "send the command as a JSON object")
        with region_scope(region_of(payload)):
            return (await planner(payload)).model_dump(mode="json")

    return plan


def _run_workflow(engine: StageEngine, workflow: Workflow[Any]) -> Handler:
    async def handle(envelope: Envelope, delivery: Delivery) -> None:
        # A command names its cluster's (or bucket's) region: its AWS calls go there.
        with region_scope(region_of(envelope.payload)):
            await engine.run(workflow, envelope.correlation_id, envelope.payload, delivery)

    return handle


async def _answer_queries(service: Service, routes: dict[str, Route], bus: Bus) -> None:
    await bus.wait_ready()
    assert bus.nc is not None
    responder = QueryResponder(
        bus.nc, routes, service.name, quiet=service.quiet, stage_hint=service.stage_hint
    )
    await responder.start()
    try:
        await asyncio.Event().wait()
    finally:
        await responder.stop()


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


def run(service: Service) -> None:
    """`python -m <service>`: serve on uvloop, as the gateway is served, with the settings
    from the environment; the malloc arenas limited before any thread starts."""
    settings = get_settings()
    limit_arenas(settings.malloc_arenas)
    uvloop.run(serve(service, settings))


async def serve(service: Service, settings: Settings) -> None:
    """Run a domain service until SIGINT/SIGTERM."""
    name, subjects = service.name, service.subjects
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
        wakes=Wakes(settings.poll_max_evented_seconds),
    )
    _spend_aws_budget(settings, pool)
    runtime = ServiceRuntime(settings=settings, pool=pool, bus=bus, engine=engine)
    assembled = assemble(service, runtime)
    consumer = CommandConsumer(
        name=name,
        subjects=subjects,
        handlers=assembled.handlers(engine),
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
        asyncio.create_task(
            _answer_queries(service, assembled.routes, bus), name=f"{name}-queries"
        ),
        asyncio.create_task(follow_wakes(bus, engine.wakes), name=f"{name}-wakes"),
        asyncio.create_task(
            release_freed_memory(settings.memory_trim_seconds), name=f"{name}-memory"
        ),
        *(asyncio.create_task(companion(runtime)) for companion in assembled.companions),
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


async def follow_wakes(bus: Bus, wakes: Wakes) -> None:
    """End this process's stage waits that another replica's AWS events name."""
    await bus.wait_ready()
    assert bus.nc is not None

    async def woken(msg: Any) -> None:
        wakes.wake(decode_wake(msg.data))

    subscription = await bus.nc.subscribe(WAKE_SUBJECT, cb=woken)
    try:
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(Exception):
            await subscription.unsubscribe()


async def publish_wake(bus: Bus, wakes: Wakes, keys: list[str]) -> None:
    """Wake the waits on `keys` here at once, and in every replica through the bus."""
    if not keys:
        return
    wakes.wake(keys)
    if bus.nc is not None and bus.nc.is_connected:
        await bus.nc.publish(WAKE_SUBJECT, encode_wake(keys))


def _spend_aws_budget(settings: Settings, pool: asyncpg.Pool) -> None:
    """Every AWS call of this process spends from the account's shared bucket."""
    from shared.adapters import aws_session
    from shared.aws_budget import AccountLimiter

    limiter = AccountLimiter(
        pool,
        settings.aws_account_id
        or (lambda: aws_session.account_id(settings.aws_region, settings.aws_endpoint_url)),
        rate=settings.aws_calls_per_second,
        burst=settings.aws_call_burst,
    )
    limiter.bind(asyncio.get_running_loop())
    aws_session.use_budget(limiter)


async def _pool_with_retry(dsn: str) -> asyncpg.Pool:
    delay = 0.2
    while True:
        try:
            return await create_pool(dsn)
        except Exception as exc:
            log.warning("postgres unavailable, retrying", error=str(exc), delay=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
