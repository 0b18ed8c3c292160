"""Discovery documents: /version, /api, /apis and the resource list of each group version."""

from __future__ import annotations

import hashlib
from typing import Any

from sim.k8s.registry import Registry, ResourceType

_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "exec": ["create", "get"],
    "portforward": ["create", "get"],
    "binding": ["create"],
    "eviction": ["create"],
    "finalize": ["update"],
    "proxy": ["create", "delete", "get", "patch", "update"],
}


def version_info(kubernetes_version: str) -> dict[str, Any]:
    major, minor, *rest = kubernetes_version.split(".")
    patch = rest[0] if rest else "0"
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "gitVersion": f"v{major}.{minor}.{patch}-eks-sim",
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def core_versions(host: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def group_list(registry: Registry) -> dict[str, Any]:
    groups = [
        _group(name, versions) for name, versions in sorted(registry.groups().items()) if name
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.groups().get(name)
    if not versions or not name:
        return None
    return dict(_group(name, versions), kind="APIGroup", apiVersion="v1")


def _resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
        "storageVersionHash": hashlib.sha256(rt.key.encode()).hexdigest()[:12],
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    return entry


def _subresource(rt: ResourceType, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{rt.plural}/{sub}",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": _SUB_VERBS.get(sub, ["get"]),
    }
    if sub == "scale":
        entry.update(kind="Scale", group="autoscaling", version="v1")
    elif sub == "eviction":
        entry.update(kind="Eviction", group="policy", version="v1")
    elif sub == "binding":
        entry.update(kind="Binding")
    return entry


def resource_list(registry: Registry, group_name: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group_name, version)
    if not types:
        return None
    resources = []
    for rt in sorted(types, key=lambda t: t.plural):
        resources.append(_resource(rt))
        resources += [_subresource(rt, sub) for sub in rt.subresources]
    gv = f"{group_name}/{version}" if group_name else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }
