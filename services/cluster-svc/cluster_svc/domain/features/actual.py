"""What AWS and the cluster report now about each feature (`Actual`), and whether it is on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster_svc.domain.components.base import KubeObject, object_ref
from cluster_svc.domain.features.objects import (
    KARPENTER_CRDS,
    SPACES_ADDON,
    TRAINING_ADDON,
    Ref,
    crd_ref,
    inference_objects,
)


@dataclass(frozen=True)
class RoleActual:
    arn: str
    ours: bool  # tagged as made by Hyperpilot for this cluster
    trust: Mapping[str, Any]
    policy: Mapping[str, Any] | None  # the `hyperpilot` inline policy
    policy_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class HyperPodActual:
    name: str
    status: str
    tiered_mode: str | None = None
    tiered_percentage: int | None = None
    autoscaling_mode: str | None = None
    autoscaler_type: str | None = None
    autoscaling_status: str | None = None
    cluster_role: str | None = None
    provisioning_mode: str | None = None
    node_recovery: str | None = None
    instance_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Actual:
    addons: Mapping[str, str | None] = field(default_factory=dict)  # name -> status (None: absent)
    hyperpod: HyperPodActual | None = None
    objects: Mapping[Ref, KubeObject | None] = field(default_factory=dict)
    roles: Mapping[str, RoleActual | None] = field(default_factory=dict)
    oidc_provider_arn: str | None = None  # IAM's provider of the cluster's issuer
    # managed autoscaling's NodePools and HyperpodNodeClasses Hyperpilot made, by name
    pools: Mapping[str, KubeObject] = field(default_factory=dict)
    classes: Mapping[str, KubeObject] = field(default_factory=dict)
    # the observability feature's AMP and Grafana workspaces ("amp", "grafana")
    workspaces: Mapping[str, Any] = field(default_factory=dict)

    def object(self, ref: Ref) -> KubeObject | None:
        return self.objects.get(ref)

    def karpenter_served(self) -> bool:
        return all(_established(self.object(crd_ref(n))) for n in KARPENTER_CRDS)


def _established(found: KubeObject | None) -> bool:
    if found is None:
        return False
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def addon_enabled(status: str | None) -> bool:
    return status is not None and status != "DELETING"


def training_enabled(actual: Actual) -> bool:
    return addon_enabled(actual.addons.get(TRAINING_ADDON))


def spaces_enabled(actual: Actual) -> bool:
    return addon_enabled(actual.addons.get(SPACES_ADDON))


def inference_enabled(actual: Actual) -> bool:
    controller = next(o for o in inference_objects() if o["kind"] == "Deployment")
    return actual.object(object_ref(controller)) is not None


def tiered_enabled(actual: Actual) -> bool:
    return actual.hyperpod is not None and actual.hyperpod.tiered_mode == "Enable"


def autoscaling_enabled(actual: Actual) -> bool:
    return actual.hyperpod is not None and actual.hyperpod.autoscaling_mode == "Enable"
