"""Event-driven stage waits: an AWS state-change event wakes the stage waiting on its resource.

AWS pushes some state changes through Amazon EventBridge: SageMaker HyperPod sends "SageMaker
HyperPod Cluster State Change" and "SageMaker HyperPod Cluster Node Health Event" (source
`aws.sagemaker`; "Events that Amazon SageMaker AI sends to Amazon EventBridge",
https://docs.aws.amazon.com/sagemaker/latest/dg/automating-sagemaker-with-eventbridge.html).
Amazon EKS sends none for a cluster's status (only add-on and Fargate events: "Amazon Elastic
Kubernetes Service events", https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-eks.html),
so EKS waits keep polling.

cluster-svc owns one SQS queue per account and served region, each the target of one
EventBridge rule (`EVENT_PATTERN`) of its region (EventBridge delivers an event to the rules of
the region it happened in), and long-polls each (`cluster_svc/areas/aws_events.py`). Each event
names its resources (the cluster's ARN); `wake_keys` takes them from a message body, the
receiving replica publishes them on the bus (`WAKE_SUBJECT`, core NATS, every replica
subscribed) and each replica's `Wakes` ends the wait of the stage whose external id is that ARN,
which polls at once. A node health event also tells the receiving replica's node watcher which
cluster to read again at once (`node_health_clusters`, `ClusterSignals`).

Every stage wait on a HyperPod cluster's ARN is woken by its state changes: a creation (to
InService or Failed), an instance group added, scaled or deleted and a software update (the
cluster goes Updating or SystemUpdating, then InService). Some ends are no state change, so
those waits keep their polling: a deletion's end (the cluster is gone; DescribeCluster's ClusterStatus has no
state after Deleting, and AWS documents no event for it), and a Continuous-provisioning
cluster's scale (it stays InService). Only the stages that declare `evented` (the creation)
stretch their polling while events flow: a wait armed on a key the live event source covers
(a HyperPod cluster of a region whose queue is read) polls at most every `evented_max` seconds
(a lost event costs that much lag, no more), every other wait as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Collection, Iterable
from typing import Any

from shared.logging import get_logger

log = get_logger("shared.wake")

SOURCE = "aws.sagemaker"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
DETAIL_TYPES = (STATE_CHANGE, NODE_HEALTH)
# The rule's pattern, as EventBridge matches it ("Amazon EventBridge event patterns",
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html): every field
# named must match one of the listed values.
EVENT_PATTERN: dict[str, list[str]] = {"source": [SOURCE], "detail-type": list(DETAIL_TYPES)}
# The most a wait on a covered resource goes without polling while events flow.
EVENTED_MAX_SECONDS = 60.0
_HYPERPOD_CLUSTER_ARN = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]+):[0-9]{12}:cluster/"
)


def matches(event: dict[str, Any]) -> bool:
    """Whether `event` is one EVENT_PATTERN selects (the queue receives nothing else; a message
    that is not one, say a test message, is deleted without waking anything)."""
    return all(event.get(name) in values for name, values in EVENT_PATTERN.items())


def _event(body: str) -> dict[str, Any] | None:
    try:
        event = json.loads(body)
    except ValueError:
        return None
    return event if isinstance(event, dict) and matches(event) else None


def wake_keys(body: str) -> list[str]:
    """The resource ARNs an SQS message's body (an EventBridge event, as EventBridge writes it
    to an SQS target) wakes: `resources`, and `detail.ClusterArn` when present."""
    event = _event(body)
    if event is None:
        return []
    keys = [r for r in event.get("resources") or [] if isinstance(r, str)]
    detail = event.get("detail")
    arn = detail.get("ClusterArn") if isinstance(detail, dict) else None
    if isinstance(arn, str) and arn not in keys:
        keys.append(arn)
    return keys


def node_health_clusters(body: str) -> list[str]:
    """The HyperPod clusters (ARNs) whose node health an SQS message's body reports changed: a
    "SageMaker HyperPod Cluster Node Health Event" names its cluster in `resources` and
    `detail.ClusterArn`; any other message, none."""
    event = _event(body)
    if event is None or event.get("detail-type") != NODE_HEALTH:
        return []
    return [key for key in wake_keys(body) if _HYPERPOD_CLUSTER_ARN.match(key)]


def covered_by_events(key: str, regions: Collection[str] | None = None) -> bool:
    """Whether events come for a stage waiting on `key`: a HyperPod cluster's ARN, of one of
    `regions` (the regions whose queue is read) when given."""
    found = _HYPERPOD_CLUSTER_ARN.match(key)
    if found is None:
        return False
    return regions is None or found.group("region") in regions


def region_of(arn: str) -> str | None:
    """The region of a HyperPod cluster's ARN (None for anything else)."""
    found = _HYPERPOD_CLUSTER_ARN.match(arn)
    return found.group("region") if found else None


class ClusterSignals:
    """Clusters whose node health an event reported changed, for the node watcher of this
    process: `notify` adds them, `wait` takes them (waiting up to `timeout` for the first).
    `live` holds the regions whose event queue is read (the watcher checks those clusters'
    events less often meanwhile)."""

    def __init__(self) -> None:
        self.live: set[str] = set()
        self._pending: set[str] = set()
        self._ready = asyncio.Event()

    def notify(self, clusters: Iterable[str]) -> None:
        added = set(clusters)
        if added:
            self._pending |= added
            self._ready.set()

    def covers(self, arn: str) -> bool:
        """Whether node health events come for the HyperPod cluster `arn` now."""
        return covered_by_events(arn, self.live)

    async def wait(self, timeout: float) -> set[str]:
        if not self._pending and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        taken, self._pending = self._pending, set()
        self._ready.clear()
        return taken


class Wakes:
    """The waits of one process, by external id. A stage arms a wait before it polls, so a
    wake-up arriving during the poll is not lost, then sleeps on it for its backoff delay."""

    def __init__(self, evented_max: float = EVENTED_MAX_SECONDS) -> None:
        self.evented_max = evented_max
        self._armed: dict[str, set[asyncio.Future[None]]] = {}
        # Set by the event source while its queue is read; None: polling only.
        self.covers: Callable[[str], bool] | None = None
        self.woken = 0  # waits ended by an event, for reports and tests

    def arm(self, key: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._armed.setdefault(key, set()).add(future)
        return future

    def disarm(self, key: str, future: asyncio.Future[None]) -> None:
        armed = self._armed.get(key)
        if armed is not None:
            armed.discard(future)
            if not armed:
                del self._armed[key]
        if not future.done():
            future.cancel()

    async def sleep(self, future: asyncio.Future[None], seconds: float) -> bool:
        """Sleep `seconds` or until woken; True when woken."""
        if not future.done():
            await asyncio.wait({future}, timeout=seconds)
        return future.done() and not future.cancelled()

    def wake(self, keys: Iterable[str]) -> int:
        """End the armed waits on `keys`; returns how many."""
        ended = 0
        for key in keys:
            for future in self._armed.pop(key, ()):
                if not future.done():
                    future.set_result(None)
                    ended += 1
        self.woken += ended
        return ended

    def poll_max(self, key: str, default: float) -> float:
        """The longest backoff step of a wait on `key`: longer while events cover it."""
        if self.covers is not None and self.covers(key):
            return max(default, self.evented_max)
        return default


def encode(keys: list[str]) -> bytes:
    return json.dumps({"keys": keys}).encode()


def decode(data: bytes) -> list[str]:
    try:
        value = json.loads(data)
    except ValueError:
        return []
    keys = value.get("keys") if isinstance(value, dict) else None
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
