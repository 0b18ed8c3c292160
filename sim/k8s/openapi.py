"""OpenAPI v3: the index and one document per group version.

kubectl reads them to learn that the server validates fields itself (the `fieldValidation`
parameter of PATCH) and, for `kubectl explain` and apply's patch metadata, the schemas: the
real ones of built-in kinds (from kubernetes-validate) and each CRD's openAPIV3Schema.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from typing import Any

import orjson
from kubernetes_validate import utils as kv_utils

from sim.k8s.registry import Registry, ResourceType

_PARAMS = [
    {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for name in ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
]


_LOCK = threading.Lock()


def _openapi_schema(node: Any) -> Any:
    """JSON-schema draft 2020 (as kubernetes-validate ships it) to OpenAPI 3 schema objects."""
    if isinstance(node, list):
        return [_openapi_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$schema", "$id"):
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            if kinds:
                out["type"] = kinds[0]
            if "null" in value:
                out["nullable"] = True
        else:
            out[key] = _openapi_schema(value)
    return out


@functools.cache
def builtin_schemas(kubernetes_version: str) -> dict[str, Any]:
    with _LOCK:
        versions = [
            v
            for v in kv_utils.all_versions()
            if kv_utils.major_minor(v) <= kv_utils.major_minor(kubernetes_version)
        ]
        defs = kv_utils.schema_contents(
            f"kubernetes-json-schema/v{versions[-1]}-local/_definitions.json", kubernetes_version
        )
    converted: dict[str, Any] = _openapi_schema(defs["$defs"])
    return converted


def _crd_schema_name(rt: ResourceType) -> str:
    return ".".join(reversed(rt.group.split("."))) + f".{rt.version}.{rt.kind}"


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


def document(
    registry: Registry, group: str, version: str, kubernetes_version: str = "1.33.0"
) -> dict[str, Any] | None:
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
    schemas: dict[str, Any] = {}
    if any(rt.builtin for rt in types):
        schemas.update(builtin_schemas(kubernetes_version))
    for rt in types:
        if not rt.builtin and rt.schema:
            gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
            schemas[_crd_schema_name(rt)] = dict(
                rt.schema, **{"x-kubernetes-group-version-kind": [gvk]}
            )
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _pb_string(number: int, value: bytes) -> bytes:
    length, out = len(value), bytearray([number << 3 | 2])
    while length > 0x7F:
        out.append(length & 0x7F | 0x80)
        length >>= 7
    out.append(length)
    return bytes(out) + value


def v2_document(registry: Registry, kubernetes_version: str, protobuf: bool) -> bytes:
    """/openapi/v2. kubectl reads it (as gnostic's openapi_v2.Document protobuf) only for the
    kinds /openapi/v3 does not describe, to learn they have no schema: so applying a kind whose
    CRD is missing reaches the REST mapping and says `no matches for kind`, as upstream. The
    protobuf form carries swagger and info; JSON carries the definitions too."""
    info = {"title": "Kubernetes", "version": f"v{kubernetes_version}"}
    if protobuf:
        encoded_info = _pb_string(1, info["title"].encode()) + _pb_string(
            2, info["version"].encode()
        )
        return _pb_string(1, b"2.0") + _pb_string(2, encoded_info)
    definitions = {
        name: _v2_refs(schema) for name, schema in builtin_schemas(kubernetes_version).items()
    }
    for group, versions in registry.groups().items():
        for version in versions:
            for rt in registry.in_group_version(group, version):
                if not rt.builtin and rt.schema:
                    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
                    definitions[_crd_schema_name(rt)] = dict(
                        rt.schema, **{"x-kubernetes-group-version-kind": [gvk]}
                    )
    doc = {"swagger": "2.0", "info": info, "paths": {}, "definitions": definitions}
    return orjson.dumps(doc)


def _v2_refs(node: Any) -> Any:
    if isinstance(node, list):
        return [_v2_refs(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {
        k: (
            v.replace("#/components/schemas/", "#/definitions/")
            if k == "$ref" and isinstance(v, str)
            else _v2_refs(v)
        )
        for k, v in node.items()
    }
