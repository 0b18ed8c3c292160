"""The cluster contract: what a user asks for when creating or importing a cluster.

Only decision-grade fields are required (name, the compute Availability Zone, instance groups);
networking, roles and storage have sound defaults. These models validate REST bodies, MCP
arguments and UI forms alike; rules that need live state (offerings, quotas, training plans) are
checked by cluster-svc before anything is created.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.contracts.gpu import (
    MIG_CONFIG_LABEL,
    MIG_DISABLED,
    MIG_PROFILE_PATTERN,
    check_mig_profile,
    mig_config,
    profile_of_config,
)
from shared.contracts.spec import Spec
from shared.naming import bucket_name_problem
from shared.validation import RuleViolation

# HyperPod's ClusterName/InstanceGroupName pattern (stricter than EKS's, so it serves both).
NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
ZONE_ID_PATTERN = r"^[a-z]{2,5}[0-9]-az[0-9]{1,2}$"
ML_INSTANCE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"
TRAINING_PLAN_ARN_PATTERN = (
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:\d{12}:training-plan/[a-zA-Z0-9\-]+$"
)
KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33")
# The most instances one HyperPod instance group can hold; HyperPod's default limit of
# instance groups per cluster.
MAX_INSTANCES = 6758
MAX_INSTANCE_GROUPS = 20
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")

ClusterName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=NAME_PATTERN,
        description="Letters, digits and hyphens, starting with a letter or digit (max 63)",
        examples=["llm-training"],
    ),
]
ZoneId = Annotated[
    str,
    Field(
        pattern=ZONE_ID_PATTERN,
        description="Availability Zone id (same physical zone in every account), e.g. use1-az2",
        examples=["use1-az2"],
    ),
]


class CapacityType(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    TRAINING_PLAN = "training-plan"


class InterfaceType(StrEnum):
    EFA = "efa"
    EFA_ONLY = "efa-only"


class DeepHealthCheck(StrEnum):
    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"


class NodeRecovery(StrEnum):
    AUTOMATIC = "Automatic"
    NONE = "None"


class Taint(Spec):
    key: str = Field(min_length=1, max_length=316, description="e.g. nvidia.com/gpu")
    value: str = Field("", max_length=63, description="may be empty")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        description="what the taint does to pods without a toleration"
    )

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        if not _LABEL_KEY.match(key):
            raise RuleViolation(
                f"{key!r} is not a valid taint key", "use a key like example.com/gpu or dedicated"
            )
        return key


class InstanceGroupSpec(Spec):
    name: ClusterName
    instance_type: str = Field(
        pattern=ML_INSTANCE_PATTERN,
        description="HyperPod instance type (ml.*), e.g. ml.p5.48xlarge",
        examples=["ml.g5.8xlarge"],
    )
    count: int = Field(ge=0, le=MAX_INSTANCES, description="Instances to run now")
    min_count: int | None = Field(
        None, ge=0, le=MAX_INSTANCES, description="Fewest instances to keep (autoscaling)"
    )
    availability_zone_id: ZoneId | None = Field(
        None,
        description="Where the group's /20 compute subnet lives; the cluster's zone if omitted",
    )
    capacity_type: CapacityType = Field(
        CapacityType.ON_DEMAND,
        description="on-demand, spot, or training-plan (fixed for the group's life)",
    )
    training_plan_arn: str | None = Field(
        None,
        pattern=TRAINING_PLAN_ARN_PATTERN,
        description="Required when capacity_type is training-plan",
    )
    interface_type: InterfaceType = Field(
        InterfaceType.EFA, description="efa, or efa-only (fixed for the group's life)"
    )
    ebs_volume_gb: int = Field(500, ge=1, le=16384, description="Extra EBS volume per instance, GB")
    threads_per_core: Literal[1, 2] = Field(1, description="1 disables hyperthreading")
    deep_health_checks: list[DeepHealthCheck] = Field(
        default_factory=list, description="Checks run before nodes accept work"
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Kubernetes labels of the nodes"
    )
    taints: list[Taint] = Field(
        default_factory=list, max_length=50, description="Kubernetes taints of the nodes"
    )
    mig_profile: str | None = Field(
        None,
        pattern=MIG_PROFILE_PATTERN,
        description="Partition every GPU of the group's nodes into this MIG profile, e.g. "
        "mig-1g.10gb (the label nvidia.com/mig.config: all-1g.10gb); A100, H100 and H200 "
        "types only",
        examples=["mig-1g.10gb"],
    )

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if not _LABEL_KEY.match(key):
                raise RuleViolation(
                    f"label key {key!r} is not valid", "use a key like example.com/team or team"
                )
            if not _LABEL_VALUE.match(value):
                raise RuleViolation(
                    f"label value {value!r} is not valid",
                    "use up to 63 letters, digits, '-', '_' or '.'",
                )
        return labels

    @model_validator(mode="after")
    def _capacity(self) -> Self:
        if self.capacity_type == CapacityType.TRAINING_PLAN and not self.training_plan_arn:
            raise RuleViolation(
                f"instance group {self.name}: capacity_type training-plan needs training_plan_arn",
                "list plans with GET /api/v1/inspect/training-plans and pass one's ARN",
            )
        if self.training_plan_arn and self.capacity_type != CapacityType.TRAINING_PLAN:
            raise RuleViolation(
                f"instance group {self.name}: training_plan_arn is only used with capacity_type training-plan",
                "set capacity_type to training-plan, or drop training_plan_arn",
            )
        if self.min_count is not None and self.min_count > self.count:
            raise RuleViolation(
                f"instance group {self.name}: min_count {self.min_count} exceeds count {self.count}",
                "make min_count at most count",
            )
        self._mig_rule()
        return self

    def _mig_rule(self) -> None:
        where = f"instance group {self.name}"
        labelled = self.labels.get(MIG_CONFIG_LABEL)
        if self.mig_profile is not None:
            check_mig_profile(self.instance_type, self.mig_profile, where)
            if labelled is not None and labelled != mig_config(self.mig_profile):
                raise RuleViolation(
                    f"{where}: label {MIG_CONFIG_LABEL}={labelled} contradicts mig_profile "
                    f"{self.mig_profile}",
                    f"drop the label (mig_profile sets it to {mig_config(self.mig_profile)})",
                )
        elif labelled is not None and labelled != MIG_DISABLED:
            profile = profile_of_config(labelled)
            check_mig_profile(self.instance_type, profile or "", where)

    def kubernetes_labels(self) -> dict[str, str]:
        """The nodes' labels: `labels`, and the MIG config label when mig_profile is set."""
        labels = dict(self.labels)
        if self.mig_profile is not None:
            labels[MIG_CONFIG_LABEL] = mig_config(self.mig_profile)
        return labels


class NetworkSpec(Spec):
    vpc_id: str | None = Field(
        None, pattern=r"^vpc-[0-9a-f]{8,17}$", description="Use this VPC instead of creating one"
    )
    vpc_cidr: str = Field("10.192.0.0/16", description="CIDR of a new VPC (/16 to /20)")

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, cidr: str) -> str:
        try:
            net = ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as exc:
            raise RuleViolation(
                f"{cidr!r} is not a valid IPv4 CIDR ({exc})", "use a block like 10.192.0.0/16"
            ) from exc
        if not 16 <= net.prefixlen <= 20:
            raise RuleViolation(
                f"{cidr} is a /{net.prefixlen}; a cluster VPC needs /16 to /20",
                "use a /16, which leaves room for /20 compute subnets",
            )
        if not net.is_private:
            raise RuleViolation(
                f"{cidr} is not a private range",
                "use a block in 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
            )
        return str(net)


class StorageSpec(Spec):
    bucket: str | None = Field(
        None, description="S3 bucket for shared data; hyperpilot-<cluster>-<account> if omitted"
    )
    fsx_capacity_gib: int | None = Field(
        None,
        description="Create an FSx for Lustre file system of this size (1200, 2400, or a multiple of 2400)",
    )

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str | None) -> str | None:
        if bucket is not None and (problem := bucket_name_problem(bucket)):
            raise RuleViolation(
                f"bucket name {problem}", "use 3-63 lowercase letters, digits and hyphens"
            )
        return bucket

    @field_validator("fsx_capacity_gib")
    @classmethod
    def _fsx(cls, size: int | None) -> int | None:
        if size is not None and not (size in (1200, 2400) or (size > 0 and size % 2400 == 0)):
            raise RuleViolation(
                f"FSx for Lustre cannot be {size} GiB", "use 1200, 2400, or a multiple of 2400"
            )
        return size


class ClusterSpec(Spec):
    name: ClusterName = Field(description="Name of the new EKS + HyperPod cluster")
    availability_zone_id: ZoneId = Field(
        description="The zone of the compute nodes (a user decision: where the capacity is)"
    )
    instance_groups: list[InstanceGroupSpec] = Field(
        min_length=1,
        max_length=MAX_INSTANCE_GROUPS,
        description="name, instance_type (offered in the zone), count; capacity_type is fixed",
    )
    kubernetes_version: Literal["1.30", "1.31", "1.32", "1.33"] = Field(
        "1.32", description="EKS Kubernetes version"
    )
    node_recovery: NodeRecovery = Field(
        NodeRecovery.AUTOMATIC, description="Automatic: HyperPod reboots or replaces faulty nodes"
    )
    network: NetworkSpec = Field(
        default_factory=NetworkSpec,
        description="Leave unset: the control plane creates the VPC and subnets",
    )
    storage: StorageSpec = Field(
        default_factory=StorageSpec,
        description="Shared S3 bucket (created if unset) and optional FSx for Lustre",
    )
    tags: dict[str, str] = Field(
        default_factory=dict, max_length=40, description="AWS tags of every resource"
    )

    @model_validator(mode="after")
    def _unique_groups(self) -> Self:
        names = [g.name for g in self.instance_groups]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise RuleViolation(
                f"instance group names repeat: {', '.join(duplicates)}",
                "give each group its own name",
            )
        return self


class ImportSpec(Spec):
    eks_cluster_name: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[0-9A-Za-z][A-Za-z0-9\-_]*$",
        description="An existing EKS cluster (list_account_clusters shows the importable ones)",
    )
    hyperpod_cluster_name: ClusterName | None = Field(
        None, description="The HyperPod cluster it orchestrates, if any"
    )
