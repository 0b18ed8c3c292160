"""What SageMaker and EKS report now about a cluster's task governance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# SchedulerResourceStatus (botocore's sagemaker model)
SETTLED = frozenset({"Created", "Updated"})
BUSY = frozenset({"Creating", "Updating", "Deleting"})
FAILED = frozenset(
    {
        "CreateFailed",
        "CreateRollbackFailed",
        "UpdateFailed",
        "UpdateRollbackFailed",
        "DeleteFailed",
        "DeleteRollbackFailed",
    }
)
GONE = frozenset({"Deleted"})


@dataclass(frozen=True)
class SchedulerActual:
    id: str
    name: str
    version: int
    status: str
    config: Mapping[str, Any]  # SchedulerConfig as DescribeClusterSchedulerConfig answers it
    failure: str | None = None


@dataclass(frozen=True)
class QuotaActual:
    id: str
    name: str
    team: str
    version: int
    status: str
    config: Mapping[str, Any]  # ComputeQuotaConfig
    fair_share_weight: int | None = None
    activation: str | None = None
    description: str | None = None
    failure: str | None = None

    def params(self) -> dict[str, Any]:
        """The quota as the create/update calls take it."""
        target: dict[str, Any] = {"TeamName": self.team}
        if self.fair_share_weight is not None:
            target["FairShareWeight"] = self.fair_share_weight
        out: dict[str, Any] = {
            "ComputeQuotaConfig": dict(self.config),
            "ComputeQuotaTarget": target,
        }
        if self.activation is not None:
            out["ActivationState"] = self.activation
        if self.description:
            out["Description"] = self.description
        return out


@dataclass(frozen=True)
class GovernanceActual:
    cluster: str
    eks_cluster: str
    hyperpod_cluster: str
    hyperpod_arn: str | None = None  # None: no such HyperPod cluster
    hyperpod_status: str | None = None
    instance_types: frozenset[str] = frozenset()  # of the HyperPod cluster's instance groups
    addon: str | None = None  # the task-governance add-on's status (None: absent)
    scheduler: SchedulerActual | None = None
    quotas: Mapping[str, QuotaActual] = field(default_factory=dict)  # by team
    bucket: str | None = None  # the cluster's shared bucket (team namespaces mount it)
    region: str = ""
    storage: Mapping[str, TeamStorage] = field(default_factory=dict)  # by team (read if asked)

    @property
    def addon_ready(self) -> bool:
        return self.addon in ("ACTIVE", "DEGRADED")

    @property
    def enabled(self) -> bool:
        """The add-on serves and the scheduler config exists (teams can be made)."""
        return self.addon_ready and self.scheduler is not None

    def priority_classes(self) -> dict[str, int]:
        if self.scheduler is None:
            return {}
        return {
            str(p["Name"]): int(p["Weight"])
            for p in self.scheduler.config.get("PriorityClasses") or []
        }


@dataclass(frozen=True)
class TeamStorage:
    """What a team's namespace holds of the shared bucket (Kubernetes, read live)."""

    namespace: bool  # task governance made the team's namespace
    volume: Mapping[str, Any] | None = None  # the team's PersistentVolume of the bucket
    claim: Mapping[str, Any] | None = None  # its claim s3-claim in the team's namespace
