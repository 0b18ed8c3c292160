"""Compact CustomResourceDefinitions: the upstream schemas' structure, types, enums and required
fields, without their description prose. Pod templates and status stay open objects, so the
operators' own fields are never pruned."""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.components.base import KubeObject

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
INT_OR_STRING: Schema = {"x-kubernetes-int-or-string": True}
STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}


def obj(required: tuple[str, ...] = (), **properties: Schema) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def enum(*values: str, default: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "enum": list(values)}
    if default is not None:
        schema["default"] = default
    return schema


def map_of(values: Schema) -> Schema:
    return {"type": "object", "additionalProperties": values}


def crd(
    group: str,
    kind: str,
    plural: str,
    spec: Schema,
    *,
    versions: tuple[str, ...] = ("v1",),
    short_names: tuple[str, ...] = (),
    columns: tuple[tuple[str, str, str], ...] = (),
    scale: tuple[str, str] | None = None,
) -> KubeObject:
    """A namespaced CRD whose first version is the storage version."""
    root = obj(("spec",), apiVersion=STRING, kind=STRING, metadata={"type": "object"})
    root["properties"]["spec"] = spec
    root["properties"]["status"] = OPEN
    subresources: dict[str, Any] = {"status": {}}
    if scale:
        subresources["scale"] = {"specReplicasPath": scale[0], "statusReplicasPath": scale[1]}
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    printer = [{"name": n, "type": t, "jsonPath": p} for n, t, p in columns]
    printer.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": index == 0,
                    "schema": {"openAPIV3Schema": root},
                    "subresources": subresources,
                    "additionalPrinterColumns": printer,
                }
                for index, version in enumerate(versions)
            ],
        },
    }


# Shared by kubeflow's PyTorchJob and MPIJob (kubeflow.org common types).
REPLICA_SPEC = obj(
    replicas=INTEGER,
    restartPolicy=STRING,
    template=OPEN,
)
RUN_POLICY = obj(
    activeDeadlineSeconds=INTEGER,
    backoffLimit=INTEGER,
    cleanPodPolicy=STRING,
    managedBy=STRING,
    schedulingPolicy=obj(
        minAvailable=INTEGER,
        minResources=map_of(INT_OR_STRING),
        priorityClass=STRING,
        queue=STRING,
        scheduleTimeoutSeconds=INTEGER,
    ),
    suspend={"type": "boolean", "default": False},
    ttlSecondsAfterFinished=INTEGER,
)
