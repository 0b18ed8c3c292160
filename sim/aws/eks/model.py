"""The simulated EKS's records: a cluster and what hangs off it, and the helpers that render
them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sim.aws.errors import AwsError
from sim.interfaces import ClusterEndpoint

Handler = Callable[[dict[str, Any]], dict[str, Any]]

# The identity moto's STS reports for any access key it has not issued.
CALLER_ARN_TEMPLATE = "arn:aws:iam::{account}:user/moto"


@dataclass
class EksCluster:
    name: str
    arn: str
    created_at: datetime
    status: str
    spec: dict[str, Any]
    cluster_id: str
    tags: dict[str, str]
    endpoint: ClusterEndpoint | None = None
    kube_started: bool = False
    addons: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodegroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_policies: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    pod_identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    health_issues: list[dict[str, Any]] = field(default_factory=list)

    @property
    def auth_mode(self) -> str:
        return str((self.spec.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")


def public_view(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not k.startswith("_")}


def page_of(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("nextToken") or 0)
    except ValueError:
        raise AwsError("InvalidParameterException", "The nextToken is invalid") from None
    size = int(p.get("maxResults") or 100)
    page = items[start : start + size]
    return page, str(start + size) if start + size < len(items) else None
