"""Contracts of capacity now: GPUs, EFA devices and memory per node, instance group, cluster and
fleet (total = the node's allocatable, allocated = the requests of the non-terminated pods bound
to it, free = total - allocated), the nodes that take no new pods, the pods waiting for a node,
and the list price per hour of what runs.

Read by `GET /api/v1/clusters/{name}/capacity` and `GET /api/v1/capacity` (docs/capacity.md).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Read(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Amount(_Read):
    """One resource: total (allocatable), allocated (pod requests) and free."""

    total: int = Field(description="The nodes' allocatable amount")
    allocated: int = Field(description="Requested by non-terminated pods bound to the nodes")
    free: int = Field(description="total - allocated (negative if overcommitted)")

    @classmethod
    def of(cls, total: int, allocated: int) -> Amount:
        return cls(total=total, allocated=allocated, free=total - allocated)

    def __add__(self, other: Amount) -> Amount:
        return Amount.of(self.total + other.total, self.allocated + other.allocated)


ZERO = Amount(total=0, allocated=0, free=0)


class Resources(_Read):
    gpus: Amount = Field(description="nvidia.com/gpu")
    efa: Amount = Field(description="vpc.amazonaws.com/efa")
    memory_bytes: Amount = Field(description="memory, in bytes")

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            gpus=self.gpus + other.gpus,
            efa=self.efa + other.efa,
            memory_bytes=self.memory_bytes + other.memory_bytes,
        )


NO_RESOURCES = Resources(gpus=ZERO, efa=ZERO, memory_bytes=ZERO)


class PriceSource(_Read):
    """Where the prices come from and of when."""

    source: str = Field(description="The table's source: the AWS Price List API and endpoint")
    as_of: date = Field(description="The date the prices were published")
    currency: str = "USD"
    region: str = Field(description="The region the prices are for")
    fetched_at: datetime | None = Field(None, description="When the table was read from AWS")


class NodeCapacity(_Read):
    name: str = Field(description="The Kubernetes node name")
    instance_id: str | None
    instance_group: str | None
    instance_type: str | None
    resources: Resources
    pods: int = Field(description="Non-terminated pods bound to the node")
    schedulable: bool = Field(description="False: cordoned, tainted unhealthy or not Ready")
    healthy: bool = Field(description="Ready and HyperPod's health label Schedulable")
    reasons: list[str] = Field(description="Why the node is unschedulable or unhealthy")


class GroupCapacity(_Read):
    name: str = Field(description="The instance group (label instance-group-name)")
    instance_type: str | None
    nodes: int
    schedulable_nodes: int
    resources: Resources
    price_per_node_hour: float | None = Field(description="List price of one node, USD/h")
    cost_per_hour: float | None = Field(description="nodes x list price, USD/h; None: unpriced")


class PendingPod(_Read):
    namespace: str
    name: str
    gpus: int
    efa: int
    memory_bytes: int
    instance_group: str | None = Field(description="The instance group its nodeSelector names")
    instance_type: str | None = Field(description="The instance type its nodeSelector names")
    reason: str | None = Field(description="The scheduler's message, if it gave one")


class WorkloadCost(_Read):
    """What the pods of one job, or of one team's namespace, cost at list prices: each pod's
    share of its node (its GPUs of the node's, or its memory on a node without GPUs) x the
    node's price per hour; so far = that x the time the pod has run (until it finished, for a
    finished pod still on the cluster)."""

    namespace: str
    name: str = Field(description="The job (label hyperpilot.dev/job) or the team")
    pods: int = Field(description="Its running pods")
    cost_per_hour: float = Field(description="USD/h now")
    running_hours: float = Field(description="Its longest-running pod's hours")
    cost_so_far: float = Field(description="USD: per pod, its share x price x its running time")


class FileSystemFacts(_Read):
    """An FSx for Lustre file system a claim of the cluster mounts, as recorded."""

    claim: str
    file_system_id: str
    source: str  # default | existing | created
    capacity_gib: int | None = None
    deployment_type: str | None = None
    throughput_per_tib: int | None = None


class InfrastructureFacts(_Read):
    """What the cluster runs besides its nodes that is billed by the hour (from its record)."""

    nat_gateways: int = 0
    file_systems: list[FileSystemFacts] = Field(default_factory=list)


class InfrastructureCost(_Read):
    """One NAT gateway or FSx file system of the cluster at list price."""

    kind: Literal["nat_gateway", "fsx_file_system"]
    name: str
    description: str
    per_hour: float | None = Field(description="USD/h; null when the price table has none")


class ClusterCapacity(_Read):
    cluster: str
    resources: Resources
    groups: list[GroupCapacity]
    nodes: list[NodeCapacity]
    pending: list[PendingPod]
    cost_per_hour: float = Field(description="Priced groups plus infrastructure, USD/h")
    unpriced_instance_types: list[str] = Field(description="Instance types with no list price")
    prices: PriceSource
    infrastructure: list[InfrastructureCost] = Field(
        default_factory=list, description="NAT gateways and FSx file systems, USD/h"
    )
    jobs: list[WorkloadCost] = Field(
        default_factory=list, description="Per job with running pods (label hyperpilot.dev/job)"
    )
    teams: list[WorkloadCost] = Field(
        default_factory=list, description="Per team namespace (hyperpod-ns-<team>)"
    )
    node_total: int | None = Field(
        None, description="Every node of the cluster; `nodes` is one page of them when less"
    )
    next_after: str | None = Field(
        None, description="The cursor of the next page of nodes (`after`); null on the last"
    )


class ClusterSummary(_Read):
    """One cluster in the fleet view; `error` says why it could not be read."""

    cluster: str
    readable: bool
    error: str | None = None
    resources: Resources = NO_RESOURCES
    nodes: int = 0
    unschedulable_nodes: int = 0
    pending_pods: int = 0
    pending_gpus: int = 0
    cost_per_hour: float = 0.0


class FleetCapacity(_Read):
    clusters: list[ClusterSummary]
    resources: Resources = Field(description="Sum over the readable clusters")
    pending_pods: int
    cost_per_hour: float = Field(description="Sum over the readable clusters, USD/h")
    prices: PriceSource
