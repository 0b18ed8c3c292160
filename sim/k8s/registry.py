"""The table of resource types the API server serves: built-in kinds plus CRDs added at runtime."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One served group/version/resource and everything discovery and routing need about it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    builtin: bool = True
    schema: dict[str, Any] | None = None
    scale_paths: tuple[str, str, str | None] | None = None  # spec, status, labelSelector
    printer_columns: tuple[dict[str, Any], ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """Storage key: every version of a resource shares one store."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def status_subresource(self) -> bool:
        return "status" in self.subresources


def _rt(
    gv: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = ("status",),
    verbs: tuple[str, ...] = ALL_VERBS,
    cats: tuple[str, ...] = (),
) -> ResourceType:
    group, _, version = gv.rpartition("/")
    return ResourceType(group, version, kind, plural, namespaced, short, sub, verbs, cats)


_ALL = ("all",)

BUILTINS: tuple[ResourceType, ...] = (
    _rt("v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize")),
    _rt(
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "log", "binding", "eviction", "proxy", "exec", "portforward"),
        cats=_ALL,
    ),
    _rt("v1", "Service", "services", True, ("svc",), ("status", "proxy"), cats=_ALL),
    _rt("v1", "Endpoints", "endpoints", True, ("ep",), ()),
    _rt("v1", "ConfigMap", "configmaps", True, ("cm",), ()),
    _rt("v1", "Secret", "secrets", True, (), ()),
    _rt("v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    _rt("v1", "Node", "nodes", False, ("no",)),
    _rt("v1", "Event", "events", True, ("ev",), ()),
    _rt("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",)),
    _rt("v1", "PersistentVolume", "persistentvolumes", False, ("pv",)),
    _rt("v1", "ResourceQuota", "resourcequotas", True, ("quota",)),
    _rt("v1", "LimitRange", "limitranges", True, ("limits",), ()),
    _rt("v1", "ReplicationController", "replicationcontrollers", True, ("rc",), ("status",)),
    _rt("apps/v1", "Deployment", "deployments", True, ("deploy",), ("status", "scale"), cats=_ALL),
    _rt("apps/v1", "ReplicaSet", "replicasets", True, ("rs",), ("status", "scale"), cats=_ALL),
    _rt("apps/v1", "StatefulSet", "statefulsets", True, ("sts",), ("status", "scale"), cats=_ALL),
    _rt("apps/v1", "DaemonSet", "daemonsets", True, ("ds",), cats=_ALL),
    _rt("apps/v1", "ControllerRevision", "controllerrevisions", True, (), ()),
    _rt("batch/v1", "Job", "jobs", True, (), cats=_ALL),
    _rt("batch/v1", "CronJob", "cronjobs", True, ("cj",), cats=_ALL),
    _rt("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("hpa",)),
    _rt("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("hpa",)),
    _rt("events.k8s.io/v1", "Event", "events", True, ("ev",), ()),
    _rt(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        ("crd", "crds"),
    ),
    _rt("rbac.authorization.k8s.io/v1", "Role", "roles", True, (), ()),
    _rt("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True, (), ()),
    _rt("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, (), ()),
    _rt("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False, (), ()),
    _rt("storage.k8s.io/v1", "StorageClass", "storageclasses", False, ("sc",), ()),
    _rt("storage.k8s.io/v1", "CSIDriver", "csidrivers", False, (), ()),
    _rt("storage.k8s.io/v1", "CSINode", "csinodes", False, (), ()),
    _rt("networking.k8s.io/v1", "Ingress", "ingresses", True, ("ing",)),
    _rt("networking.k8s.io/v1", "IngressClass", "ingressclasses", False, (), ()),
    _rt("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, ("netpol",), ()),
    _rt("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True, (), ()),
    _rt("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",)),
    _rt("coordination.k8s.io/v1", "Lease", "leases", True, (), ()),
    _rt("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, ("pc",), ()),
    _rt(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        False,
        (),
        (),
    ),
    _rt(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
        (),
        (),
    ),
    _rt("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", False, (), ()),
    _rt(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        (),
        (),
        ("create",),
    ),
    _rt(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        False,
        (),
        (),
        ("create",),
    ),
    _rt(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        (),
        (),
        ("create",),
    ),
)

# Resources that answer a create without storing anything (reviews of the caller's access).
REVIEWS = {
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
    "selfsubjectreviews.authentication.k8s.io",
}

# Which version a group prefers when it serves several (autoscaling serves v2 and v1).
PREFERRED = {"autoscaling": "v2"}


@dataclass
class Registry:
    """Resolves paths and kinds to resource types; CRDs are added and removed as they come and go."""

    types: list[ResourceType] = field(default_factory=lambda: list(BUILTINS))
    lock: threading.RLock = field(default_factory=threading.RLock)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self.lock:
            for rt in self.types:
                if rt.group == group and rt.version == version and rt.plural == plural:
                    return rt
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        with self.lock:
            for rt in self.types:
                if rt.group == group and rt.version == version and rt.kind == kind:
                    return rt
        return None

    def by_key(self, key: str) -> ResourceType | None:
        with self.lock:
            for rt in self.types:
                if rt.key == key:
                    return rt
        return None

    def groups(self) -> dict[str, list[str]]:
        """Group name -> served versions, preferred version first."""
        out: dict[str, list[str]] = {}
        with self.lock:
            for rt in self.types:
                versions = out.setdefault(rt.group, [])
                if rt.version not in versions:
                    versions.append(rt.version)
        for group, versions in out.items():
            pref = PREFERRED.get(group)
            if pref in versions:
                versions.remove(pref)
                versions.insert(0, pref)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        with self.lock:
            return [rt for rt in self.types if rt.group == group and rt.version == version]

    def add_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """Serve every version a CRD marks as served (replacing a previous registration)."""
        spec = crd["spec"]
        names = spec["names"]
        added = []
        for ver in spec.get("versions", []):
            if not ver.get("served", True):
                continue
            subs = ver.get("subresources") or {}
            scale = subs.get("scale")
            added.append(
                ResourceType(
                    group=spec["group"],
                    version=ver["name"],
                    kind=names["kind"],
                    plural=names["plural"],
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    short_names=tuple(names.get("shortNames") or ()),
                    subresources=tuple(k for k in ("status", "scale") if k in subs),
                    categories=tuple(names.get("categories") or ()),
                    builtin=False,
                    schema=(ver.get("schema") or {}).get("openAPIV3Schema"),
                    scale_paths=(
                        scale["specReplicasPath"],
                        scale["statusReplicasPath"],
                        scale.get("labelSelectorPath"),
                    )
                    if scale
                    else None,
                    printer_columns=tuple(ver.get("additionalPrinterColumns") or ()),
                )
            )
        with self.lock:
            self.remove_crd(spec["group"], names["plural"])
            self.types.extend(added)
        return added

    def remove_crd(self, group: str, plural: str) -> None:
        with self.lock:
            self.types = [
                rt
                for rt in self.types
                if rt.builtin or not (rt.group == group and rt.plural == plural)
            ]

    def has_crd(self, group: str, plural: str) -> bool:
        with self.lock:
            return any(
                not rt.builtin and rt.group == group and rt.plural == plural for rt in self.types
            )
