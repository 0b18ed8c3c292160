"""Contracts of instance groups: commands, their request specs and events.

An add settles a whole group in one create-time operation. An update carries only the fields the
caller changed (`InstanceGroupChange`: a field left out, or null, is unchanged); capacity type,
training plan, network interface mode and instance type are fixed for the group's life, a rule
checked against the group's actual configuration. A software update rolls through the groups
with a deployment config.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.contracts.cluster import MAX_INSTANCE_GROUPS as MAX_INSTANCE_GROUPS
from shared.contracts.cluster import (
    MAX_INSTANCES,
    ML_INSTANCE_PATTERN,
    NAME_PATTERN,
    TRAINING_PLAN_ARN_PATTERN,
    CapacityType,
    DeepHealthCheck,
    InstanceGroupSpec,
    InterfaceType,
    Taint,
)
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.validation import RuleViolation

LIFECYCLE_URI_PATTERN = r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?$"

# Fields fixed for the life of a group: a change is a rule violation whose way out is a new group.
IMMUTABLE_FIELDS = ("instance_type", "capacity_type", "training_plan_arn", "interface_type")


class NewInstanceGroup(InstanceGroupSpec):
    """An instance group added to an existing cluster (the create-time spec, plus its own
    lifecycle scripts if it should not use the cluster's)."""

    lifecycle_script_uri: str | None = Field(
        None,
        pattern=LIFECYCLE_URI_PATTERN,
        description="S3 prefix of the group's lifecycle scripts; the cluster's if omitted",
    )

    def group_spec(self) -> InstanceGroupSpec:
        return InstanceGroupSpec.model_validate(
            self.model_dump(exclude={"lifecycle_script_uri"}, exclude_unset=True)
        )


class InstanceGroupChange(Spec):
    """An explicit diff of one instance group: only the fields sent are changed."""

    count: int | None = Field(None, ge=0, le=MAX_INSTANCES, description="Instances to run")
    min_count: int | None = Field(
        None, ge=0, le=MAX_INSTANCES, description="Fewest instances to keep"
    )
    ebs_volume_gb: int | None = Field(
        None, ge=1, le=16384, description="EBS volume per instance, GB (can only grow)"
    )
    deep_health_checks: list[DeepHealthCheck] | None = Field(
        None, description="On-start deep health checks of new nodes"
    )
    labels: dict[str, str] | None = Field(None, description="Kubernetes labels (the whole map)")
    taints: list[Taint] | None = Field(None, max_length=50, description="Kubernetes taints")
    mig_profile: str | None = Field(
        None,
        pattern=r"^(mig-[1-7]g\.[0-9]{1,3}gb|disabled)$",
        description="Repartition the group's GPUs into this MIG profile (the label "
        "nvidia.com/mig.config), or disabled for whole GPUs",
    )
    # Fixed for the group's life: accepted only when equal to the actual value.
    instance_type: str | None = Field(
        None, pattern=ML_INSTANCE_PATTERN, description="fixed: only the current value"
    )
    capacity_type: CapacityType | None = Field(None, description="fixed: only the current value")
    training_plan_arn: str | None = Field(
        None, pattern=TRAINING_PLAN_ARN_PATTERN, description="fixed: only the current value"
    )
    interface_type: InterfaceType | None = Field(None, description="fixed: only the current value")

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str] | None) -> dict[str, str] | None:
        return None if labels is None else InstanceGroupSpec._labels(labels)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.changed():
            raise RuleViolation(
                "the change names no field",
                "send at least one of: " + ", ".join(sorted(type(self).model_fields)),
            )
        if self.min_count is not None and self.count is not None and self.min_count > self.count:
            raise RuleViolation(
                f"min_count {self.min_count} exceeds count {self.count}",
                "make min_count at most count",
            )
        return self

    def changed(self) -> dict[str, Any]:
        """The fields the caller set, as JSON."""
        return self.model_dump(mode="json", exclude_none=True)


class BatchSize(Spec):
    type: Literal["count", "percentage"] = Field(
        "count", description="count: instances per batch; percentage: of the group's capacity"
    )
    value: int = Field(1, ge=1, le=MAX_INSTANCES, description="instances, or 1-100 %")

    @model_validator(mode="after")
    def _percentage(self) -> Self:
        if self.type == "percentage" and self.value > 100:
            raise RuleViolation(
                f"a batch of {self.value}% is more than the whole group", "use 1 to 100"
            )
        return self


class SoftwareUpdateSpec(Spec):
    """UpdateClusterSoftware with a rolling deployment config."""

    instance_groups: list[str] | None = Field(
        None, description="Groups to update; every group if omitted", max_length=MAX_INSTANCE_GROUPS
    )
    image_id: str | None = Field(
        None,
        pattern=r"^(ami-[0-9a-f]{8,17}|default|latest)$",
        description="AMI to move to (an ami-... id); the latest HyperPod release if omitted",
    )
    batch_size: BatchSize = Field(default_factory=BatchSize, description="Nodes per batch")
    rollback_batch_size: BatchSize | None = Field(
        None, description="Nodes per rollback batch; omitted: not sent"
    )
    wait_interval_seconds: int = Field(
        0, ge=0, le=3600, description="Pause between batches, seconds"
    )
    rollback_alarms: list[str] = Field(
        default_factory=list, max_length=10, description="CloudWatch alarms that roll back"
    )

    @field_validator("instance_groups")
    @classmethod
    def _groups(cls, groups: list[str] | None) -> list[str] | None:
        if groups is None:
            return None
        if not groups:
            raise RuleViolation(
                "instance_groups is empty", "name at least one group, or omit it for all"
            )
        for name in groups:
            if not re.match(NAME_PATTERN, name):
                raise RuleViolation(
                    f"{name!r} is not an instance group name", "use a group's name as listed"
                )
        if len(set(groups)) != len(groups):
            raise RuleViolation("instance_groups repeats a name", "name each group once")
        return groups


# ---- commands ------------------------------------------------------------------------------


class InstanceGroupCommand(Command):
    """What every instance-group command knows of its cluster."""

    cluster: str  # the Hyperpilot cluster name
    hyperpod_cluster: str  # the HyperPod cluster's name
    region: str
    # The create operation's stage outputs (empty for an imported cluster): subnets, security
    # group, execution role, lifecycle scripts, the VPC's private route table.
    resources: dict[str, dict[str, Any]] = {}


class AddInstanceGroup(InstanceGroupCommand):
    domain = "cluster"
    verb = "add_instance_group"

    group: NewInstanceGroup
    cluster_zone_id: str | None = None  # the cluster's compute zone (where a group goes by default)


class UpdateInstanceGroup(InstanceGroupCommand):
    domain = "cluster"
    verb = "update_instance_group"

    group: str
    change: InstanceGroupChange


class DeleteInstanceGroup(InstanceGroupCommand):
    domain = "cluster"
    verb = "delete_instance_group"

    group: str


class UpdateClusterSoftware(InstanceGroupCommand):
    domain = "cluster"
    verb = "update_software"

    spec: SoftwareUpdateSpec


# ---- events --------------------------------------------------------------------------------


class InstanceGroupAdded(Event):
    what = "instance_group_added"
    cluster: str
    name: str
    instance_type: str
    count: int
    subnet_id: str | None = None


class InstanceGroupUpdated(Event):
    what = "instance_group_updated"
    cluster: str
    name: str
    changes: dict[str, Any]  # field -> {"actual", "requested"}


class InstanceGroupDeleted(Event):
    what = "instance_group_deleted"
    cluster: str
    name: str


class ClusterSoftwareUpdated(Event):
    what = "cluster_software_updated"
    cluster: str
    instance_groups: list[str]
