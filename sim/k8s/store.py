"""Versioned object store: one resourceVersion counter per server, a history ring per resource.

Stored objects are never mutated in place: writers store a new dict, so readers may serialize
what they get without copying. Watchers are told of every change in order, on their own loop;
a watch may resume from any resourceVersion still inside the ring, and gets 410 Gone before it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from sim.k8s.errors import gone

Obj = dict[str, Any]


def clone(obj: Obj) -> Obj:
    """A deep copy (JSON round trip: faster than copy.deepcopy for API objects)."""
    result: Obj = orjson.loads(orjson.dumps(obj))
    return result


@dataclass
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    key: str
    obj: Obj
    old: Obj | None
    rv: int
    _encoded: bytes | None = field(default=None, repr=False)

    def encoded_object(self) -> bytes:
        if self._encoded is None:
            self._encoded = orjson.dumps(self.obj)
        return self._encoded


class Watcher:
    """Receives store events on its asyncio loop, whatever thread wrote them."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, callback: Callable[[WatchEvent], None]
    ) -> None:
        self.loop = loop
        self.callback = callback
        self.closed = False

    def deliver(self, event: WatchEvent) -> None:
        if self.closed:
            return
        try:
            self.loop.call_soon_threadsafe(self._run, event)
        except RuntimeError:  # loop closed
            self.closed = True

    def _run(self, event: WatchEvent) -> None:
        if not self.closed:
            self.callback(event)


def ns_name(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace") or "", meta["name"]


class Store:
    def __init__(self, history: int = 5000) -> None:
        self.lock = threading.RLock()
        self.rv = 1
        self.history_size = history
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self.history: dict[str, deque[WatchEvent]] = {}
        self.compacted: dict[str, int] = {}
        self.watchers: dict[str, set[Watcher]] = {}

    def next_rv(self) -> int:
        with self.lock:
            self.rv += 1
            return self.rv

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(key, {}).get((namespace, name))

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        with self.lock:
            objs = self.objects.get(key, {})
            if namespace:
                found = [o for (ns, _), o in objs.items() if ns == namespace]
            else:
                found = list(objs.values())
        found.sort(key=ns_name)
        return found

    def resource_keys(self) -> list[str]:
        with self.lock:
            return list(self.objects)

    def put(self, key: str, obj: Obj, event_type: str) -> WatchEvent:
        """Store `obj` (owned by the store from now on) under a fresh resourceVersion."""
        with self.lock:
            rv = self.next_rv()
            obj["metadata"]["resourceVersion"] = str(rv)
            bucket = self.objects.setdefault(key, {})
            old = bucket.get(ns_name(obj))
            bucket[ns_name(obj)] = obj
            return self._record(WatchEvent(event_type, key, obj, old, rv))

    def remove(self, key: str, namespace: str, name: str) -> WatchEvent | None:
        with self.lock:
            old = self.objects.get(key, {}).pop((namespace, name), None)
            if old is None:
                return None
            rv = self.next_rv()
            final = dict(old)
            final["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
            return self._record(WatchEvent("DELETED", key, final, old, rv))

    def drop_resource(self, key: str) -> list[WatchEvent]:
        """Forget every object of a resource (its CRD was deleted)."""
        with self.lock:
            names = list(self.objects.get(key, {}))
            events = [self.remove(key, ns, name) for ns, name in names]
        return [e for e in events if e is not None]

    def _record(self, event: WatchEvent) -> WatchEvent:
        ring = self.history.get(event.key)
        if ring is None:
            ring = self.history[event.key] = deque(maxlen=self.history_size)
        if len(ring) == ring.maxlen:
            self.compacted[event.key] = ring[0].rv
        ring.append(event)
        for watcher in list(self.watchers.get(event.key, ())):
            watcher.deliver(event)
        return event

    def subscribe(
        self, key: str, watcher: Watcher, since: int | None, initial: bool
    ) -> list[WatchEvent]:
        """Register `watcher`; return what it must see first (replayed or synthetic ADDED events).

        `since` resumes after that resourceVersion (410 if the ring no longer covers it);
        `initial` replays the current objects as ADDED instead.
        """
        with self.lock:
            if initial:
                first = [
                    WatchEvent("ADDED", key, o, None, int(o["metadata"]["resourceVersion"]))
                    for o in self.items(key)
                ]
            else:
                first = []
                if since is not None:
                    if since < self.compacted.get(key, 0):
                        raise gone(f"too old resource version: {since} ({self.rv})")
                    first = [e for e in self.history.get(key, ()) if e.rv > since]
            self.watchers.setdefault(key, set()).add(watcher)
        return first

    def unsubscribe(self, key: str, watcher: Watcher) -> None:
        watcher.closed = True
        with self.lock:
            self.watchers.get(key, set()).discard(watcher)

    def watcher_count(self) -> int:
        with self.lock:
            return sum(len(w) for w in self.watchers.values())
