"""Metrics of a cluster: the observability add-on's exporters scraped into an in-process store,
and PromQL-lite queries (shared.promql) answered from it (`qry.workload.metrics`).

No Prometheus server is needed: once a cluster is queried, its exporter pods (dcgm-exporter on
9400, the EFA exporter on 9109, in `hyperpod-observability`) are scraped through the API
server's pod proxy every `SCRAPE_SECONDS`, as Prometheus's Kubernetes pod discovery would, while
the cluster keeps being queried (`IDLE_SECONDS`). Each sample carries the labels the exporter
gave it plus `cluster`, `job` (the exporter) and `instance` (node:port); `MAX_WINDOW` of
samples is kept per series. With the exporters there, the add-on's collector also scrapes the
ready vLLM and SGLang model servers of the endpoints (pods labelled
`hyperpilot.dev/role=worker`, their `http` port, `/metrics`), job `model-server`, instance pod:port, with the pod's `namespace`,
`pod` and `endpoint` (its `hyperpilot.dev/endpoint` label), as Kubernetes pod discovery's
relabelling gives them. The store belongs to one replica: a second workload-svc scrapes on
its own.

With a Prometheus server beside the control plane (PROMETHEUS_URL and PROMETHEUS_HOME, set by
`hyperpilot up` when Debian's `prometheus` is installed), the server scrapes instead: every
`SYNC_SECONDS` each reachable cluster's exporter and model-server pods are written as its
file_sd targets (workload_svc.domain.prometheus), a cluster that comes or goes reloads the
server, and a query is handed to its HTTP API (`/api/v1/query`, `/api/v1/query_range`) with
`cluster="<the route's cluster>"` added to every selector (shared.promql.render): the scope is
the server's doing, whatever the caller's matchers say. Answers name their `source`
(`prometheus` or `promql-lite`); when the server does not answer, the in-process scraper does,
and says so in `note`.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
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
from shared.promql import (
    Expr,
    Labels,
    Matcher,
    QueryError,
    exposition,
    matrix,
    parse,
    render,
    vector,
)
from shared.queries import BadRequest
from workload_svc import records
from workload_svc.access import Clusters, Kube
from workload_svc.adapters.prometheus import Prometheus
from workload_svc.domain.prometheus import ScrapeTarget, config, job_name, target_groups

log = get_logger("workload_svc.metrics")

SCRAPE_SECONDS = 2.0
MODEL_SERVER_JOB = "model-server"
ENDPOINT_LABEL = "hyperpilot.dev/endpoint"
WORKER_SELECTOR = "hyperpilot.dev/role=worker"
# the model servers whose metrics are scraped, each under its own names (sim.k8s.serving_metrics)
ENGINES = ("vllm", "sglang")
IDLE_SECONDS = 900.0  # a cluster nobody queried for this long stops being scraped
SYNC_SECONDS = 5.0  # how often a Prometheus server's targets are brought up to date
LITE_NOTE = (
    "no Prometheus server runs beside this control plane: workload-svc scrapes the exporters"
    " and evaluates PromQL-lite itself (install Debian's prometheus, `make prometheus`, and"
    " restart `make up` for a real one)"
)
Target = ScrapeTarget


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

    def __init__(
        self,
        clusters: Clusters,
        clock: Callable[[], float] = time.time,
        prometheus: Prometheus | None = None,
    ) -> None:
        self.clusters = clusters
        self.clock = clock
        self.prometheus = prometheus
        self.stores: dict[str, ClusterSeries] = {}
        self.asked: dict[str, float] = {}  # cluster -> when it was last queried
        self.locks: dict[str, asyncio.Lock] = {}
        self.synced: dict[str, list[str]] = {}  # cluster -> the instances Prometheus is given
        self.sync_lock = asyncio.Lock()

    async def scrape(self, cluster: str) -> ClusterSeries:
        """Scrape every exporter pod of the cluster once."""
        lock = self.locks.setdefault(cluster, asyncio.Lock())
        async with lock:
            store = self.stores.setdefault(cluster, ClusterSeries())
            kube = await self.clusters.kube(cluster, any_status=True)
            targets = await _targets(kube)
            if targets:  # the collector runs with the exporters: the model servers too
                targets += await _model_servers(kube)
            at = self.clock()
            answers = await asyncio.gather(
                *(_scrape_one(kube, cluster, target) for target in targets),
                return_exceptions=True,
            )
            store.targets = [target.instance for target in targets]
            store.errors = {}
            for target, answer in zip(targets, answers, strict=True):
                if isinstance(answer, BaseException):
                    store.errors[target.instance] = str(answer)[:200]
                    log.info(
                        "scrape failed", cluster=cluster, pod=target.pod, error=str(answer)[:200]
                    )
                    continue
                store.add(at, target.instance, answer)
            return store

    async def sync_cluster(self, prometheus: Prometheus, cluster: str) -> list[str]:
        """Write one cluster's Prometheus targets (none without exporters); their instances."""
        row = await self.clusters.row(cluster, any_status=True)
        kube = await self.clusters.kube(cluster, any_status=True)
        targets = await _targets(kube)
        if targets:
            targets += await _model_servers(kube)
        groups = target_groups(cluster, str(row["endpoint"]), targets)
        prometheus.write_cluster(cluster, await kube.bearer(), str(row["ca_data"]), groups)
        return [target.instance for target in targets]

    async def sync(self, prometheus: Prometheus, only: str | None = None) -> None:
        """Bring the server's targets up to date: every reachable cluster's (or `only`'s), and
        its job list, reloading it when a cluster came or went."""
        async with self.sync_lock:
            names = (
                [only] if only is not None else await records.reachable_clusters(self.clusters.pool)
            )
            for cluster in names:
                try:
                    self.synced[cluster] = await self.sync_cluster(prometheus, cluster)
                except (StageError, OSError) as exc:
                    log.info("prometheus targets not written", cluster=cluster, error=str(exc))
            if only is None:
                for gone in set(self.synced) - set(names):
                    self.synced.pop(gone)
            if prometheus.write_config(config(prometheus.home, self.synced)):
                await prometheus.reload()

    async def run(self) -> None:
        """Keep scraping the clusters being queried (or keep a Prometheus server's targets up
        to date)."""
        if self.prometheus is not None:
            while True:
                try:
                    await self.sync(self.prometheus)
                except (StageError, OSError) as exc:
                    log.info("prometheus sync failed", error=str(exc)[:200])
                await asyncio.sleep(SYNC_SECONDS)
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
        if self.prometheus is not None:
            try:
                return await self.from_prometheus(self.prometheus, asked, expr)
            except StageError as exc:
                if exc.code == "PrometheusRefused":
                    raise BadRequest(f"query: {exc.message}", exc.hint or "") from exc
                if isinstance(exc, PermanentError):
                    raise
                answer = await self.in_process(asked, expr)
                return answer | {"note": f"{exc.message}; answered in-process instead"}
        return await self.in_process(asked, expr) | {"note": LITE_NOTE}

    async def from_prometheus(
        self, prometheus: Prometheus, asked: MetricsQuery, expr: Expr
    ) -> dict[str, Any]:
        """The query, scoped to the route's cluster, evaluated by the Prometheus server."""
        if asked.cluster not in self.synced:  # a cluster it was not given yet
            await self.sync(prometheus, only=asked.cluster)
        instances = self.synced.get(asked.cluster) or []
        if not instances:
            raise _not_enabled(asked.cluster)
        scoped = render(expr, Matcher(CLUSTER_LABEL, "=", asked.cluster))
        now = self.clock()
        span = asked.span()
        if span is None:
            at = asked.time if asked.time is not None else now
            data = await prometheus.get("/api/v1/query", {"query": scoped, "time": f"{at:.3f}"})
        else:
            end = asked.end if asked.end is not None else now
            start = asked.start if asked.start is not None else end - span
            data = await prometheus.get(
                "/api/v1/query_range",
                {
                    "query": scoped,
                    "start": f"{start:.3f}",
                    "end": f"{end:.3f}",
                    "step": f"{asked.step_seconds(span):g}",
                },
            )
        found = await prometheus.get("/api/v1/targets", {"state": "active"})
        mine = [
            t
            for t in found.get("activeTargets") or []
            if (t.get("discoveredLabels") or {}).get("job") == job_name(asked.cluster)
            or (t.get("scrapePool") == job_name(asked.cluster))
        ]
        scraped = [_unix(t.get("lastScrape")) for t in mine]
        return {
            "status": "success",
            "data": data,
            "cluster": asked.cluster,
            "query": asked.query,
            "evaluated": scoped,
            "scraped_at": max((s for s in scraped if s is not None), default=None),
            "targets": instances,
            "scrape_errors": {
                str((t.get("labels") or {}).get("instance", "")): str(t["lastError"])[:200]
                for t in mine
                if t.get("lastError")
            },
            "engine": f"prometheus at {prometheus.url}",
            "source": "prometheus",
        }

    async def in_process(self, asked: MetricsQuery, expr: Expr) -> dict[str, Any]:
        """The query evaluated by PromQL-lite over the in-process store."""
        unseen = asked.cluster not in self.stores
        self.asked[asked.cluster] = self.clock()
        store = self.stores.get(asked.cluster)
        if store is None or store.scraped_at is None or unseen:
            store = await self.scrape(asked.cluster)
        if not store.targets:
            raise _not_enabled(asked.cluster)
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
            "source": "promql-lite",
        }


def _not_enabled(cluster: str) -> PermanentError:
    return PermanentError(
        "ObservabilityNotEnabled",
        f"cluster {cluster} runs no metrics exporter (namespace"
        f" {OBSERVABILITY_NAMESPACE} has no dcgm-exporter or efa-exporter pod)",
        "enable observability: PATCH /api/v1/clusters/{name}/features"
        ' {"observability": {"enabled": true}} (dry run first)',
    )


def _unix(stamp: Any) -> float | None:
    """An RFC 3339 time of the targets API as unix seconds (None for Prometheus's zero time)."""
    if not isinstance(stamp, str) or stamp.startswith("0001-"):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


async def _targets(kube: Kube) -> list[Target]:
    """The exporters: every running dcgm-exporter and EFA exporter pod."""
    found = []
    for exporter, port in EXPORTERS:
        pods = await kube.pods(OBSERVABILITY_NAMESPACE, f"app.kubernetes.io/name={exporter}")
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName") or (pod.get("spec") or {}).get(
                "node_name"
            )
            phase = (pod.get("status") or {}).get("phase")
            if node and phase == "Running":
                name = str(pod["metadata"]["name"])
                found.append(
                    Target(exporter, OBSERVABILITY_NAMESPACE, name, port, f"{node}:{port}")
                )
    return found


async def _model_servers(kube: Kube) -> list[Target]:
    """The ready vLLM and SGLang model servers of the endpoints, on their `http` port."""
    found = []
    for pod in await kube.pods_in(None, WORKER_SELECTOR):
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        containers = spec.get("containers") or []
        main = containers[0] if containers else {}
        words = " ".join(map(str, [main.get("image", ""), *(main.get("command") or [])]))
        ports = main.get("ports") or []
        port = next((p for p in ports if p.get("name") == "http"), ports[0] if ports else None)
        if not ready or not any(e in words.lower() for e in ENGINES) or port is None:
            continue
        number = int(port.get("containerPort") or port.get("container_port") or 0)
        labels = {
            "namespace": str(meta.get("namespace", "")),
            "pod": str(meta.get("name", "")),
            "endpoint": str((meta.get("labels") or {}).get(ENDPOINT_LABEL, "")),
        }
        found.append(
            Target(
                MODEL_SERVER_JOB,
                labels["namespace"],
                labels["pod"],
                number,
                f"{labels['pod']}:{number}",
                tuple(labels.items()),
            )
        )
    return found


async def _scrape_one(kube: Kube, cluster: str, target: Target) -> list[tuple[Labels, float]]:
    text = await kube.scrape(target.namespace, target.pod, target.port)
    extra = dict(target.labels) | {
        CLUSTER_LABEL: cluster,
        "job": target.job,
        "instance": target.instance,
    }
    samples = []
    for labels, value in exposition(text):
        merged = dict(labels) | extra
        samples.append((tuple(sorted(merged.items())), value))
    return samples
