"""The rule engine every simulated controller is made of.

A `Rule` says: when an object of `resource` satisfies `when`, after `delay` seconds (read from
the time profile), run `then` on its current version, if it still satisfies `when`. Rules are
level-triggered: evaluated on every store event of their resource, on related events a
controller maps to them, and on a periodic resync, so no transition is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.k8s.errors import ApiError
from sim.k8s.profile_delays import Delay, seconds
from sim.k8s.registry import ResourceType
from sim.k8s.store import Obj, Watcher, WatchEvent, clone
from sim.k8s.timeutil import now_iso

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

log = logging.getLogger(__name__)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_NAME_CHARS) for _ in range(n))


@dataclass(frozen=True)
class Rule:
    name: str
    resource: str  # store key, e.g. "pods", "deployments.apps"
    when: Callable[[Obj], bool]
    then: Callable[[Obj], None]
    delay: Delay = 0.0


def owner_ref(owner: Obj, controller: bool = True) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: Obj, owner: Obj) -> bool:
    uid = owner["metadata"]["uid"]
    return any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences") or [])


def controller_of(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def condition(obj: Obj, ctype: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def set_condition(
    status: Obj, ctype: str, value: str, reason: str = "", message: str = "", probe: bool = False
) -> None:
    """Set a condition, keeping lastTransitionTime when the status does not change."""
    conditions = status.setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") != value:
                c["lastTransitionTime"] = now_iso()
            c.update(status=value, reason=reason, message=message)
            if probe:
                c["lastProbeTime"] = None
            return
    entry: dict[str, Any] = {
        "type": ctype,
        "status": value,
        "lastTransitionTime": now_iso(),
        "reason": reason,
        "message": message,
    }
    if probe:
        entry["lastProbeTime"] = None
    conditions.append(entry)


class Controller:
    """A set of rules plus the mapping of related events to the objects the rules are about."""

    name = "controller"
    resync_seconds = 1.0

    def __init__(self, server: ApiServer) -> None:
        self.server = server
        self.api = server.api
        self.store = server.store
        self.profile = server.profile
        self.pending: dict[tuple[str, str, str, str], asyncio.TimerHandle | None] = {}
        self.watchers: dict[str, Watcher] = {}
        self.rules: list[Rule] = self.build_rules()

    # -- to override -------------------------------------------------------------------

    def build_rules(self) -> list[Rule]:
        return []

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        """Objects (key, namespace, name) whose rules an event of another resource concerns."""
        return []

    def watched(self) -> set[str]:
        return {r.resource for r in self.rules} | set(self.extra_watches())

    def extra_watches(self) -> tuple[str, ...]:
        return ()

    def active(self) -> bool:
        """Operators run only once installed; built-in controllers always."""
        return True

    # -- engine ------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        for key in self.watched():
            watcher = Watcher(loop, self.on_event)
            self.watchers[key] = watcher
            self.store.subscribe(key, watcher, None, initial=True)
        loop.call_later(self.resync_seconds, self._resync, loop)

    def stop(self) -> None:
        for key, watcher in self.watchers.items():
            self.store.unsubscribe(key, watcher)
        for handle in self.pending.values():
            if handle is not None:
                handle.cancel()
        self.pending.clear()

    def _resync(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.server.stopping:
            return
        try:
            if self.active():
                for key in {r.resource for r in self.rules}:
                    for obj in self.store.items(key):
                        self.evaluate(key, obj)
                self.resync()
        except Exception:
            log.exception("%s resync failed", self.name)
        loop.call_later(self.resync_seconds, self._resync, loop)

    def resync(self) -> None:
        """Periodic work beyond rule evaluation (e.g. time-based progress)."""

    def on_event(self, event: WatchEvent) -> None:
        if not self.active():
            return
        try:
            if event.type != "DELETED":
                self.evaluate(event.key, event.obj)
            else:
                self.deleted(event)
            for key, ns, name in self.related(event):
                obj = self.store.get(key, ns, name)
                if obj is not None:
                    self.evaluate(key, obj)
        except Exception:
            log.exception("%s failed on %s %s", self.name, event.type, event.key)

    def deleted(self, event: WatchEvent) -> None:
        """An object of a watched resource is gone."""

    def poke(self, key: str, namespace: str = "", name: str | None = None) -> None:
        """Re-evaluate rules for one object (or every object of `key` when name is None)."""
        if name is None:
            for obj in self.store.items(key, namespace or None):
                self.evaluate(key, obj)
            return
        found = self.store.get(key, namespace, name)
        if found is not None:
            self.evaluate(key, found)

    def evaluate(self, key: str, obj: Obj) -> None:
        meta = obj["metadata"]
        for rule in self.rules:
            if rule.resource != key:
                continue
            pkey = (rule.name, key, meta.get("namespace") or "", meta["name"])
            if pkey in self.pending:
                continue
            try:
                matched = rule.when(obj)
            except Exception:
                log.exception("rule %s predicate failed", rule.name)
                continue
            if not matched:
                continue
            delay = seconds(rule.delay, self.profile)
            loop = asyncio.get_running_loop()
            if delay <= 0:
                self.pending[pkey] = None
                loop.call_soon(self._fire, rule, pkey, meta["uid"])
            else:
                self.pending[pkey] = loop.call_later(delay, self._fire, rule, pkey, meta["uid"])

    def _fire(self, rule: Rule, pkey: tuple[str, str, str, str], uid: str) -> None:
        self.pending.pop(pkey, None)
        if self.server.stopping or not self.active():
            return
        _, key, ns, name = pkey
        obj = self.store.get(key, ns, name)
        if obj is None or obj["metadata"]["uid"] != uid:
            return
        try:
            if rule.when(obj):
                rule.then(clone(obj))
        except ApiError as exc:
            if exc.code not in (404, 409):
                log.warning("rule %s on %s/%s: %s", rule.name, ns, name, exc.message)
            # a conflict or a vanished object: the next event re-evaluates
        except Exception:
            log.exception("rule %s on %s/%s failed", rule.name, ns, name)

    # -- writes ------------------------------------------------------------------------

    def rt(self, key: str) -> ResourceType:
        rt = self.api.registry.by_key(key)
        if rt is None:
            raise ApiError(404, f"resource {key} is not served")
        return rt

    def create(self, key: str, obj: Obj) -> Obj:
        rt = self.rt(key)
        return self.api.create(
            rt, obj["metadata"].get("namespace", ""), obj, manager=self.name, internal=True
        )

    def update(self, key: str, obj: Obj) -> Obj:
        rt = self.rt(key)
        meta = obj["metadata"]
        return self.api.update(
            rt, meta.get("namespace") or "", meta["name"], obj, manager=self.name, internal=True
        )

    def update_status(self, key: str, obj: Obj) -> Obj:
        rt = self.rt(key)
        meta = obj["metadata"]
        return self.api.update(
            rt,
            meta.get("namespace") or "",
            meta["name"],
            obj,
            subresource="status" if rt.status_subresource else None,
            manager=self.name,
            internal=True,
        )

    def delete(self, key: str, obj: Obj, propagation: str = "Background") -> None:
        rt = self.rt(key)
        meta = obj["metadata"]
        with contextlib.suppress(ApiError):
            self.api.delete(rt, meta.get("namespace") or "", meta["name"], propagation=propagation)

    def event(self, obj: Obj, reason: str, message: str, etype: str = "Normal") -> None:
        self.server.events.record(obj, reason, message, etype, self.name)

    def children(self, key: str, owner: Obj) -> list[Obj]:
        ns = owner["metadata"].get("namespace") or None
        return [o for o in self.store.items(key, ns) if owned_by(o, owner)]

    def owner_of(self, event: WatchEvent, owner_key: str, kind: str) -> list[tuple[str, str, str]]:
        """Map an event of a child to its controlling owner of `kind`."""
        ref = controller_of(event.obj)
        if ref and ref.get("kind") == kind:
            return [(owner_key, event.obj["metadata"].get("namespace") or "", ref["name"])]
        return []


def template_pod(
    owner: Obj, template: Obj, name: str, extra_labels: dict[str, str] | None = None
) -> Obj:
    meta = clone(template.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels.update(extra_labels or {})
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_ref(owner)],
        },
        "spec": clone(template.get("spec") or {}),
    }
    return pod
