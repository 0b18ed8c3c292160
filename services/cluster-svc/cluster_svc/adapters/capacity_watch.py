"""The capacity of EKS clusters kept by watching their HyperPod Nodes and their Pods, as an
informer does: list (taking the list's resourceVersion), then watch from that version with
bookmarks; every event moves the version on, a watch that times out is opened again from it,
and a 410 Gone (the version left the API server's history, sent as an ERROR event or as the
watch request's status) lists again. That is the protocol of
https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
(client-go's reflector does the same: tools/cache/reflector.go, ListAndWatch).

The list is read in pages (`shared.adapters.eks_kube.list_pages`, as the reflector's pager
reads), each page reduced to the fields the model reads before the next is asked for. Every
page is served at the first page's resourceVersion, so the watch starts from that version; a
continue token that expired (410) lists again from the start.

One `ClusterCapacityWatch` per EKS cluster, started on its first read and stopped once nobody
read it for `idle_seconds`; its two watches run in threads of their own (the official client is
blocking) and apply their events to one `CapacityModel` under a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

import orjson
from kubernetes.client.exceptions import ApiException

from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR
from cluster_svc.adapters.k8s import KubeClient
from cluster_svc.domain.capacity_model import CapacityModel, kept_node, kept_pod
from shared.adapters.eks_kube import ApiPath, list_pages
from shared.logging import get_logger

log = get_logger("cluster_svc.capacity_watch")

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)  # what names a listed item: a Node's name, a Pod's key
WATCH_SECONDS = 240  # the server ends a watch after this long; it is opened again from its rv
RETRY_SECONDS = 2.0


class Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


def _lines(response: Any) -> Iterator[bytes]:
    """The watch stream's lines (one JSON event each)."""
    pending = b""
    for chunk in response.stream(amt=65536, decode_content=False):
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


class ListWatch(Generic[K]):
    """List then watch one collection of the API, applying what it sees; in a thread until
    `stop()`. A list is applied a page at a time: each page's items, each through `keep` (the
    fields the model reads), go to `put(items)`, which answers their keys; at the list's end
    `retain(keys)` drops what it did not name. A watch event goes to `apply(type, object)`.
    A page at a time, not the whole list: a 1,000-node cluster's 7,000 Pods held kept until the
    list ended were 40 MB more at the peak, and most of it stayed with the process."""

    def __init__(
        self,
        what: str,
        collection: ApiPath,
        put: Callable[[list[Mapping[str, Any]]], Sequence[K]],
        retain: Callable[[set[K]], None],
        apply: Callable[[str, Mapping[str, Any]], None],
        *,
        keep: Callable[[Mapping[str, Any]], Mapping[str, Any]],
    ) -> None:
        self.what = what
        self.collection = collection
        self.put = put
        self.retain = retain
        self.apply = apply
        self.keep = keep
        self.listed = threading.Event()
        self.lists = 0  # how many times it listed (the first, then one per 410)
        self.events = 0  # how many watch events it applied
        self.error: str | None = None  # why the last list or watch failed, until one works
        self._stopped = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{what}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop without waiting: the open watch stream is closed from a thread of its own (a
        close may wait on the read it interrupts); the loop ends at the latest when the server
        ends the watch (WATCH_SECONDS)."""
        self._stopped.set()
        response = self._response
        if response is not None:

            def close() -> None:
                with contextlib.suppress(Exception):  # a closed stream is the goal
                    response.close()

            threading.Thread(target=close, name=f"unwatch-{self.what}", daemon=True).start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                version = self._list()
                while not self._stopped.is_set():
                    version = self._watch(version)
            except Gone:
                log.info("watch expired, listing again", what=self.what)
            except Exception as exc:  # any failure: list again after a pause
                if self._stopped.is_set():
                    return
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("watch failed", what=self.what, error=self.error)
                self._stopped.wait(RETRY_SECONDS)

    def _list(self) -> str:
        listed: set[K] = set()
        version: str | None = None
        try:
            for page in list_pages(self.collection, timeout=60):
                listed.update(self.put([self.keep(item) for item in page.get("items") or []]))
                if version is None:
                    version = str((page.get("metadata") or {}).get("resourceVersion") or "")
        except ApiException as exc:
            if exc.status == 410:  # the continue token expired
                raise Gone from exc
            raise
        self.retain(listed)
        self.lists += 1
        self.error = None
        self.listed.set()
        return version or ""

    def _watch(self, version: str) -> str:
        try:
            response = self.collection.get(
                (10, WATCH_SECONDS + 30),
                watch=True,
                resourceVersion=version,
                allowWatchBookmarks=True,
                timeoutSeconds=WATCH_SECONDS,
            )
        except ApiException as exc:
            if exc.status == 410:
                raise Gone from exc
            raise
        self._response = response
        try:
            for line in _lines(response):
                event = orjson.loads(line)
                kind = str(event.get("type") or "")
                obj: Mapping[str, Any] = event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone
                    raise RuntimeError(f"watch error: {obj.get('message')}")
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind != "BOOKMARK":
                    self.apply(kind, obj)
                    self.events += 1
        finally:
            self._response = None
            response.release_conn()
        return version


class ClusterCapacityWatch:
    """The HyperPod Nodes and the Pods of one EKS cluster, watched into one model."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.model = CapacityModel()
        self.lock = threading.Lock()
        self.last_read = time.monotonic()

        def locked(fn: Callable[..., T]) -> Callable[..., T]:
            def run(*args: Any) -> T:
                with self.lock:
                    return fn(*args)

            return run

        self.watches = (
            ListWatch(
                "nodes",
                client.api_path("api", "v1", "nodes", labelSelector=HYPERPOD_NODE_SELECTOR),
                locked(self.model.put_nodes),
                locked(self.model.retain_nodes),
                locked(self.model.node_event),
                keep=kept_node,
            ),
            ListWatch(
                "pods",
                client.api_path("api", "v1", "pods"),
                locked(self.model.put_pods),
                locked(self.model.retain_pods),
                locked(self.model.pod_event),
                keep=kept_pod,
            ),
        )
        for watch in self.watches:
            watch.start()

    @property
    def ready(self) -> bool:
        return all(w.listed.is_set() for w in self.watches)

    @property
    def error(self) -> str | None:
        return next((w.error for w in self.watches if w.error), None)

    def wait_ready(self, timeout: float) -> bool:
        """Whether both kinds listed within `timeout`; False at once when a list failed."""
        deadline = time.monotonic() + timeout
        while not self.ready:
            if self.error is not None or time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def read(self, fn: Callable[[CapacityModel], T]) -> T:
        """`fn(model)` under the model's lock."""
        self.last_read = time.monotonic()
        with self.lock:
            return fn(self.model)

    def stop(self) -> None:
        for watch in self.watches:
            watch.stop()


class CapacityWatches:
    """One watch per EKS cluster, started by its first read, stopped after `idle_seconds`
    without one (so clusters nobody looks at cost no watch)."""

    def __init__(self, idle_seconds: float = 600.0, ready_seconds: float = 20.0) -> None:
        self.idle_seconds = idle_seconds
        self.ready_seconds = ready_seconds
        self._watches: dict[str, ClusterCapacityWatch] = {}
        self._reaper: asyncio.Task[None] | None = None

    def __contains__(self, eks_cluster: str) -> bool:
        return eks_cluster in self._watches

    async def of(self, eks_cluster: str, client: KubeClient) -> ClusterCapacityWatch | None:
        """The cluster's watch once it has listed both kinds; None if it has not within
        `ready_seconds` (the caller reads live then)."""
        watch = self._watches.get(eks_cluster)
        if watch is not None and watch.client is not client:  # a new endpoint: watch that
            self._watches.pop(eks_cluster).stop()
            watch = None
        if watch is None:
            watch = self._watches[eks_cluster] = ClusterCapacityWatch(client)
            if self._reaper is None or self._reaper.done():
                self._reaper = asyncio.create_task(self._reap(), name="capacity-watch-reaper")
        watch.last_read = time.monotonic()
        if not watch.ready and not await asyncio.to_thread(watch.wait_ready, self.ready_seconds):
            return None
        # failing since it listed (access revoked, API unreachable): the live read says why
        return watch if watch.error is None else None

    def stop_idle(self, now: float | None = None) -> list[str]:
        """Stop the watches nobody read for `idle_seconds`; their cluster names."""
        at = time.monotonic() if now is None else now
        idle = [n for n, w in self._watches.items() if at - w.last_read >= self.idle_seconds]
        for name in idle:
            self._watches.pop(name).stop()
        return idle

    async def _reap(self) -> None:
        while self._watches:
            await asyncio.sleep(min(self.idle_seconds / 4, 60.0))
            for name in self.stop_idle():
                log.info("capacity watch stopped: no reads", eks_cluster=name)

    def close(self) -> None:
        for watch in self._watches.values():
            watch.stop()
        self._watches.clear()
        if self._reaper is not None:
            self._reaper.cancel()


__all__ = ["CapacityWatches", "ClusterCapacityWatch", "ListWatch"]
