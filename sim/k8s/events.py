"""Kubernetes Events written by the simulated controllers (`kubectl get events`, describe)."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from sim.k8s.errors import ApiError
from sim.k8s.store import clone
from sim.k8s.timeutil import now_iso

if TYPE_CHECKING:
    from sim.k8s.api import Api

Obj = dict[str, Any]


class EventRecorder:
    """Records core/v1 Events, folding repeats into `count` like the real event broadcaster."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.seen: dict[tuple[str, str, str], str] = {}

    def record(self, obj: Obj, reason: str, message: str, etype: str, component: str) -> None:
        rt = self.api.registry.lookup("", "v1", "events")
        assert rt is not None
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (meta.get("uid", ""), reason, message)
        now = now_iso()
        existing_name = self.seen.get(key)
        if existing_name:
            existing = self.api.store.get(rt.key, namespace, existing_name)
            if existing is not None:
                updated = clone(existing)
                updated["count"] = int(existing.get("count", 1)) + 1
                updated["lastTimestamp"] = now
                with contextlib.suppress(ApiError):
                    self.api.update(
                        rt, namespace, existing_name, updated, internal=True, manager=component
                    )
                return
        name = f"{meta['name']}.{time.time_ns():x}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": etype,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "eventTime": None,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
        }
        with contextlib.suppress(ApiError):
            self.api.create(rt, namespace, event, internal=True, manager=component)
            self.seen[key] = name
