"""Server-side printing: `meta.k8s.io/v1 Table` responses, which is what `kubectl get` asks for."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from sim.k8s.api import get_path
from sim.k8s.registry import ResourceType
from sim.k8s.selectors import selector_string
from sim.k8s.timeutil import parse_iso

Obj = dict[str, Any]
Column = tuple[str, str, Callable[[Obj], Any], int]  # name, type, cell, priority


def human_duration(seconds: float) -> str:
    """apimachinery pkg/util/duration HumanDuration, what every Age column prints."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years, days = hours // 24 // 365, (hours // 24) % 365
    if hours < 24 * 365 * 8:
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{years}y"


def since(stamp: Any) -> str:
    """translateTimestampSince: `<unknown>` for no time."""
    if not stamp:
        return "<unknown>"
    return human_duration(time.time() - parse_iso(str(stamp)).timestamp())


def age(obj: Obj) -> str:
    return since(obj.get("metadata", {}).get("creationTimestamp"))


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


def _restarts(obj: Obj) -> str:
    """printPod: `N` or `N (<age> ago)` of the latest restart."""
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    count = sum(s.get("restartCount", 0) for s in statuses)
    finished = [
        str(t["finishedAt"])
        for s in statuses
        if (t := (s.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
    ]
    return f"{count} ({since(max(finished))} ago)" if count and finished else str(count)


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


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _containers(obj: Obj) -> list[Obj]:
    spec = obj.get("spec") or {}
    template = spec.get("template") or ((spec.get("jobTemplate") or {}).get("spec") or {}).get(
        "template"
    )
    pod_spec = (template or {}).get("spec") or {}
    return list(pod_spec.get("containers") or [])


def _container_names(obj: Obj) -> str:
    return ",".join(str(c.get("name", "")) for c in _containers(obj))


def _images(obj: Obj) -> str:
    return ",".join(str(c.get("image", "")) for c in _containers(obj))


def _selector(obj: Obj) -> str:
    selector = (obj.get("spec") or {}).get("selector")
    if not selector:
        return "<none>"
    if "matchLabels" in selector or "matchExpressions" in selector:
        return selector_string(selector) or "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))  # a Service's map


def _ready_of(obj: Obj) -> str:
    return f"{get_path(obj, 'status.readyReplicas') or 0}/{get_path(obj, 'spec.replicas') or 0}"


def _readiness_gates(obj: Obj) -> str:
    gates = (obj.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {
        c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []
    }
    ready = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{ready}/{len(gates)}"


def _node_address(kind: str) -> Callable[[Obj], str]:
    def cell(obj: Obj) -> str:
        for a in (obj.get("status") or {}).get("addresses") or []:
            if a.get("type") == kind:
                return str(a.get("address"))
        return "<none>"

    return cell


def _roles(obj: Obj) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(
        k[len(prefix) :] for k in obj["metadata"].get("labels") or {} if k.startswith(prefix)
    )
    return ",".join(roles) or "<none>"


def _job_duration(obj: Obj) -> str:
    status = obj.get("status") or {}
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    end_ts = parse_iso(end).timestamp() if end else time.time()
    return human_duration(end_ts - parse_iso(start).timestamp())


def _capacity(obj: Obj) -> str:
    return str(get_path(obj, "status.capacity.storage") or "")


_ACCESS = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def _access_modes(obj: Obj) -> str:
    modes = (obj.get("status") or {}).get("accessModes") or []
    return ",".join(_ACCESS.get(m, m) for m in modes)


def _event_first(obj: Obj) -> str:
    return since(obj.get("firstTimestamp") or obj.get("eventTime"))


def _event_last(obj: Obj) -> str:
    series = obj.get("series") or {}
    if series.get("lastObservedTime"):
        return since(series["lastObservedTime"])
    return since(obj.get("lastTimestamp")) if obj.get("lastTimestamp") else _event_first(obj)


def _event_count(obj: Obj) -> int:
    series = obj.get("series") or {}
    return int(series.get("count") or obj.get("count") or 1)


def _event_object(obj: Obj) -> str:
    kind = str(get_path(obj, "involvedObject.kind") or "").lower()
    name = get_path(obj, "involvedObject.name")
    return f"{kind}/{name}" if name else kind


def _event_source(obj: Obj) -> str:
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    return f"{component}, {host}" if host else str(component)


_NAME: Column = ("Name", "string", _name, 0)
_AGE: Column = ("Age", "string", age, 0)
_WORKLOAD_WIDE: list[Column] = [
    ("Containers", "string", _container_names, 1),
    ("Images", "string", _images, 1),
    ("Selector", "string", _selector, 1),
]

# kubernetes/kubernetes pkg/printers/internalversion/printers.go AddHandlers: each kind's
# column definitions, priority 1 for those only `-o wide` shows.
COLUMNS: dict[str, list[Column]] = {
    "pods": [
        _NAME,
        ("Ready", "string", _pod_ready, 0),
        ("Status", "string", _pod_status, 0),
        ("Restarts", "string", _restarts, 0),
        _AGE,
        ("IP", "string", _s("status.podIP", "<none>"), 1),
        ("Node", "string", _s("spec.nodeName", "<none>"), 1),
        ("Nominated Node", "string", _s("status.nominatedNodeName", "<none>"), 1),
        ("Readiness Gates", "string", _readiness_gates, 1),
    ],
    "deployments.apps": [
        _NAME,
        ("Ready", "string", _ready_of, 0),
        ("Up-to-date", "string", _s("status.updatedReplicas", 0), 0),
        ("Available", "string", _s("status.availableReplicas", 0), 0),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    "replicasets.apps": [
        _NAME,
        ("Desired", "integer", _s("spec.replicas", 0), 0),
        ("Current", "integer", _s("status.replicas", 0), 0),
        ("Ready", "integer", _s("status.readyReplicas", 0), 0),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    "statefulsets.apps": [
        _NAME,
        ("Ready", "string", _ready_of, 0),
        _AGE,
        *_WORKLOAD_WIDE[:2],
    ],
    "daemonsets.apps": [
        _NAME,
        ("Desired", "integer", _s("status.desiredNumberScheduled", 0), 0),
        ("Current", "integer", _s("status.currentNumberScheduled", 0), 0),
        ("Ready", "integer", _s("status.numberReady", 0), 0),
        ("Up-to-date", "integer", _s("status.updatedNumberScheduled", 0), 0),
        ("Available", "integer", _s("status.numberAvailable", 0), 0),
        (
            "Node Selector",
            "string",
            lambda o: (
                ",".join(
                    f"{k}={v}"
                    for k, v in sorted(
                        (get_path(o, "spec.template.spec.nodeSelector") or {}).items()
                    )
                )
                or "<none>"
            ),
            0,
        ),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    "services": [
        _NAME,
        ("Type", "string", _s("spec.type"), 0),
        ("Cluster-IP", "string", _s("spec.clusterIP", "<none>"), 0),
        ("External-IP", "string", _external, 0),
        ("Port(s)", "string", _ports, 0),
        _AGE,
        ("Selector", "string", _selector, 1),
    ],
    "nodes": [
        _NAME,
        ("Status", "string", _node_status, 0),
        ("Roles", "string", _roles, 0),
        _AGE,
        ("Version", "string", _s("status.nodeInfo.kubeletVersion"), 0),
        ("Internal-IP", "string", _node_address("InternalIP"), 1),
        ("External-IP", "string", _node_address("ExternalIP"), 1),
        ("OS-Image", "string", _s("status.nodeInfo.osImage", "<unknown>"), 1),
        ("Kernel-Version", "string", _s("status.nodeInfo.kernelVersion", "<unknown>"), 1),
        (
            "Container-Runtime",
            "string",
            _s("status.nodeInfo.containerRuntimeVersion", "<unknown>"),
            1,
        ),
    ],
    "jobs.batch": [
        _NAME,
        ("Status", "string", _job_status, 0),
        (
            "Completions",
            "string",
            lambda o: (
                f"{get_path(o, 'status.succeeded') or 0}/{get_path(o, 'spec.completions') or 1}"
            ),
            0,
        ),
        ("Duration", "string", _job_duration, 0),
        _AGE,
        *_WORKLOAD_WIDE,
    ],
    "cronjobs.batch": [
        _NAME,
        ("Schedule", "string", _s("spec.schedule"), 0),
        ("Timezone", "string", _s("spec.timeZone", "<none>"), 0),
        ("Suspend", "boolean", _s("spec.suspend", False), 0),
        ("Active", "integer", lambda o: len(get_path(o, "status.active") or []), 0),
        ("Last Schedule", "string", lambda o: since(get_path(o, "status.lastScheduleTime")), 0),
        _AGE,
        ("Containers", "string", _container_names, 1),
        ("Images", "string", _images, 1),
        ("Selector", "string", _selector, 1),
    ],
    "namespaces": [_NAME, ("Status", "string", _s("status.phase"), 0), _AGE],
    "configmaps": [
        _NAME,
        ("Data", "integer", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}), 0),
        _AGE,
    ],
    "secrets": [
        _NAME,
        ("Type", "string", _s("type"), 0),
        ("Data", "integer", lambda o: len(o.get("data") or {}), 0),
        _AGE,
    ],
    "persistentvolumeclaims": [
        _NAME,
        ("Status", "string", _s("status.phase"), 0),
        ("Volume", "string", _s("spec.volumeName"), 0),
        ("Capacity", "string", _capacity, 0),
        ("Access Modes", "string", _access_modes, 0),
        ("StorageClass", "string", _s("spec.storageClassName", "<unset>"), 0),
        ("VolumeAttributesClass", "string", _s("spec.volumeAttributesClassName", "<unset>"), 0),
        _AGE,
        ("VolumeMode", "string", _s("spec.volumeMode"), 1),
    ],
    "events": [
        ("Last Seen", "string", _event_last, 0),
        ("Type", "string", _s("type"), 0),
        ("Reason", "string", _s("reason"), 0),
        ("Object", "string", _event_object, 0),
        ("Subobject", "string", _s("involvedObject.fieldPath"), 1),
        ("Source", "string", _event_source, 1),
        ("Message", "string", lambda o: str(o.get("message") or "").strip(), 0),
        ("First Seen", "string", _event_first, 1),
        ("Count", "string", _event_count, 1),
        ("Name", "string", _name, 1),
    ],
}


def _columns(rt: ResourceType) -> list[Column]:
    if rt.key in COLUMNS:
        return COLUMNS[rt.key]
    cols: list[Column] = [_NAME]
    for col in rt.printer_columns:  # a CRD's additionalPrinterColumns
        path = str(col.get("jsonPath", ""))
        priority = int(col.get("priority") or 0)
        if path.lstrip(".") == "metadata.creationTimestamp":
            cols.append((str(col["name"]), "string", age, priority))
        else:
            cols.append((str(col["name"]), str(col.get("type", "string")), _jp(path), priority))
    return cols if rt.printer_columns else [_NAME, _AGE]


def to_table(rt: ResourceType, objects: list[Obj], include: str, headers: bool = True) -> Obj:
    """Every column, priority 1 included (the server prints wide; kubectl hides those unless
    `-o wide`)."""
    columns = _columns(rt)
    definitions = [
        {
            "name": n,
            "type": t,
            "format": "name" if fn is _name else "",
            "description": "",
            "priority": priority,
        }
        for n, t, fn, priority in columns
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
        rows.append({"cells": [fn(obj) for _, _, fn, _ in columns], "object": embedded})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": definitions if headers else None,
        "rows": rows,
    }
