"""events.k8s.io/v1 is a second view of the same Events as core/v1 (as in the real server):
conversions between the two shapes, field by field."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _micro(ts: str | None) -> str | None:
    if not ts:
        return None
    return ts if "." in ts else ts.replace("Z", ".000000Z")


def to_v1(core: Obj) -> Obj:
    source = core.get("source") or {}
    out: Obj = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": core["metadata"],
        "eventTime": _micro(
            core.get("eventTime")
            or core.get("firstTimestamp")
            or core["metadata"].get("creationTimestamp")
        ),
        "reportingController": core.get("reportingComponent") or source.get("component") or "",
        "reportingInstance": core.get("reportingInstance") or source.get("host") or "",
        "action": core.get("action") or core.get("reason") or "",
        "reason": core.get("reason"),
        "regarding": core.get("involvedObject"),
        "note": core.get("message"),
        "type": core.get("type"),
        "deprecatedCount": core.get("count"),
        "deprecatedFirstTimestamp": core.get("firstTimestamp"),
        "deprecatedLastTimestamp": core.get("lastTimestamp"),
        "deprecatedSource": source or None,
    }
    if core.get("related"):
        out["related"] = core["related"]
    return {k: v for k, v in out.items() if v is not None}


def to_core(event: Obj) -> Obj:
    first = event.get("deprecatedFirstTimestamp") or (event.get("eventTime") or "")[:19] + "Z"
    out: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": event.get("metadata") or {},
        "involvedObject": event.get("regarding") or {},
        "reason": event.get("reason"),
        "message": event.get("note"),
        "type": event.get("type"),
        "action": event.get("action"),
        "eventTime": event.get("eventTime"),
        "reportingComponent": event.get("reportingController"),
        "reportingInstance": event.get("reportingInstance"),
        "source": event.get("deprecatedSource")
        or {"component": event.get("reportingController", "")},
        "count": event.get("deprecatedCount") or 1,
        "firstTimestamp": first if first != "Z" else None,
        "lastTimestamp": event.get("deprecatedLastTimestamp") or (first if first != "Z" else None),
    }
    if event.get("related"):
        out["related"] = event["related"]
    return {k: v for k, v in out.items() if v is not None}
