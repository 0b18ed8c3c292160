"""A stage wait ends on an AWS event, in the replica that waits, whichever replica got it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg

from hyperpilot.infra import NatsServer
from shared.bus import Bus
from shared.service import follow_wakes, publish_wake
from shared.stages import Done, Pending, Stage, StageContext, StageEngine, Submitted, Workflow
from shared.wake import Wakes, covered_by_events
from tests.integration.helpers import delivery, new_operation

ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdefghijkl"


def _workflow(
    ready: asyncio.Event, polls: list[float], polled: asyncio.Event | None = None
) -> Workflow[Any]:
    async def run(ctx: StageContext[Any]) -> Submitted:
        return Submitted(ARN)

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        polls.append(time.monotonic())
        if polled is not None:
            polled.set()
        return Done() if ready.is_set() else Pending("Creating")

    return Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("hp", "HyperPod", run, poll, evented=True),),
    )


async def test_an_event_published_by_another_replica_ends_the_wait(
    pool: asyncpg.Pool, nats_server: NatsServer
) -> None:
    waiting, receiving = Bus(nats_server.url, name="a"), Bus(nats_server.url, name="b")
    waiting.start()
    receiving.start()
    wakes = Wakes(evented_max=600)
    wakes.covers = covered_by_events
    follower = asyncio.create_task(follow_wakes(waiting, wakes))
    try:
        await waiting.wait_ready(10)
        await receiving.wait_ready(10)
        # the backoff alone would sleep 300 s after the first polls
        engine = StageEngine(pool, poll_initial=300, poll_max=300, wakes=wakes)
        ready, polls, polled = asyncio.Event(), list[float](), asyncio.Event()
        op = await new_operation(pool)
        running = asyncio.create_task(
            engine.run(_workflow(ready, polls, polled), op, {}, delivery())
        )
        await asyncio.wait_for(polled.wait(), 10)
        await asyncio.sleep(0.2)  # asleep in its backoff now
        ready.set()
        sent = time.monotonic()
        # the other replica received the SQS message: its own waits (none) and the bus
        await publish_wake(receiving, Wakes(), [ARN])
        assert await asyncio.wait_for(running, 10) == "succeeded"
        assert time.monotonic() - sent < 2
        assert len(polls) == 2 and wakes.woken == 1
    finally:
        follower.cancel()
        await waiting.close()
        await receiving.close()


async def test_without_events_the_wait_polls_with_its_backoff(pool: asyncpg.Pool) -> None:
    engine = StageEngine(pool, poll_initial=0.05, poll_max=0.1)
    ready, polls = asyncio.Event(), list[float]()
    op = await new_operation(pool)
    running = asyncio.create_task(engine.run(_workflow(ready, polls), op, {}, delivery()))
    await asyncio.sleep(0.5)
    ready.set()
    assert await asyncio.wait_for(running, 5) == "succeeded"
    assert len(polls) >= 4 and engine.wakes.woken == 0
