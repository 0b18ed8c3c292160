"""The request traffic the simulated model servers received, as Prometheus would see it: each
request the service or pod proxy hands to a pod is counted, and a KEDA prometheus trigger whose
query is a request rate, `sum(rate(<counter>_total{<matchers>}[<window>]))`, is answered from
those counts over the window, per second. Matchers name the pod's namespace, its name (`pod`),
its `hyperpilot.dev/endpoint` and `hyperpilot.dev/role` labels (`endpoint`, `role`) or any other
pod label by name; `=`, `!=`, `=~` and `!~` are understood."""

from __future__ import annotations

import re
import time
from collections import deque
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

RATE_QUERY = re.compile(
    r"^\s*(?:sum\s*\(\s*)?rate\s*\(\s*(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*_total)\s*"
    r"(?:\{(?P<matchers>[^}]*)\})?\s*\[\s*(?P<window>\d+)(?P<unit>[smh])\s*\]\s*\)\s*\)?\s*$"
)
MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
LABELS = {"endpoint": "hyperpilot.dev/endpoint", "role": "hyperpilot.dev/role"}
UNITS = {"s": 1, "m": 60, "h": 3600}
KEEP_SECONDS = 3600.0


class Traffic:
    """Requests per pod, each with the time it arrived (kept for an hour)."""

    def __init__(self) -> None:
        self.requests: deque[tuple[float, str, str, dict[str, str]]] = deque()

    def record(self, pod: Obj, at: float | None = None) -> None:
        meta = pod["metadata"]
        when = time.monotonic() if at is None else at
        self.requests.append(
            (when, meta["namespace"], meta["name"], dict(meta.get("labels") or {}))
        )
        while self.requests and self.requests[0][0] < when - KEEP_SECONDS:
            self.requests.popleft()

    def rate(self, query: str, now: float | None = None) -> float | None:
        """The per-second request rate a rate query asks for; None if it is not one."""
        found = RATE_QUERY.match(query)
        if found is None:
            return None
        matchers = MATCHER.findall(found["matchers"] or "")
        window = int(found["window"]) * UNITS[found["unit"]]
        since = (time.monotonic() if now is None else now) - window
        count = sum(
            1
            for when, namespace, name, labels in self.requests
            if when >= since and all(_matches(namespace, name, labels, m) for m in matchers)
        )
        return count / window if window else 0.0


def _matches(
    namespace: str, name: str, labels: dict[str, str], matcher: tuple[str, str, str]
) -> bool:
    label, op, wanted = matcher
    value = (
        namespace
        if label == "namespace"
        else name
        if label == "pod"
        else labels.get(LABELS.get(label, label), "")
    )
    if op == "=":
        return value == wanted
    if op == "!=":
        return value != wanted
    hit = re.fullmatch(wanted, value) is not None
    return hit if op == "=~" else not hit


_TRAFFIC: WeakKeyDictionary[ApiServer, Traffic] = WeakKeyDictionary()


def traffic_of(server: ApiServer) -> Traffic:
    """The traffic one simulated API server's proxy handed to its pods."""
    if server not in _TRAFFIC:
        _TRAFFIC[server] = Traffic()
    return _TRAFFIC[server]
