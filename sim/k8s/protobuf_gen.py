"""Regenerate protobuf_fields.json from upstream's generated.proto files.

    .venv/bin/python -m sim.k8s.protobuf_gen <kubernetes/api checkout> <kubernetes/apimachinery checkout>

Keeps, for every message reachable from the built-in kinds the emulator serves (and the request
bodies kubectl sends: reviews, options, evictions), each field's number, JSON name, type and
whether it is repeated, a map or inlined into its parent's JSON (`json:",inline"`, found by the
field missing from the parent's OpenAPI schema).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from kubernetes_validate import utils as kv_utils

OUT = Path(__file__).with_name("protobuf_fields.json")
API_PACKAGES = (
    "core/v1",
    "apps/v1",
    "batch/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "events/v1",
    "rbac/v1",
    "storage/v1",
    "networking/v1",
    "discovery/v1",
    "policy/v1",
    "coordination/v1",
    "scheduling/v1",
    "admissionregistration/v1",
    "node/v1",
    "authorization/v1",
    "authentication/v1",
)
MACHINERY_PACKAGES = ("pkg/apis/meta/v1", "pkg/api/resource", "pkg/util/intstr", "pkg/runtime")
ROOTS_EXTRA = (
    "k8s.io.api.authorization.v1.SubjectAccessReview",
    "k8s.io.api.authentication.v1.TokenRequest",
    "k8s.io.api.policy.v1.Eviction",
    "k8s.io.api.core.v1.Binding",
    "k8s.io.api.autoscaling.v1.Scale",
    "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
)
_FIELD = re.compile(
    r"^\s*(?:(optional|repeated)\s+([.\w]+)|map<\s*(\w+)\s*,\s*([.\w]+)\s*>)\s+(\w+)\s*=\s*(\d+)"
)
_SCALARS = {"string", "bytes", "int32", "int64", "bool", "double", "float", "uint32", "uint64"}


def parse(text: str) -> dict[str, list[list[Any]]]:
    package = re.search(r"^package\s+([\w.]+);", text, re.M)
    assert package is not None
    prefix = package.group(1)
    messages: dict[str, list[list[Any]]] = {}
    current: list[list[Any]] | None = None
    for line in text.splitlines():
        m = re.match(r"^message\s+(\w+)\s*\{", line)
        if m:
            current = messages.setdefault(f"{prefix}.{m.group(1)}", [])
            continue
        if line.startswith("}"):
            current = None
            continue
        f = _FIELD.match(line)
        if f and current is not None:
            label, kind, key_type, value_type, name, number = f.groups()

            def resolve(t: str) -> str:
                return t if t in _SCALARS else (t[1:] if t.startswith(".") else f"{prefix}.{t}")

            if key_type:
                current.append([int(number), name, resolve(value_type), "map"])
            else:
                current.append([int(number), name, resolve(kind), label])
    return messages


_GO_TYPE = re.compile(r"^type\s+(\w+)\s+struct\s*\{")
_GO_FIELD = re.compile(r'^\s*\w+\s+(\*?)\S+\s+`.*protobuf:"\w+,(\d+),')


def pointers(package: str, go_dir: Path) -> set[tuple[str, int]]:
    """(message, field number) of the Go pointer fields: set to zero is not the same as unset."""
    out: set[tuple[str, int]] = set()
    for path in sorted(go_dir.glob("types*.go")):
        struct = ""
        for line in path.read_text().splitlines():
            t = _GO_TYPE.match(line)
            if t:
                struct = t.group(1)
                continue
            f = _GO_FIELD.match(line)
            if f and struct and f.group(1):
                out.add((f"{package}.{struct}", int(f.group(2))))
    return out


def main(api: Path, machinery: Path) -> None:
    messages: dict[str, list[list[Any]]] = {}
    ptrs: set[tuple[str, int]] = set()
    for pkg in API_PACKAGES:
        messages.update(parse((api / pkg / "generated.proto").read_text()))
        ptrs |= pointers("k8s.io.api." + pkg.replace("/", "."), api / pkg)
    for pkg in MACHINERY_PACKAGES:
        messages.update(parse((machinery / pkg / "generated.proto").read_text()))
        package = "k8s.io.apimachinery." + pkg.replace("/", ".")
        ptrs |= pointers(package, machinery / pkg)
    version = kv_utils.all_versions()[-1]
    defs = kv_utils.schema_contents(
        f"kubernetes-json-schema/v{version}-local/_definitions.json", version
    )["$defs"]

    def definition(message: str) -> dict[str, Any]:
        return dict(defs.get("io.k8s." + message.removeprefix("k8s.io.")) or {})

    roots = [name for name in messages if "kind" in (definition(name).get("properties") or {})]
    keep: dict[str, list[list[Any]]] = {}
    todo = [*roots, *ROOTS_EXTRA]
    while todo:
        name = todo.pop()
        if name in keep or name not in messages:
            continue
        props = definition(name).get("properties")
        fields = []
        for number, field, kind, label in messages[name]:
            if props is not None and field not in props:
                # a few proto names keep the Go field's case (Webhooks, uID, aPIGroup)
                field = next((p for p in props if p.lower() == field.lower()), field)
            inline = (
                props is not None and field not in props and kind not in _SCALARS and "." in kind
            )
            flag = "inline" if inline else label
            if (name, number) in ptrs and label == "optional" and not inline:
                flag = "pointer"  # a zero value (or `{}`) sent is kept, unlike a value field's
            fields.append([number, field, kind, flag])
            if kind not in _SCALARS:
                todo.append(kind)
        keep[name] = fields
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(keep.items())]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
