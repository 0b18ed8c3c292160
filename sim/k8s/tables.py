"""Server-side printing: `meta.k8s.io/v1 Table` responses, which is what `kubectl get` asks for."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from sim.k8s.api import get_path
from sim.k8s.registry import ResourceType
from sim.k8s.timeutil import parse_iso

Obj = dict[str, Any]
Column = tuple[str, str, Callable[[Obj], Any]]


def age(obj: Obj) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    seconds = max(0, int(time.time() - parse_iso(created).timestamp()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _pod_status(obj: Obj) -> str:
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            return str(state["waiting"]["reason"])
        if "terminated" in state and status.get("phase") not in ("Succeeded",):
            return str(state["terminated"].get("reason") or "Error")
    return str(status.get("reason") or status.get("phase") or "Pending")


def _pod_ready(obj: Obj) -> str:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _restarts(obj: Obj) -> int:
    return sum(
        s.get("restartCount", 0) for s in (obj.get("status") or {}).get("containerStatuses") or []
    )


def _node_status(obj: Obj) -> str:
    ready = next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    text = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _ports(obj: Obj) -> str:
    ports = (obj.get("spec") or {}).get("ports") or []
    return (
        ",".join(
            f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
            for p in ports
        )
        or "<none>"
    )


def _external(obj: Obj) -> str:
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if ingress:
        return ",".join(i.get("hostname") or i.get("ip") or "" for i in ingress)
    return "<pending>" if (obj.get("spec") or {}).get("type") == "LoadBalancer" else "<none>"


def _job_status(obj: Obj) -> str:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "Failed"):
            return str(c["type"])
    return "Running"


_STEP = re.compile(
    r"\.([A-Za-z0-9_-]+)|\[(-?\d+):?\]|\[\?\(@\.([A-Za-z0-9_.-]+)==[\"']([^\"']*)[\"']\)\]"
)


def json_path(obj: Any, path: str) -> Any:
    """The JSONPath subset printer columns use: `.a.b`, `[n]`, `[-1:]`, `[?(@.k=="v")]`."""
    nodes = [obj]
    for m in _STEP.finditer(path):
        field, index, key, value = m.groups()
        out = []
        for node in nodes:
            if field is not None and isinstance(node, dict) and field in node:
                out.append(node[field])
            elif (
                index is not None
                and isinstance(node, list)
                and -len(node) <= int(index) < len(node)
            ):
                out.append(node[int(index)])
            elif key is not None and isinstance(node, list):
                out += [i for i in node if isinstance(i, dict) and str(get_path(i, key)) == value]
        nodes = out
    return nodes[0] if len(nodes) == 1 else (",".join(str(n) for n in nodes) if nodes else None)


def _jp(path: str) -> Callable[[Obj], Any]:
    def cell(obj: Obj) -> Any:
        value = json_path(obj, path)
        return "" if value is None else value

    return cell


def _s(path: str, default: Any = "") -> Callable[[Obj], Any]:
    return lambda o: get_path(o, path) if get_path(o, path) is not None else default


COLUMNS: dict[str, list[Column]] = {
    "pods": [
        ("Ready", "string", _pod_ready),
        ("Status", "string", _pod_status),
        ("Restarts", "integer", _restarts),
        ("Age", "string", age),
        ("IP", "string", _s("status.podIP", "<none>")),
        ("Node", "string", _s("spec.nodeName", "<none>")),
    ],
    "deployments.apps": [
        (
            "Ready",
            "string",
            lambda o: (
                f"{get_path(o, 'status.readyReplicas') or 0}/{get_path(o, 'spec.replicas') or 0}"
            ),
        ),
        ("Up-to-date", "integer", _s("status.updatedReplicas", 0)),
        ("Available", "integer", _s("status.availableReplicas", 0)),
        ("Age", "string", age),
    ],
    "replicasets.apps": [
        ("Desired", "integer", _s("spec.replicas", 0)),
        ("Current", "integer", _s("status.replicas", 0)),
        ("Ready", "integer", _s("status.readyReplicas", 0)),
        ("Age", "string", age),
    ],
    "statefulsets.apps": [
        (
            "Ready",
            "string",
            lambda o: (
                f"{get_path(o, 'status.readyReplicas') or 0}/{get_path(o, 'spec.replicas') or 0}"
            ),
        ),
        ("Age", "string", age),
    ],
    "services": [
        ("Type", "string", _s("spec.type")),
        ("Cluster-IP", "string", _s("spec.clusterIP", "<none>")),
        ("External-IP", "string", _external),
        ("Port(s)", "string", _ports),
        ("Age", "string", age),
    ],
    "nodes": [
        ("Status", "string", _node_status),
        ("Roles", "string", lambda o: "<none>"),
        ("Age", "string", age),
        ("Version", "string", _s("status.nodeInfo.kubeletVersion")),
    ],
    "jobs.batch": [
        ("Status", "string", _job_status),
        (
            "Completions",
            "string",
            lambda o: (
                f"{get_path(o, 'status.succeeded') or 0}/{get_path(o, 'spec.completions') or 1}"
            ),
        ),
        ("Age", "string", age),
    ],
    "namespaces": [("Status", "string", _s("status.phase")), ("Age", "string", age)],
    "persistentvolumeclaims": [
        ("Status", "string", _s("status.phase")),
        ("Volume", "string", _s("spec.volumeName")),
        ("StorageClass", "string", _s("spec.storageClassName", "<unset>")),
        ("Age", "string", age),
    ],
    "events": [
        ("Type", "string", _s("type")),
        ("Reason", "string", _s("reason")),
        (
            "Object",
            "string",
            lambda o: (
                f"{get_path(o, 'involvedObject.kind') or ''}/{get_path(o, 'involvedObject.name') or ''}".lower()
            ),
        ),
        ("Message", "string", _s("message")),
    ],
}


def _columns(rt: ResourceType) -> list[Column]:
    if rt.key in COLUMNS:
        return COLUMNS[rt.key]
    if rt.printer_columns:
        cols: list[Column] = []
        for col in rt.printer_columns:
            path = str(col.get("jsonPath", "")).lstrip(".")
            if path == "metadata.creationTimestamp":
                cols.append((str(col["name"]), "string", age))
            else:
                cols.append(
                    (
                        str(col["name"]),
                        str(col.get("type", "string")),
                        _jp(str(col.get("jsonPath", ""))),
                    )
                )
        return cols
    return [("Age", "string", age)]


def to_table(rt: ResourceType, objects: list[Obj], include: str, headers: bool = True) -> Obj:
    columns = _columns(rt)
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}
    ]
    definitions += [
        {"name": n, "type": t, "format": "", "description": "", "priority": 0}
        for n, t, _ in columns
    ]
    rows = []
    for obj in objects:
        if include == "None":
            embedded = None
        elif include == "Object":
            embedded = obj
        else:
            embedded = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        rows.append(
            {
                "cells": [obj["metadata"]["name"]] + [fn(obj) for _, _, fn in columns],
                "object": embedded,
            }
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": definitions if headers else None,
        "rows": rows,
    }
