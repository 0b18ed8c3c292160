"""AWS events for the stage waits (shared/wake.py): cluster-svc's queue of SageMaker HyperPod's
EventBridge events, long-polled, each event waking the waits on its cluster in every replica.

At start the queue and its rule are made (adapters/aws_events.py: idempotent, so every replica
does it). While the queue is read, HyperPod waits poll at most every POLL_MAX_EVENTED_SECONDS
(default 60) and end at once on an event; when the queue cannot be made or read (no
permission for SQS or EventBridge, say), the log says so ("aws event queue unavailable: stage
waits poll only") and the waits poll as without events, the queue tried again every
AWS_EVENTS_RETRY_SECONDS. AWS_EVENTS_QUEUE=false turns it off (polling only).

Any replica may receive a message: it wakes its own waits at once and publishes the event's
resources on `wake.aws` for the others (core NATS), then deletes the message.
"""

from __future__ import annotations

import asyncio

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.aws_events import EventQueue
from cluster_svc.areas import Area
from shared.errors import StageError
from shared.logging import get_logger
from shared.service import ServiceRuntime, publish_wake
from shared.wake import covered_by_events, wake_keys

log = get_logger("cluster_svc.aws_events")


class EventSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    aws_events_queue: bool = Field(
        True, description="Read SageMaker HyperPod's EventBridge events from an SQS queue"
    )
    aws_events_retry_seconds: float = Field(
        300.0, gt=0, description="How soon an event queue that could not be made is tried again"
    )


async def follow(queue: EventQueue, runtime: ServiceRuntime, retry: float) -> None:
    """Make the queue, then read it until it fails; again after `retry` seconds."""
    wakes = runtime.engine.wakes
    while True:
        try:
            url = await queue.ensure()
        except StageError as exc:
            wakes.covers = None
            log.warning(
                "aws event queue unavailable: stage waits poll only",
                queue=queue.queue_name,
                error=f"{exc.code}: {exc.message}",
                retry_seconds=retry,
            )
            await asyncio.sleep(retry)
            continue
        log.info("aws event queue read: HyperPod waits end on its events", queue=url)
        wakes.covers = covered_by_events
        try:
            while True:
                messages = await queue.receive()
                keys = [key for message in messages for key in wake_keys(message.body)]
                try:
                    await publish_wake(runtime.bus, wakes, keys)
                except Exception as exc:  # the other replicas' waits poll; this one's woke
                    log.warning("wake-up not published", error=f"{type(exc).__name__}: {exc}")
                await queue.delete(messages)
        except StageError as exc:
            wakes.covers = None
            log.warning(
                "aws event queue not readable: stage waits poll only",
                queue=queue.queue_name,
                error=f"{exc.code}: {exc.message}",
                retry_seconds=retry,
            )
            await asyncio.sleep(retry)


def build(aws: AwsClients, runtime: ServiceRuntime) -> Area:
    settings = EventSettings()

    async def follower(service: ServiceRuntime) -> None:
        if not settings.aws_events_queue:
            log.info("aws event queue off (AWS_EVENTS_QUEUE=false): stage waits poll only")
            return
        queue = EventQueue(aws, service.settings.aws_region)
        await follow(queue, service, settings.aws_events_retry_seconds)

    return Area(companions=(follower,))
