"""AWS events for the stage waits and the node watcher (shared/wake.py): cluster-svc's queues of
SageMaker HyperPod's EventBridge events, one per served region (HYPERPILOT_AWS_REGIONS), each
long-polled in a task of its own, each event waking the waits on its cluster in every replica.

"Both the EventBridge rule and the source event that it monitors must exist in the same AWS
Region" (AWS Knowledge Center, https://repost.aws/knowledge-center/use-eventbridge-rule-across-regions),
so every served region gets its own rule and queue. At start each is made (adapters/aws_events.py: idempotent,
so every replica does it). While a region's queue is read, the HyperPod waits of that region
poll at most every POLL_MAX_EVENTED_SECONDS (default 60) and end at once on an event, and a
node health event has this replica's node watcher read that cluster's nodes at once; when the
queue cannot be made or read (no permission for SQS or EventBridge, say), the log says so
("aws event queue unavailable: stage waits poll only") and that region's waits poll as without
events, the queue tried again every AWS_EVENTS_RETRY_SECONDS. AWS_EVENTS_QUEUE=false turns them
off (polling only).

Any replica may receive a message: it wakes its own waits at once and publishes the event's
resources on `wake.aws` for the others (core NATS), hands a node health event's cluster to its
own node watcher (one read per event, not one per replica), then deletes the message.
"""

from __future__ import annotations

import asyncio
import functools

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.aws_events import EventQueue
from cluster_svc.areas import Area
from shared.errors import StageError
from shared.logging import get_logger
from shared.service import ServiceRuntime, publish_wake
from shared.wake import ClusterSignals, covered_by_events, node_health_clusters, wake_keys

log = get_logger("cluster_svc.aws_events")


class EventSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    aws_events_queue: bool = Field(
        True, description="Read SageMaker HyperPod's EventBridge events from an SQS queue"
    )
    aws_events_retry_seconds: float = Field(
        300.0, gt=0, description="How soon an event queue that could not be made is tried again"
    )


async def follow(
    queue: EventQueue, runtime: ServiceRuntime, retry: float, signals: ClusterSignals
) -> None:
    """Make the queue, then read it until it fails; again after `retry` seconds. While it is
    read its region is in `signals.live`."""
    wakes = runtime.engine.wakes
    # The waits on the HyperPod clusters of the regions whose queue is read are covered.
    wakes.covers = functools.partial(covered_by_events, regions=signals.live)
    while True:
        try:
            url = await queue.ensure()
        except StageError as exc:
            signals.live.discard(queue.region)
            log.warning(
                "aws event queue unavailable: stage waits poll only",
                queue=queue.queue_name,
                region=queue.region,
                error=f"{exc.code}: {exc.message}",
                retry_seconds=retry,
            )
            await asyncio.sleep(retry)
            continue
        log.info(
            "aws event queue read: HyperPod waits end on its events",
            queue=url,
            region=queue.region,
        )
        signals.live.add(queue.region)
        try:
            while True:
                messages = await queue.receive()
                keys = [key for message in messages for key in wake_keys(message.body)]
                signals.notify(c for m in messages for c in node_health_clusters(m.body))
                try:
                    await publish_wake(runtime.bus, wakes, keys)
                except Exception as exc:  # the other replicas' waits poll; this one's woke
                    log.warning("wake-up not published", error=f"{type(exc).__name__}: {exc}")
                await queue.delete(messages)
        except StageError as exc:
            signals.live.discard(queue.region)
            log.warning(
                "aws event queue not readable: stage waits poll only",
                queue=queue.queue_name,
                region=queue.region,
                error=f"{exc.code}: {exc.message}",
                retry_seconds=retry,
            )
            await asyncio.sleep(retry)


def build(aws: AwsClients, runtime: ServiceRuntime, signals: ClusterSignals) -> Area:
    settings = EventSettings()

    async def follower(service: ServiceRuntime) -> None:
        if not settings.aws_events_queue:
            log.info("aws event queue off (AWS_EVENTS_QUEUE=false): stage waits poll only")
            return
        regions = service.settings.served_regions
        await asyncio.gather(
            *(
                asyncio.create_task(
                    follow(
                        EventQueue(aws, region), service, settings.aws_events_retry_seconds, signals
                    ),
                    name=f"aws-events-{region}",
                )
                for region in regions
            )
        )

    return Area(companions=(follower,))
