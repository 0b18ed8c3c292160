"""The seam of HyperPod task governance between the simulated AWS (sim/aws) and the Kubernetes
emulator (sim/k8s): SageMaker's CreateComputeQuota / CreateClusterSchedulerConfig and their
updates are rendered in the EKS cluster by the task-governance add-on
(`amazon-sagemaker-hyperpod-taskgovernance`): team namespaces, Kueue queues, resource flavors
and workload priority classes. The simulated AWS gives the emulator the whole desired state of
a cluster each time it changes; the emulator tells nothing back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class QuotaResource:
    """One instance type's share in a compute quota (a ComputeQuotaResourceConfig)."""

    instance_type: str  # ml.p5.48xlarge
    count: int | None = None  # whole instances
    accelerators: int | None = None  # GPUs (nvidia.com/gpu)
    vcpu: float | None = None
    memory_gib: float | None = None
    # MIG partitions of the type's GPUs (an AcceleratorPartition): a profile such as
    # mig-1g.10gb and how many partitions of it
    mig_profile: str | None = None
    mig_count: int | None = None


@dataclass(frozen=True)
class TeamQuota:
    """A HyperPod task-governance compute quota (a team) as its add-on renders it in Kueue."""

    quota_id: str
    name: str
    team: str
    resources: tuple[QuotaResource, ...]
    strategy: str  # Lend | DontLend | LendAndBorrow
    borrow_limit_percent: int  # of the team's nominal quota, per resource
    absolute_borrow_limits: tuple[QuotaResource, ...] = ()
    preempt_team_tasks: str = "LowerPriority"  # Never | LowerPriority
    fair_share_weight: int | None = None
    active: bool = True


@dataclass(frozen=True)
class SchedulerPolicy:
    """A HyperPod cluster scheduler config (the cluster policy)."""

    config_id: str
    priority_classes: tuple[tuple[str, int], ...]  # (name, weight)
    fair_share: bool = True
    idle_resource_sharing: bool = False


@runtime_checkable
class TaskGovernanceHooks(Protocol):
    """What an emulator may offer beside KubeHooks: the Kubernetes side of HyperPod task
    governance (namespaces, Kueue queues, flavors and priority classes)."""

    def sync_task_governance(
        self, cluster_name: str, policy: SchedulerPolicy | None, teams: list[TeamQuota]
    ) -> None:
        """Make the cluster's task-governance objects match `policy` and `teams` (the whole
        desired state: objects of a quota or policy no longer listed are deleted)."""
        ...
