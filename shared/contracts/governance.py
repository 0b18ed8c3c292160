"""Contracts of task governance: the cluster's scheduler config (priority classes, fair share,
idle resource sharing), teams (SageMaker compute quotas), their commands and events, and the
answer of "why is my job pending?".

Shapes follow botocore's sagemaker model (CreateClusterSchedulerConfig, CreateComputeQuota):
`SchedulerConfig.PriorityClasses` holds at most 10 classes of weight 0-100;
`ComputeQuotaConfig.ComputeQuotaResources` at most 15 instance types, each with `Count`,
`Accelerators`, `VCpu`, `MemoryInGiB` or an `AcceleratorPartition` (MIG profile);
`ResourceSharingConfig.Strategy` is Lend, DontLend or LendAndBorrow with `BorrowLimit` (a
percentage of the team's quota, 0-10000); `PreemptTeamTasks` is Never or LowerPriority;
`ComputeQuotaTarget.FairShareWeight` is 0-100.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.boundary import GOVERNED_NAME_PATTERN, priority_class_name, team_name
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.validation import RuleViolation

TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
MAX_PRIORITY_CLASSES = 10
MAX_QUOTA_RESOURCES = 15
INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"
MIG_PATTERN = r"^mig-[1-7]g\.[0-9]+gb$"

Sharing = Literal["Lend", "DontLend", "LendAndBorrow"]
Preemption = Literal["Never", "LowerPriority"]


class PriorityClass(Spec):
    name: str = Field(
        max_length=40, pattern=GOVERNED_NAME_PATTERN, description="e.g. training, inference"
    )
    weight: int = Field(ge=0, le=100, description="higher is admitted first and may preempt")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return priority_class_name(value, "priority_classes.name")


DEFAULT_PRIORITY_CLASSES = (
    PriorityClass(name="inference", weight=100),
    PriorityClass(name="high", weight=90),
    PriorityClass(name="training", weight=50),
    PriorityClass(name="low", weight=10),
)


class TaskGovernanceChange(Spec):
    """Task governance of a cluster: the add-on and the scheduler config. Send only what
    changes; `enabled: true` on a cluster without it installs the add-on and creates the
    scheduler config (defaults: the four DEFAULT_PRIORITY_CLASSES, fair share and idle
    resource sharing on)."""

    enabled: bool | None = Field(
        None,
        description="install (true) or remove (false) the task-governance EKS add-on and the"
        " cluster's scheduler config",
    )
    priority_classes: list[PriorityClass] | None = Field(
        None,
        min_length=1,
        max_length=MAX_PRIORITY_CLASSES,
        description="the whole list of priority classes (name, weight 0-100)",
    )
    fair_share: bool | None = Field(None, description="FairShare Enabled|Disabled")
    idle_resource_sharing: bool | None = Field(
        None, description="IdleResourceSharing Enabled|Disabled: teams lend idle quota"
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        settings = (self.priority_classes, self.fair_share, self.idle_resource_sharing)
        if self.enabled is None and all(s is None for s in settings):
            raise RuleViolation(
                "the change names nothing",
                "send enabled and/or priority_classes, fair_share, idle_resource_sharing",
            )
        if self.enabled is False and any(s is not None for s in settings):
            raise RuleViolation(
                "enabled: false removes the scheduler config, so it takes no settings",
                "send enabled: false alone, or enabled: true with the settings",
            )
        if self.priority_classes is not None:
            names = [p.name for p in self.priority_classes]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise RuleViolation(
                    f"priority_classes names {twice[0]} twice",
                    "give each priority class one entry",
                )
        return self

    def requested(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class MigPartition(Spec):
    profile: str = Field(pattern=MIG_PATTERN, description="a MIG profile, e.g. mig-1g.10gb")
    count: int = Field(ge=0, le=10_000_000, description="partitions of the profile")


class QuotaResource(Spec):
    """One instance type of a team's quota: whole instances (count), or accelerators, vCPUs,
    memory or MIG partitions of that type."""

    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN, examples=["ml.p5.48xlarge"], description="the type"
    )
    count: int | None = Field(None, ge=0, le=10_000_000, description="instances")
    accelerators: int | None = Field(None, ge=0, le=10_000_000, description="GPUs / chips")
    vcpu: float | None = Field(None, ge=0, le=10_000_000, description="vCPUs")
    memory_gib: float | None = Field(None, ge=0, le=10_000_000, description="memory, GiB")
    mig: MigPartition | None = Field(None, description="MIG partitions of the type's GPUs")

    @model_validator(mode="after")
    def _some(self) -> Self:
        amounts = (self.count, self.accelerators, self.vcpu, self.memory_gib, self.mig)
        if all(a is None for a in amounts):
            raise RuleViolation(
                f"the quota of {self.instance_type} names no amount",
                "send count (instances) or accelerators, vcpu, memory_gib or mig",
            )
        if self.count is not None and any(a is not None for a in amounts[1:]):
            raise RuleViolation(
                f"the quota of {self.instance_type} names instances and parts of them",
                "send count alone (whole instances), or accelerators/vcpu/memory_gib/mig",
            )
        return self

    def to_aws(self) -> dict[str, Any]:
        out: dict[str, Any] = {"InstanceType": self.instance_type}
        if self.count is not None:
            out["Count"] = self.count
        if self.accelerators is not None:
            out["Accelerators"] = self.accelerators
        if self.vcpu is not None:
            out["VCpu"] = self.vcpu
        if self.memory_gib is not None:
            out["MemoryInGiB"] = self.memory_gib
        if self.mig is not None:
            out["AcceleratorPartition"] = {"Type": self.mig.profile, "Count": self.mig.count}
        return out


def _unique_types(resources: list[QuotaResource] | None, field_name: str) -> None:
    types = [r.instance_type for r in resources or []]
    twice = sorted({t for t in types if types.count(t) > 1})
    if twice:
        raise RuleViolation(
            f"{field_name} names {twice[0]} twice", "give each instance type one entry"
        )


class TeamSettings(Spec):
    """What a team's compute quota says besides its name (every field optional in a change)."""

    resources: list[QuotaResource] | None = Field(
        None, min_length=1, max_length=MAX_QUOTA_RESOURCES, description="the quota per type"
    )
    sharing: Sharing | None = Field(
        None,
        description="Lend (idle quota to others), DontLend, or LendAndBorrow (also borrow"
        " others' idle quota)",
    )
    borrow_limit: int | None = Field(
        None,
        ge=0,
        le=10_000,
        description="with LendAndBorrow: how much it may borrow, in % of its own quota",
    )
    preempt: Preemption | None = Field(
        None, description="LowerPriority: the team's high-priority tasks preempt its lower ones"
    )
    fair_share_weight: int | None = Field(None, ge=0, le=100, description="0-100")
    active: bool | None = Field(None, description="ActivationState Enabled|Disabled")
    description: str | None = Field(None, max_length=1024, description="free text")

    @model_validator(mode="after")
    def _rules(self) -> Self:
        _unique_types(self.resources, "resources")
        if self.borrow_limit is not None and self.sharing not in (None, "LendAndBorrow"):
            raise RuleViolation(
                f"borrow_limit applies to sharing LendAndBorrow, not {self.sharing}",
                "drop borrow_limit, or send sharing: LendAndBorrow",
            )
        return self


class NewTeam(TeamSettings):
    """A team: a compute quota on the cluster, its namespace hyperpod-ns-<name>."""

    name: str = Field(
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        examples=["team-a"],
        description="the team's name (namespace hyperpod-ns-<name>)",
    )
    resources: list[QuotaResource] | None = Field(
        min_length=1, max_length=MAX_QUOTA_RESOURCES, description="the quota per instance type"
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return team_name(value, "name")


class TeamChange(TeamSettings):
    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_dump(exclude_none=True):
            raise RuleViolation(
                "the change names nothing",
                "send at least one of resources, sharing, borrow_limit, preempt,"
                " fair_share_weight, active, description",
            )
        return self


class GovernanceTarget(Spec):
    """What the gateway resolved from its read model."""

    cluster: str
    region: str
    eks_cluster: str
    hyperpod_cluster: str
    bucket: str | None = None  # the cluster's shared bucket: each team's namespace mounts it


class UpdateTaskGovernance(Command):
    domain = "cluster"
    verb = "update_task_governance"

    target: GovernanceTarget
    change: TaskGovernanceChange


class CreateTeam(Command):
    domain = "cluster"
    verb = "create_team"

    target: GovernanceTarget
    team: NewTeam


class UpdateTeam(Command):
    domain = "cluster"
    verb = "update_team"

    target: GovernanceTarget
    team: str
    change: TeamChange


class DeleteTeam(Command):
    domain = "cluster"
    verb = "delete_team"

    target: GovernanceTarget
    team: str


class TaskGovernanceUpdated(Event):
    what = "task_governance_updated"
    cluster: str
    changed: dict[str, Any]


class TeamCreated(Event):
    what = "team_created"
    cluster: str
    team: str
    compute_quota_id: str | None = None


class TeamUpdated(Event):
    what = "team_updated"
    cluster: str
    team: str
    changed: dict[str, Any]


class TeamDeleted(Event):
    what = "team_deleted"
    cluster: str
    team: str


class PendingExplanation(Spec):
    """Why a job waits: one sentence, the facts it was drawn from, and the fixes."""

    cluster: str
    job: str
    namespace: str
    pending: bool = Field(description="false: the job is admitted (or running)")
    reason: str = Field(description="a short code: quota, capacity, unschedulable, ...")
    summary: str = Field(description="the answer in one or two sentences")
    fixes: list[str] = Field(default_factory=list, description="what would let it run")
    facts: dict[str, Any] = Field(default_factory=dict, description="what the answer rests on")
