"""Contracts of managed features (the Advanced Features panel): the change, its command, events.

A change carries only the fields the caller wants changed (every field is optional; `None`
means "leave as it is"). cluster-svc reads the actual state of each named feature from AWS and
the cluster, and acts only where requested differs from actual.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.validation import RuleViolation

DEFAULT_MEMORY_PERCENTAGE = 20
AUTOSCALING_SCOPE = (
    "managed autoscaling scales HyperPod instance groups of this cluster (through HyperPod's "
    "managed Karpenter); it does not manage general EC2 capacity, EKS node groups or instances "
    "outside the cluster's instance groups"
)


class TieredCheckpointingChange(Spec):
    enabled: bool | None = Field(
        None, description="Managed tiered checkpointing (TieredStorageConfig Mode Enable|Disable)"
    )
    memory_percentage: int | None = Field(
        None,
        ge=1,
        le=100,
        description="Share of each instance's memory for checkpoints "
        f"(InstanceMemoryAllocationPercentage); {DEFAULT_MEMORY_PERCENTAGE} when first enabled",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.enabled is None and self.memory_percentage is None:
            raise RuleViolation(
                "tiered_checkpointing names no change",
                "send enabled and/or memory_percentage, or leave tiered_checkpointing out",
            )
        if self.enabled is False and self.memory_percentage is not None:
            raise RuleViolation(
                "memory_percentage only applies while tiered checkpointing is enabled",
                "drop memory_percentage, or send enabled: true",
            )
        return self


NODE_POOL_LIMIT = 10  # pools one cluster's autoscaling declares here
POOL_GROUPS_LIMIT = 10  # instance groups one HyperpodNodeClass may name (the AWS guide's limit)


class NodePoolSpec(Spec):
    """One Karpenter NodePool of HyperPod managed autoscaling and its HyperpodNodeClass (both
    named `name`): the instance groups it may scale, its weight among pools, its GPU limit and
    its consolidation ("Create a NodeClass" and "Create a NodePool" of the HyperPod autoscaling
    guide; NodePool's spec.weight, spec.limits, spec.disruption as Karpenter defines them)."""

    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="the NodePool's and its HyperpodNodeClass's name",
    )
    instance_groups: list[str] = Field(
        min_length=1,
        max_length=POOL_GROUPS_LIMIT,
        description="the instance groups this pool may scale",
    )
    weight: int | None = Field(
        None, ge=1, le=100, description="Karpenter tries pools of higher weight first"
    )
    gpu_limit: int | None = Field(
        None, ge=0, le=100_000, description="most nvidia.com/gpu the pool's nodes may add up to"
    )
    consolidation: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        "WhenEmpty", description="when Karpenter removes the pool's nodes"
    )
    consolidate_after: str = Field(
        "5m", pattern=r"^[0-9]{1,5}(s|m|h)$", description="how long a node waits, e.g. 5m"
    )

    @model_validator(mode="after")
    def _groups(self) -> Self:
        if len(set(self.instance_groups)) != len(self.instance_groups):
            raise RuleViolation(
                f"node pool {self.name} names an instance group twice", "name each group once"
            )
        return self


class AutoscalingChange(Spec):
    enabled: bool = Field(
        description="HyperPod managed autoscaling (AutoScaling Mode Enable, AutoScalerType "
        "Karpenter). Scope: " + AUTOSCALING_SCOPE
    )
    node_pools: list[NodePoolSpec] | None = Field(
        None,
        max_length=NODE_POOL_LIMIT,
        description="the NodePools, each over some instance groups; omitted: one pool "
        "(hyperpilot) over every group",
    )

    @model_validator(mode="after")
    def _pools(self) -> Self:
        if self.node_pools is None:
            return self
        if not self.enabled:
            raise RuleViolation(
                "autoscaling.node_pools only apply while autoscaling is enabled",
                "drop node_pools, or send enabled: true",
            )
        if not self.node_pools:
            raise RuleViolation(
                "autoscaling.node_pools is empty",
                "declare at least one pool, or omit node_pools for one pool over every group",
            )
        names = [p.name for p in self.node_pools]
        if len(set(names)) != len(names):
            raise RuleViolation("two node pools have the same name", "name each pool once")
        return self


class FeaturesChange(Spec):
    """Only the features to change; each is dependency-aware (prerequisites come first)."""

    training_operator: bool | None = Field(
        None,
        description="HyperPod training operator EKS add-on (installs cert-manager first)",
    )
    inference_operator: bool | None = Field(
        None,
        description="HyperPod inference operator (installs cert-manager first)",
    )
    spaces: bool | None = Field(
        None,
        description="SageMaker Spaces add-on: IDEs and notebooks (installs cert-manager first)",
    )
    observability: bool | None = Field(
        None,
        description="HyperPod observability add-on with its Prometheus (AMP) and Grafana "
        "workspaces: GPU (DCGM) and EFA metrics",
    )
    container_insights: bool | None = Field(
        None,
        description="Container Insights: the CloudWatch observability EKS add-on",
    )
    hami: bool | None = Field(
        None,
        description="HAMi GPU sharing (scheduler, device plugin on nodes labelled gpu=on): "
        "jobs' gpu_memory_mib and gpu_cores need it",
    )
    tiered_checkpointing: TieredCheckpointingChange | None = Field(
        None, description="Managed tiered checkpointing: enabled and/or memory_percentage"
    )
    autoscaling: AutoscalingChange | None = Field(
        None, description="HyperPod managed autoscaling (Karpenter) of the instance groups"
    )

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_dump(exclude_none=True):
            raise RuleViolation(
                "the change names no feature",
                "send at least one of training_operator, inference_operator, "
                "tiered_checkpointing, autoscaling, observability, container_insights, spaces, hami",
            )
        return self

    def requested(self) -> dict[str, Any]:
        """The change as sent: only the fields that carry a value."""
        return self.model_dump(mode="json", exclude_none=True)


class FeatureTarget(Spec):
    """Where the features live: resolved by the gateway from the cluster record."""

    eks_cluster: str
    hyperpod_cluster: str | None = None
    bucket: str | None = None  # the cluster's S3 bucket (checkpoints persist there)


class UpdateFeatures(Command):
    domain = "cluster"
    verb = "update_features"

    cluster: str  # Hyperpilot's name of the cluster (role names derive from it)
    region: str
    target: FeatureTarget
    changes: FeaturesChange


class FeaturesUpdated(Event):
    what = "features_updated"
    cluster: str
    changed: dict[str, Any]  # feature -> {actual, requested} as the operation found them
