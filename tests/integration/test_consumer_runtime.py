"""The consumer runtime against real PostgreSQL and NATS JetStream."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import asyncpg
import nats

from hyperpilot.infra import NatsServer
from shared.bus import Bus
from shared.consumer import CommandConsumer, ConsumerSettings
from shared.contracts.envelope import Envelope
from shared.errors import PermanentError
from shared.operations import TERMINAL
from shared.outbox import OutboxRelay
from shared.stages import Delivery, Done, Stage, StageContext, StageEngine, Workflow
from tests.integration.helpers import new_operation


async def _wait_terminal(pool: asyncpg.Pool, op: uuid.UUID, timeout: float = 15) -> asyncpg.Record:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        async with pool.acquire() as conn:
            row = await conn.fetchrow("SELECT status, error FROM operations WHERE id = $1", op)
        if row["status"] in TERMINAL:
            return row
        assert asyncio.get_running_loop().time() < deadline, f"operation still {row['status']}"
        await asyncio.sleep(0.05)


class Harness:
    def __init__(
        self, pool: asyncpg.Pool, dsn: str, url: str, handler: object, max_deliver: int = 3
    ) -> None:
        self.bus = Bus(url, name="t")
        self.relay = OutboxRelay(pool, self.bus, dsn, poll_seconds=0.05)
        self.consumer = CommandConsumer(
            name="cluster-svc",
            subjects=["cmd.storage.>"],
            handlers={"CreateStorageBucket": handler},  # type: ignore[dict-item]
            pool=pool,
            bus=self.bus,
            dsn=dsn,
            settings=ConsumerSettings(ack_wait=1.0, max_deliver=max_deliver, concurrency=4),
        )
        self.tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Harness:
        self.bus.start()
        await self.bus.wait_ready(10)
        self.tasks = [
            asyncio.create_task(self.relay.run()),
            asyncio.create_task(self.consumer.run()),
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.bus.close()


async def test_a_command_runs_its_workflow_once(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    calls = Counter[str]()
    engine = StageEngine(pool, poll_initial=0.01)

    async def run(ctx: StageContext) -> Done:
        calls["run"] += 1
        return Done()

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("s", "S", run),))

    async def handler(env: Envelope, delivery: Delivery) -> None:
        await engine.run(wf, env.correlation_id, env.payload, delivery)

    async with Harness(pool, database_url, nats_server.url, handler):
        op = await new_operation(pool)
        assert (await _wait_terminal(pool, op))["status"] == "succeeded"
        # The same message delivered again (a duplicate publish past the dedupe window) is a no-op.
        async with pool.acquire() as conn:
            body = await conn.fetchval("SELECT command FROM operations WHERE id = $1", op)
        from shared.contracts.commands import CreateStorageBucket
        from shared.operations import command_envelope

        env = command_envelope(
            CreateStorageBucket(**body), op, principal="tester", source="rest", attempt=1
        )
        nc = await nats.connect(nats_server.url)
        await nc.jetstream().publish("cmd.storage.create", env.to_bytes())
        await nc.close()
        await asyncio.sleep(1.0)
    assert calls["run"] == 1


async def test_a_permanent_error_fails_the_operation_with_its_reason(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    async def handler(env: Envelope, delivery: Delivery) -> None:
        raise PermanentError(
            "ValidationException", "ClusterName is too long", "use at most 63 characters"
        )

    async with Harness(pool, database_url, nats_server.url, handler):
        op = await new_operation(pool)
        row = await _wait_terminal(pool, op)
    assert row["status"] == "failed"
    assert row["error"] == {
        "code": "ValidationException",
        "message": "ClusterName is too long",
        "hint": "use at most 63 characters",
    }


async def test_repeated_failures_end_at_the_delivery_limit_with_the_reason(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    attempts = Counter[str]()

    async def handler(env: Envelope, delivery: Delivery) -> None:
        attempts["n"] += 1
        raise RuntimeError("boom")

    async with Harness(pool, database_url, nats_server.url, handler, max_deliver=3):
        op = await new_operation(pool)
        row = await _wait_terminal(pool, op, timeout=30)
    assert row["status"] == "failed"
    assert row["error"]["code"] == "DeliveryLimitReached" and "boom" in row["error"]["message"]
    assert attempts["n"] == 3


async def test_a_poison_message_is_terminated_and_the_consumer_goes_on(
    pool: asyncpg.Pool, database_url: str, nats_server: NatsServer
) -> None:
    engine = StageEngine(pool, poll_initial=0.01)

    async def run(ctx: StageContext) -> Done:
        return Done()

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("s", "S", run),))

    async def handler(env: Envelope, delivery: Delivery) -> None:
        await engine.run(wf, env.correlation_id, env.payload, delivery)

    async with Harness(pool, database_url, nats_server.url, handler):
        nc = await nats.connect(nats_server.url)
        await nc.jetstream().publish("cmd.storage.create", b"\xff not json")
        await nc.close()
        op = await new_operation(pool)
        assert (await _wait_terminal(pool, op))["status"] == "succeeded"
