"""In-memory ports for the dependency and storage stages: a Kubernetes API and EKS add-ons
that record every mutating call."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from cluster_svc.domain.components.base import ClusterAccess, Component, KubeObject
from cluster_svc.domain.dependencies import AddonState

Key = tuple[str, str, str, str]


def key(api_version: str, kind: str, name: str, namespace: str | None) -> Key:
    return api_version, kind, namespace or "", name


class FakeKube:
    """Objects by (apiVersion, kind, namespace, name); CRDs are Established on apply unless
    `establish_crds` is off; `on_apply` can change an object as a controller would."""

    def __init__(self) -> None:
        self.objects: dict[Key, KubeObject] = {}
        self.mutations: list[tuple[str, Key]] = []
        self.establish_crds = True
        self.on_apply: Callable[[KubeObject], None] | None = None
        self._versions = itertools.count(1)

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> KubeObject | None:
        found = self.objects.get(key(api_version, kind, name, namespace))
        return copy.deepcopy(found) if found is not None else None

    async def apply(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        k = key(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        self.mutations.append(("apply", k))
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        if obj["kind"] == "CustomResourceDefinition" and self.establish_crds:
            stored["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
        if self.on_apply is not None:
            self.on_apply(stored)
        self.objects[k] = stored
        return copy.deepcopy(stored)

    async def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        k = key(api_version, kind, name, namespace)
        self.mutations.append(("delete", k))
        return self.objects.pop(k, None) is not None

    def put(self, obj: KubeObject) -> None:
        """An object someone else made (no mutation recorded)."""
        meta = obj["metadata"]
        self.objects[key(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))] = (
            copy.deepcopy(obj)
        )


class FakeKubeFactory:
    def __init__(self, kube: FakeKube) -> None:
        self.kube = kube
        self.seen: list[ClusterAccess] = []

    def __call__(self, access: ClusterAccess) -> FakeKube:
        self.seen.append(access)
        return self.kube


class FakeAddons:
    """EKS add-ons of one cluster: create/update leave them CREATING/UPDATING until `settle`."""

    def __init__(self, offered: dict[str, list[str]]) -> None:
        self.addons: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.offered = offered

    @classmethod
    def offering(cls, components: list[Component]) -> FakeAddons:
        """EKS offers exactly the declared version of each add-on."""
        return cls({c.name: [c.version] for c in components if c.kind == "eks-addon"})

    async def describe(self, cluster: str, name: str) -> AddonState | None:
        found = self.addons.get(name)
        if found is None:
            return None
        return AddonState(name, found["version"], found["status"], found["managed"])

    async def versions(self, name: str, kubernetes_version: str) -> list[str]:
        return self.offered.get(name, [])

    async def create(self, cluster: str, name: str, version: str, request_token: str) -> None:
        self.calls.append(("create", name, version))
        self.addons[name] = {"version": version, "status": "CREATING", "managed": True}

    async def update(self, cluster: str, name: str, version: str) -> None:
        self.calls.append(("update", name, version))
        self.addons[name].update(status="UPDATING", target=version)

    async def delete(self, cluster: str, name: str) -> None:
        self.calls.append(("delete", name, ""))
        self.addons[name]["status"] = "DELETING"

    def settle(self) -> None:
        """EKS finishes whatever is in progress."""
        for name, addon in list(self.addons.items()):
            if addon["status"] == "DELETING":
                del self.addons[name]
            elif addon["status"] in ("CREATING", "UPDATING"):
                addon["version"] = addon.pop("target", addon["version"])
                addon["status"] = "ACTIVE"

    def preinstall(self, name: str, version: str, managed: bool = False) -> None:
        self.addons[name] = {"version": version, "status": "ACTIVE", "managed": managed}
