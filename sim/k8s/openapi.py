"""A minimal OpenAPI v3 index and per-group-version documents.

kubectl reads them to learn that the server validates fields itself (the `fieldValidation`
parameter of PATCH), so it does not download schemas for client-side validation.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sim.k8s.registry import Registry, ResourceType

_PARAMS = [
    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
]


def _prefix(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def index(registry: Registry) -> dict[str, Any]:
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            prefix = _prefix(group, version)
            digest = (
                hashlib.sha256(
                    ",".join(
                        sorted(rt.plural for rt in registry.in_group_version(group, version))
                    ).encode()
                )
                .hexdigest()[:16]
                .upper()
            )
            paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
    return {"paths": paths}


def _operations(rt: ResourceType) -> dict[str, Any]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}

    def op(action: str) -> dict[str, Any]:
        return {
            "operationId": f"{action}{rt.kind}",
            "parameters": _PARAMS,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "responses": {"200": {"description": "OK"}},
        }

    return {"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}


def document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    base = "/" + _prefix(group, version)
    paths: dict[str, Any] = {}
    for rt in types:
        scope = (
            f"{base}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{base}/{rt.plural}"
        )
        paths[f"{scope}/{{name}}"] = _operations(rt)
        collection_op = _operations(rt)["patch"] | {
            "x-kubernetes-action": "post",
            "operationId": f"create{rt.kind}",
        }
        paths[scope] = {"post": collection_op}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1"},
        "paths": paths,
        "components": {"schemas": {}},
    }
