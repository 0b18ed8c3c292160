"""The simulated HyperPod's records: clusters, instance groups, nodes, placements, and the
helpers that render them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sim.aws.errors import AwsError
from sim.aws.hyperpod.hardware import HardwareFault

Handler = Callable[[dict[str, Any]], dict[str, Any]]

CLUSTER_CONFIG_KEYS = (
    "VpcConfig",
    "Orchestrator",
    "NodeRecovery",
    "TieredStorageConfig",
    "NodeProvisioningMode",
    "ClusterRole",
    "RestrictedInstanceGroups",
)


@dataclass
class Node:
    instance_id: str
    logical_id: str
    group: str
    instance_type: str
    status: str
    zone_name: str
    zone_id: str
    subnet_id: str | None
    ip: str
    launch_time: datetime
    message: str | None = None
    last_software_update: datetime | None = None
    gen: int = 0
    hardware: HardwareFault | None = None  # an injected fault of this instance


@dataclass
class Group:
    spec: dict[str, Any]
    target: int
    status: str = "Creating"
    image_id: str | None = None

    @property
    def name(self) -> str:
        return str(self.spec["InstanceGroupName"])

    @property
    def instance_type(self) -> str:
        return str(self.spec["InstanceType"])


@dataclass
class Cluster:
    name: str
    cluster_id: str
    arn: str
    creation_time: datetime
    status: str
    config: dict[str, Any]
    auto_scaling: dict[str, Any] | None
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    failure_message: str | None = None
    tags: list[dict[str, str]] = field(default_factory=list)
    gen: int = 0
    next_ip: int = 10

    @property
    def eks_name(self) -> str | None:
        arn = (self.config.get("Orchestrator") or {}).get("Eks", {}).get("ClusterArn")
        return str(arn).rsplit("/", 1)[-1] if arn else None


class EksLink(Protocol):
    """What HyperPod needs from EKS: is the cluster there, and the access of its nodes."""

    def is_active(self, arn_or_name: str) -> bool: ...

    def authentication_mode(self, arn: str) -> str | None: ...

    def grant_node_role(self, arn: str, role_arn: str) -> None: ...

    def revoke_node_role(self, arn: str, role_arn: str) -> None: ...


@dataclass
class Placement:
    zone_name: str
    zone_id: str
    subnet_id: str | None
    cidr: str


def node_status(node: Node) -> dict[str, Any]:
    status: dict[str, Any] = {"Status": node.status}
    if node.message:
        status["Message"] = node.message
    return status


def hostname(node: Node) -> str:
    return "ip-" + node.ip.replace(".", "-") + ".ec2.internal"


def page_of(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    """One page of `items` per MaxResults/NextToken (the token is the next offset)."""
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise AwsError("ValidationException", "Invalid NextToken") from None
    size = int(p.get("MaxResults") or 100)
    page = items[start : start + size]
    token = str(start + size) if start + size < len(items) else None
    return page, token
