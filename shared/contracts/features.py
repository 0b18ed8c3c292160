"""Contracts of managed features (the Advanced Features panel): the change, its command, events.

A change carries only the fields the caller wants changed (every field is optional; `None`
means "leave as it is"). cluster-svc reads the actual state of each named feature from AWS and
the cluster, and acts only where requested differs from actual.
"""

from __future__ import annotations

from typing import Any, Self

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


class AutoscalingChange(Spec):
    enabled: bool = Field(
        description="HyperPod managed autoscaling (AutoScaling Mode Enable, AutoScalerType "
        "Karpenter). Scope: " + AUTOSCALING_SCOPE
    )


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
                "tiered_checkpointing, autoscaling",
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
