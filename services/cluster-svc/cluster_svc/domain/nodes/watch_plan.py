"""The node watcher's AWS spending, decided per cluster per round (pure: the watcher in
cluster_svc/areas/nodes.py carries it out, within a declared budget per cluster per hour).

The AWS side of a cluster is read in full (ListClusterNodes, 100 nodes a page; DescribeCluster
for NodeRecovery; the newest HyperPod event) only when something says it changed: HyperPod
records every cluster, instance-group and instance change as a cluster event
(`ListClusterEvents`), so between full reads one call, the newest event (MaxResults=1,
Descending), is enough to know whether to read again. A full read also happens on the first
round, every `resync` seconds (the fallback for whatever no event reports), and when the
Kubernetes side disagrees with the last listing (a node joined or left the EKS cluster: the
Node list costs no AWS call and is read every round).

HyperPod keeps cluster events only for clusters with `NodeProvisioningMode=Continuous` (AWS,
"SageMaker HyperPod cluster events reference": "Events are accessible through the
ListClusterEvents and DescribeClusterEvent APIs ... for HyperPod clusters with
NodeProvisioningMode set to Continuous"). A cluster whose event check is refused is polled
instead: a full read each round the budget affords, as is a cluster with a node in flux.

While HyperPod's node health events for a cluster reach the control plane (EventBridge, its
region's queue read: shared/wake.py), an event has the cluster read in full at once, and the
checks above are the fallback: a settled cluster is looked at in AWS at most every `quiet`
seconds ("quiet" rounds cost no AWS call; Kubernetes is still read every round).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from cluster_svc.domain.nodes.health import NodeInstance

NODES_PER_PAGE = 100  # ListClusterNodes' MaxResults at most (botocore's sagemaker model)

Step = Literal["full", "events", "quiet"]
SETTLED = frozenset({"Running", "Failure"})  # HyperPod instance statuses that stay put


@dataclass
class ClusterWatch:
    """What the watcher knows of one cluster's AWS side between rounds."""

    observed_at: float | None = None  # monotonic time of the last full read
    pages: int = 1  # ListClusterNodes pages the last full read took
    newest_event: str | None = None  # EventId of the newest HyperPod event at that read
    changed: bool = False  # an event newer than the last full read was seen
    instances: list[NodeInstance] = field(default_factory=list)
    recovery: str | None = None
    events: bool = True  # False: the cluster keeps no events, polled instead
    kube_ids: frozenset[str] | None = None  # instance ids of the Kubernetes nodes at that read
    checked_at: float | None = None  # monotonic time of the last newest-event check


def pages_for(nodes: int) -> int:
    return max(1, math.ceil(nodes / NODES_PER_PAGE))


def full_cost(watch: ClusterWatch) -> int:
    """AWS calls of one full read: the node pages, DescribeCluster, the newest event."""
    return watch.pages + 2


def next_step(watch: ClusterWatch, now: float, resync: float, quiet: float | None = None) -> Step:
    """A full read when there is none yet, an event said so or the resync is due; else the
    one-call check of the newest event. With `quiet` (node health events flow for the
    cluster), a settled cluster looked at less than `quiet` seconds ago is left alone."""
    if watch.observed_at is None or watch.changed or in_flux(watch):
        return "full"
    if quiet is not None and now - last_look(watch) < quiet:
        return "quiet"
    if not watch.events:
        return "full"
    return "full" if now - watch.observed_at >= resync else "events"


def last_look(watch: ClusterWatch) -> float:
    """When the watcher last asked AWS about the cluster (a full read or an event check)."""
    looks = [t for t in (watch.observed_at, watch.checked_at) if t is not None]
    return max(looks) if looks else float("-inf")


def in_flux(watch: ClusterWatch) -> bool:
    """A node of the last listing is on its way somewhere (Pending, ShuttingDown, rebooting,
    under a deep health check): its end is not always an event, so the cluster is polled (a
    full read each round the budget affords) until every node is Running or Failure."""
    return any(i.status not in SETTLED for i in watch.instances)


def only_resync_due(watch: ClusterWatch) -> bool:
    """The full read is due for the resync alone (nothing says the cluster changed): it is
    made once one call is affordable, the rest taken on credit."""
    return (
        watch.observed_at is not None and not watch.changed and watch.events and not in_flux(watch)
    )


def kubernetes_disagrees(watch: ClusterWatch, kube_ids: frozenset[str]) -> bool:
    """Mark the cluster changed if a node joined or left its Kubernetes cluster since the last
    full read (a node that never registers does not keep it changed): True if so."""
    if watch.kube_ids is not None and kube_ids != watch.kube_ids:
        watch.changed = True
    return watch.changed


def saw_newest(watch: ClusterWatch, event_id: str | None) -> bool:
    """Record the newest event the check found; True if it is one the last read had not seen."""
    if event_id is not None and event_id != watch.newest_event:
        watch.changed = True
    return watch.changed


def read_in_full(
    watch: ClusterWatch,
    now: float,
    instances: list[NodeInstance],
    recovery: str | None,
    newest_event: str | None,
    kube_ids: frozenset[str] | None = None,
) -> None:
    watch.observed_at = now
    watch.kube_ids = kube_ids
    watch.pages = pages_for(len(instances))
    watch.newest_event = newest_event
    watch.changed = False
    watch.instances = instances
    watch.recovery = recovery


def idle_calls_per_hour(
    interval: float, resync: float, pages: int, per_hour: float, quiet: float | None = None
) -> float:
    """AWS calls an idle cluster costs in an hour: a check each round (each `quiet` seconds
    while its node health events flow) and a full read each resync, capped by its budget."""
    looks = 3600.0 / max(interval, quiet or 0.0)
    fulls = 3600.0 / resync
    return min(per_hour, (looks - fulls) + fulls * (pages + 2))
