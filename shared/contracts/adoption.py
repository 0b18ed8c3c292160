"""Adopting an EKS cluster Hyperpilot did not create: the request, the command and its event.

An adoption is read first (a dry run answers what the cluster has and what HyperPod still
needs), then, on confirmation, adds only what is missing: the access entries, the dependencies,
a HyperPod cluster with its own compute subnets, security group and execution role, and the
instance groups. The cluster's record says what Hyperpilot added; deleting the cluster removes
exactly that and leaves the EKS cluster, its node groups and its add-ons as they were.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from shared.contracts.cluster import (
    MAX_INSTANCE_GROUPS,
    ClusterName,
    ClusterSpec,
    InstanceGroupSpec,
    NodeRecovery,
    ZoneId,
)
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.naming import bucket_name_problem
from shared.validation import RuleViolation


class AdoptSpec(Spec):
    eks_cluster_name: ClusterName = Field(
        description="An existing EKS cluster; also the cluster's name here and its HyperPod"
        " cluster's (HyperPod's name rule: letters, digits and hyphens)"
    )
    availability_zone_id: ZoneId = Field(
        description="Where the HyperPod compute subnet goes, inside the EKS cluster's VPC"
    )
    instance_groups: list[InstanceGroupSpec] = Field(
        min_length=1,
        max_length=MAX_INSTANCE_GROUPS,
        description="The HyperPod instance groups to add: name, instance_type, count",
    )
    bucket: str | None = Field(
        None,
        description="An S3 bucket for the nodes' lifecycle script (an existing one is used and"
        " kept); hyperpilot-<cluster>-<suffix> is made if omitted",
    )
    node_recovery: NodeRecovery = Field(
        NodeRecovery.AUTOMATIC, description="Automatic: HyperPod reboots or replaces faulty nodes"
    )
    tags: dict[str, str] = Field(
        default_factory=dict, max_length=40, description="AWS tags of what Hyperpilot adds"
    )

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str | None) -> str | None:
        if bucket is not None and (problem := bucket_name_problem(bucket)):
            raise RuleViolation(
                f"bucket name {problem}", "use 3-63 lowercase letters, digits and hyphens"
            )
        return bucket

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

    def cluster_spec(self, kubernetes_version: str, bucket: str) -> ClusterSpec:
        """The HyperPod part as a create would take it, named after the EKS cluster and at its
        Kubernetes version (what the dependency set and the instance groups are built from)."""
        return ClusterSpec.model_validate(
            {
                "name": self.eks_cluster_name,
                "availability_zone_id": self.availability_zone_id,
                "instance_groups": [g.model_dump(mode="json") for g in self.instance_groups],
                "kubernetes_version": kubernetes_version,
                "node_recovery": self.node_recovery.value,
                "storage": {"bucket": bucket},
                "tags": self.tags,
            }
        )


class AdoptCluster(Command):
    """Add HyperPod to an existing EKS cluster. `spec` is the HyperPod part (its name is the
    EKS cluster's); `bucket` is resolved at accept time."""

    domain = "cluster"
    verb = "adopt"

    spec: ClusterSpec
    region: str
    bucket: str


class ClusterAdopted(Event):
    what = "cluster_adopted"
    name: str
    eks_cluster_arn: str
    hyperpod_cluster_arn: str | None
    added: dict[str, Any] = {}  # stage -> what Hyperpilot made there (what delete removes)
