"""What a dependency component is, and the port to a cluster's Kubernetes API.

A component is either an EKS add-on (installed and versioned by EKS) or a set of Kubernetes
manifests that Hyperpilot applies itself. Every applied object carries the label
`hyperpilot.io/component-version`, which is how the installed version is read back later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

KubeObject = dict[str, Any]
ComponentKind = Literal["eks-addon", "manifests"]

COMPONENT_LABEL = "hyperpilot.io/component"
VERSION_LABEL = "hyperpilot.io/component-version"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "hyperpilot"


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach a cluster's Kubernetes API: DescribeCluster's endpoint and CA data."""

    name: str
    endpoint: str
    ca_data: str  # base64 PEM, as EKS returns it


class KubeApi(Protocol):
    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> KubeObject | None: ...

    async def apply(self, obj: KubeObject) -> KubeObject: ...

    async def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool: ...

    async def list_objects(
        self, api_version: str, kind: str, selector: str
    ) -> list[KubeObject]: ...


class KubeFactory(Protocol):
    def __call__(self, access: ClusterAccess) -> KubeApi: ...


@dataclass(frozen=True)
class Component:
    """One declared dependency. `version` is the EKS add-on version or the chart version."""

    name: str
    kind: ComponentKind
    version: str
    namespace: str
    requires: tuple[str, ...] = ()
    manifests: tuple[KubeObject, ...] = field(default=(), repr=False)

    def objects(self) -> list[KubeObject]:
        """The manifests with the component and version labels this reconciler reads back."""
        return [labelled(obj, self.name, self.version) for obj in self.manifests]


def labelled(obj: KubeObject, component: str, version: str) -> KubeObject:
    metadata = dict(obj.get("metadata") or {})
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        COMPONENT_LABEL: component,
        VERSION_LABEL: version,
        MANAGED_BY_LABEL: MANAGED_BY,
    }
    return {**obj, "metadata": metadata}


def object_version(obj: KubeObject | None) -> str | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(VERSION_LABEL)
    return str(value) if value is not None else None


def object_ref(obj: KubeObject) -> tuple[str, str, str, str | None]:
    """(apiVersion, kind, name, namespace) of a manifest."""
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")


def cluster_access(eks_outputs: dict[str, Any]) -> ClusterAccess:
    """The `eks_cluster` stage's outputs as the address of the cluster's Kubernetes API."""
    return ClusterAccess(
        name=str(eks_outputs["cluster_name"]),
        endpoint=str(eks_outputs["endpoint"]),
        ca_data=str(eks_outputs["ca_data"]),
    )


def is_managed(obj: KubeObject, component: str) -> bool:
    """True when this object was applied by Hyperpilot as part of `component`."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(COMPONENT_LABEL) == component)
