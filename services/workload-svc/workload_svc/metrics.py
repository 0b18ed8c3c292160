"""Metrics of a cluster: the observability add-on's exporters scraped into an in-process store,
and PromQL-lite queries (shared.promql) answered from it (`qry.workload.metrics`).

No Prometheus server is needed: once a cluster is queried, its exporter pods (dcgm-exporter on
9400, the EFA exporter on 9109, in `hyperpod-observability`) are scraped through the API
server's pod proxy every `SCRAPE_SECONDS`, as Prometheus's Kubernetes pod discovery would, while
the cluster keeps being queried (`IDLE_SECONDS`). Each sample carries the labels the exporter
gave it plus `cluster`, `job` (the exporter) and `instance` (node:port); `MAX_WINDOW` of
samples is kept per series. The store belongs to one replica: a second workload-svc scrapes on
its own.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from shared.contracts.metrics import (
    CLUSTER_LABEL,
    EXPORTERS,
    MAX_WINDOW,
    OBSERVABILITY_NAMESPACE,
    MetricsQuery,
    beyond_cluster,
)
from shared.errors import PermanentError, StageError
from shared.logging import get_logger
from shared.promql import Labels, QueryError, exposition, matrix, parse, vector
from shared.queries import BadRequest
from workload_svc.access import Clusters, Kube

log = get_logger("workload_svc.metrics")

SCRAPE_SECONDS = 2.0
IDLE_SECONDS = 900.0  # a cluster nobody queried for this long stops being scraped


class ClusterSeries:
    """One cluster's scraped samples, by series."""

    def __init__(self, keep: float = MAX_WINDOW) -> None:
        self.keep = keep
        self.series: dict[Labels, deque[tuple[float, float]]] = {}
        self.scraped_at: float | None = None
        self.targets: list[str] = []
        self.errors: dict[str, str] = {}
        self.last: dict[str, set[Labels]] = {}  # target -> the series of its last scrape

    def add(self, at: float, target: str, samples: list[tuple[Labels, float]]) -> None:
        """One scrape of one target. A series the target served last time and not now gets a
        staleness marker (NaN), as Prometheus writes one, so it ends here instead of lingering
        for the lookback."""
        seen = {labels for labels, _ in samples}
        for labels in self.last.get(target, set()) - seen:
            self.series[labels].append((at, math.nan))
        self.last[target] = seen
        for labels, value in samples:
            kept = self.series.setdefault(labels, deque())
            kept.append((at, value))
            while kept and kept[0][0] < at - self.keep:
                kept.popleft()
        self.scraped_at = at


class Metrics:
    """The scraper and the query route."""

    def __init__(self, clusters: Clusters, clock: Callable[[], float] = time.time) -> None:
        self.clusters = clusters
        self.clock = clock
        self.stores: dict[str, ClusterSeries] = {}
        self.asked: dict[str, float] = {}  # cluster -> when it was last queried
        self.locks: dict[str, asyncio.Lock] = {}

    async def scrape(self, cluster: str) -> ClusterSeries:
        """Scrape every exporter pod of the cluster once."""
        lock = self.locks.setdefault(cluster, asyncio.Lock())
        async with lock:
            store = self.stores.setdefault(cluster, ClusterSeries())
            kube = await self.clusters.kube(cluster, any_status=True)
            targets = await _targets(kube)
            at = self.clock()
            answers = await asyncio.gather(
                *(_scrape_one(kube, cluster, *target) for target in targets),
                return_exceptions=True,
            )
            store.targets = [f"{node}:{port}" for _, _, node, port in targets]
            store.errors = {}
            for (_, pod, node, port), answer in zip(targets, answers, strict=True):
                if isinstance(answer, BaseException):
                    store.errors[f"{node}:{port}"] = str(answer)[:200]
                    log.info("scrape failed", cluster=cluster, pod=pod, error=str(answer)[:200])
                    continue
                store.add(at, f"{node}:{port}", answer)
            return store

    async def run(self) -> None:
        """Keep scraping the clusters being queried."""
        while True:
            await asyncio.sleep(SCRAPE_SECONDS)
            now = self.clock()
            for cluster, asked in list(self.asked.items()):
                if now - asked > IDLE_SECONDS:
                    self.asked.pop(cluster, None)
                    continue
                try:
                    await self.scrape(cluster)
                except (StageError, OSError) as exc:
                    log.info("scrape of cluster failed", cluster=cluster, error=str(exc)[:200])

    async def query(self, request: dict[str, Any]) -> Any:
        try:
            asked = MetricsQuery.model_validate(request)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "query"
            raise BadRequest(
                f"{where}: {first['msg']}", "see GET /docs for the parameters"
            ) from exc
        try:
            expr = parse(asked.query)
        except QueryError as exc:
            raise BadRequest(f"query: {exc.message}", exc.hint) from exc
        matcher = beyond_cluster(asked.cluster, expr)
        if matcher is not None:
            raise PermanentError(
                "OtherCluster",
                f"query: the matcher {matcher.label}{matcher.op}{matcher.value!r} reaches series"
                f" of clusters other than {asked.cluster}; this route reads {asked.cluster} only",
                f'use {CLUSTER_LABEL}="{asked.cluster}" or no {CLUSTER_LABEL} matcher',
            )
        unseen = asked.cluster not in self.stores
        self.asked[asked.cluster] = self.clock()
        store = self.stores.get(asked.cluster)
        if store is None or store.scraped_at is None or unseen:
            store = await self.scrape(asked.cluster)
        if not store.targets:
            raise PermanentError(
                "ObservabilityNotEnabled",
                f"cluster {asked.cluster} runs no metrics exporter (namespace"
                f" {OBSERVABILITY_NAMESPACE} has no dcgm-exporter or efa-exporter pod)",
                "enable observability: PATCH /api/v1/clusters/{name}/features"
                ' {"observability": {"enabled": true}} (dry run first)',
            )
        now = self.clock()
        try:
            span = asked.span()
            if span is None:
                data = vector(expr, store.series, asked.time if asked.time is not None else now)
            else:
                end = asked.end if asked.end is not None else now
                start = asked.start if asked.start is not None else end - span
                data = matrix(expr, store.series, start, end, asked.step_seconds(span))
        except QueryError as exc:
            raise BadRequest(f"query: {exc.message}", exc.hint) from exc
        return {
            "status": "success",
            "data": data,
            "cluster": asked.cluster,
            "query": asked.query,
            "scraped_at": store.scraped_at,
            "targets": store.targets,
            "scrape_errors": store.errors,
            "engine": f"in-process (scraped every {SCRAPE_SECONDS:g}s)",
        }


async def _targets(kube: Kube) -> list[tuple[str, str, str, int]]:
    """(exporter, pod, node, port) of every running exporter pod."""
    found = []
    for exporter, port in EXPORTERS:
        pods = await kube.pods(OBSERVABILITY_NAMESPACE, f"app.kubernetes.io/name={exporter}")
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName") or (pod.get("spec") or {}).get(
                "node_name"
            )
            phase = (pod.get("status") or {}).get("phase")
            if node and phase == "Running":
                found.append((exporter, str(pod["metadata"]["name"]), str(node), port))
    return found


async def _scrape_one(
    kube: Kube, cluster: str, exporter: str, pod: str, node: str, port: int
) -> list[tuple[Labels, float]]:
    text = await kube.scrape(OBSERVABILITY_NAMESPACE, pod, port)
    extra = {CLUSTER_LABEL: cluster, "job": exporter, "instance": f"{node}:{port}"}
    samples = []
    for labels, value in exposition(text):
        merged = dict(labels) | extra
        samples.append((tuple(sorted(merged.items())), value))
    return samples
