"""Issue 28, fleet scale: a page of the jobs list with 10,000 jobs in history against one with
100, the node list and cluster page at 1,000 nodes, and the memory of each process and the AWS
calls of a live fleet of 50 clusters.

Parts 1-3 (`--part seeded`): the stack as `make up` runs it (the simulated world in its own
process), its read model in PostgreSQL filled directly: 50 clusters (imported, no Kubernetes API behind them, so no
watcher reads them live), one with 1,000 recorded nodes, one with 10, one with 10,000 jobs and
one with 100, and 100 endpoints spread over the clusters.

1. **Jobs list page** (GET /api/v1/clusters/{name}/jobs, limit 100, over HTTP with the admin
   token): p50/p95 of RUNS reads of pages spread over the whole list (the first, the last and
   between, each by its page token) of the 10,000-job cluster, against the same reads of the
   100-job cluster's one page. Floor: the 100-job page. Goal: p95 <= 3x.
2. **Node list** (GET /api/v1/clusters/{name}/nodes?source=recorded, what the cluster page
   reads): p50/p95 of RUNS reads of the 1,000-node cluster against the 10-node one, at the
   page size the UI asks for (limit 100: 100 nodes against 10) and at an equal answer size
   (limit 10 both). Floor: the 10-node cluster. Goal: p95 <= 3x.
3. **Cluster page in Chromium** (Debian's, through Playwright, signed in once): navigation
   start until the node table's first row is drawn with its actions enabled, median of 5
   loads, for the 1,000-node cluster and the 10-node one. The page reads a cluster of at
   most 100 recorded nodes live, which an imported cluster cannot answer, so the browser sends
   every node read of both pages to the read model (`source=recorded`). Floor: the 10-node
   page. Goal: <= 1 s and <= 3x.
4. **Memory with a live fleet** (`live_fleet`, a stack of its own): 50 clusters created
   through the product's own path (POST /api/v1/clusters, 5 at a time): each a VPC, an EKS
   cluster with its dependencies installed in the Kubernetes emulator and a HyperPod cluster,
   one of 1,000 nodes and 49 of 2, recorded by the lifecycle as any create is. The build
   lifts the account's AWS call rate (AWS_CALLS_PER_SECOND) so that it takes minutes, not
   tens of them; every watcher runs at its shipped defaults (node watcher 5 s rounds, a
   900 s resync and an event check each 300 s while events flow, 28 calls per cluster-hour;
   drift watcher 900 s, 28 calls per cluster-hour; the SQS long poll).
   VmRSS and PSS of every process are sampled each second: after 10, 25 and 50 clusters
   (the growth per cluster), through IDLE_SECONDS of the idle fleet (steady: the median of
   that window; the watchers' AWS calls counted over it from the account's call bucket, which
   every AWS call of every service spends from), then while every list of the fleet is read
   (the cluster list and each cluster, its live and recorded nodes, its capacity, which starts
   its Nodes and Pods watch, its jobs and endpoints; the fleet's capacity) three times, and
   for READ_IDLE_SECONDS after with the capacity watches open. Goal: <= 150 MB per service;
   <= 60 AWS calls per idle cluster-hour. The 49 small clusters are built first (samples at
   10, 25 and 49: the growth per cluster), the 1,000-node one last (what it adds).

    .venv/bin/python -m bench.scale [--runs 200] [--part all|seeded|live]

Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import RESULTS, TOKEN, embedded_stack, median, percentile, pss_mb, record, rss_mb
from bench.pipeline import MemorySampler, _processes

CLUSTERS = 50
NODES = 1000
FEW_NODES = 10
UI_NODE_PAGE = 100  # NODE_PAGE in services/gateway/gateway/ui/views/cluster.js
LOADS = 5
JOBS = 10_000
FEW_JOBS = 100
ENDPOINTS = 100
PAGE = 100
SERVICES = ("gateway", "cluster-svc", "workload-svc", "inference-svc")
GOAL_MB = 150.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE_COLUMNS: tuple[str, ...] = (
    "cluster",
    "node_id",
    "instance_group",
    "instance_type",
    "instance_status",
)
NODE_COLUMNS += ("health", "view")
# The flags tests/ui/conftest.py starts Chromium with.
_CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
JOB_COLUMNS: tuple[str, ...] = (
    "cluster",
    "name",
    "recipe",
    "api_version",
    "kind",
    "spec",
    "status",
    "restarts",
)
JOB_COLUMNS += ("budget", "created_at")

# The live fleet (part 4).
LIVE_SMALL_NODES = 2
BUILD_AT_ONCE = 5
# Clusters built when memory is sampled: the 49 small ones first (the growth per cluster),
# then the 1,000-node one (what it adds).
CHECKPOINTS = (10, 25, 49, 50)


def _shipped_watchers() -> dict[str, float]:
    """The watchers' defaults the live fleet runs with (nothing in BUILD_ENV changes them)."""
    from cluster_svc.areas.drift import DriftSettings
    from cluster_svc.areas.nodes import WatchSettings
    from shared.config import shipped_defaults

    return {
        name.upper(): float(value)
        for settings in (WatchSettings, DriftSettings)
        for name, value in shipped_defaults(settings).items()
    }


SMALL_CHECKPOINTS = CHECKPOINTS[:-1]
# A create answered 429/503/504 ("retry shortly": a throttled check, cluster-svc busy) is sent
# again, as a client would.
CREATE_TRIES = 8
RETRY = '"hint":"retry shortly"'
SETTLE_SECONDS = 30.0  # after each checkpoint's last create, before its sample (the last 15 s)
WARMUP_SECONDS = 120.0  # the node watcher's burst (10 calls a cluster) spent before counting
IDLE_SECONDS = 900.0  # DRIFT_WATCH_SECONDS: every cluster observed once by the drift watcher
READ_IDLE_SECONDS = 60.0  # after the reads, the capacity watches still open
READ_ROUNDS = 3
CALL_GOAL = 60.0  # AWS calls per idle cluster-hour, all watchers together
# For the build: the account's shared AWS call rate (10/s by default) would make 50 creates take
# tens of minutes. The rate paces calls; it does not change how many the watchers make.
BUILD_ENV = {"AWS_CALLS_PER_SECOND": "40", "AWS_CALL_BURST": "80"}


def _node(i: int) -> dict[str, Any]:
    node_id = f"i-{i:017x}"
    return {
        "node_id": node_id,
        "instance_group": f"gpu-{i // 250}",
        "instance_type": "ml.p5.48xlarge",
        "instance_status": "Running",
        "health": "healthy",
        "kubernetes_node": f"hyperpod-{node_id}",
        "conditions": {"Ready": "True"},
        "labels": {"sagemaker.amazonaws.com/node-health-status": "Schedulable"},
    }


async def seed(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.copy_records_to_table(
            "clusters",
            columns=["name", "region", "status", "managed", "created_at"],
            records=[
                (f"fleet-{i:02d}", "us-east-1", "imported", False, T0 + timedelta(seconds=i))
                for i in range(CLUSTERS)
            ],
        )
        await conn.copy_records_to_table(
            "cluster_nodes",
            columns=NODE_COLUMNS,
            records=[
                (
                    cluster,
                    n["node_id"],
                    n["instance_group"],
                    n["instance_type"],
                    "Running",
                    "healthy",
                    json.dumps(n),
                )
                for cluster, n in [("fleet-00", _node(i)) for i in range(NODES)]
                + [("fleet-03", _node(i)) for i in range(FEW_NODES)]
            ],
        )
        jobs = [("fleet-01", i) for i in range(JOBS)] + [("fleet-02", i) for i in range(FEW_JOBS)]
        await conn.copy_records_to_table(
            "jobs",
            columns=JOB_COLUMNS,
            records=[
                (
                    cluster,
                    f"job-{i:05d}",
                    "pytorch",
                    "sagemaker.amazonaws.com/v1",
                    "HyperPodPyTorchJob",
                    json.dumps({"instance_group": "gpu-0", "replicas": 2, "script": "train.py"}),
                    ("succeeded", "failed", "running")[i % 3],
                    i % 4,
                    3,
                    T0 + timedelta(seconds=i),
                )
                for cluster, i in jobs
            ],
        )
        await conn.copy_records_to_table(
            "endpoints",
            columns=["cluster", "name", "kind", "spec", "status", "replicas", "ready_replicas"],
            records=[
                (
                    f"fleet-{i % CLUSTERS:02d}",
                    f"ep-{i:03d}",
                    "container",
                    json.dumps({"image": "vllm/vllm-openai:latest", "gpus": 1}),
                    "available",
                    1,
                    1,
                )
                for i in range(ENDPOINTS)
            ],
        )
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def _tokens(api: httpx.Client, cluster: str) -> list[str | None]:
    """Every page's token of a cluster's jobs list (None: the first page)."""
    tokens: list[str | None] = [None]
    while True:
        params: dict[str, Any] = {"limit": PAGE}
        if tokens[-1] is not None:
            params["page_token"] = tokens[-1]
        response = api.get(f"/api/v1/clusters/{cluster}/jobs", params=params)
        response.raise_for_status()
        token = response.headers.get("x-next-page-token")
        if token is None:
            return tokens
        tokens.append(token)


def _page_ms(api: httpx.Client, cluster: str, token: str | None) -> float:
    params: dict[str, Any] = {"limit": PAGE}
    if token is not None:
        params["page_token"] = token
    began = time.perf_counter()
    response = api.get(f"/api/v1/clusters/{cluster}/jobs", params=params)
    elapsed = (time.perf_counter() - began) * 1000
    response.raise_for_status()
    assert len(response.json()) == PAGE, "a page of 100 jobs"
    return elapsed


def _nodes_ms(api: httpx.Client, cluster: str, limit: int, expected: int) -> float:
    """One read of the node list as the cluster page makes it (recorded, a page of `limit`)."""
    params: dict[str, Any] = {"source": "recorded", "limit": limit}
    began = time.perf_counter()
    response = api.get(f"/api/v1/clusters/{cluster}/nodes", params=params)
    elapsed = (time.perf_counter() - began) * 1000
    response.raise_for_status()
    assert len(response.json()["nodes"]) == expected, f"a page of {expected} nodes of {cluster}"
    return elapsed


def _node_list(api: httpx.Client, runs: int) -> dict[str, Any]:
    """The 1,000-node cluster's node list against the 10-node one's, interleaved."""
    sizes = {"ui_page": UI_NODE_PAGE, "equal_answer": FEW_NODES}
    out: dict[str, Any] = {"runs": runs}
    for label, limit in sizes.items():
        for _ in range(20):  # warm both
            _nodes_ms(api, "fleet-03", limit, FEW_NODES)
            _nodes_ms(api, "fleet-00", limit, limit)
        few: list[float] = []
        many: list[float] = []
        for _ in range(runs):
            few.append(_nodes_ms(api, "fleet-03", limit, FEW_NODES))
            many.append(_nodes_ms(api, "fleet-00", limit, limit))
        floor, measured = _stats(few), _stats(many)
        ratio = round(measured["p95_ms"] / floor["p95_ms"], 2)
        out[label] = {
            "limit": limit,
            f"{FEW_NODES}_nodes": floor,
            f"{NODES}_nodes": measured,
            "p95_ratio": ratio,
            "goal_ratio": 3.0,
            "meets_goal": ratio <= 3.0,
        }
    return out


def _recorded_only(route: Any) -> None:
    route.continue_(url=route.request.url.replace("source=live", "source=recorded"))


def _cluster_page(url: str) -> dict[str, Any]:
    """Chromium (Debian's, as tests/ui drives it): navigation start until the first node row
    of the cluster page is drawn with its Reboot action enabled, median of LOADS full loads
    with the token already in the tab."""
    from playwright.sync_api import expect, sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).is_file():
        return {"skipped": "Debian's chromium is not installed (/usr/bin/chromium)"}
    out: dict[str, Any] = {"loads": LOADS}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=_CHROMIUM_FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=url)
            tab = context.new_page()
            tab.set_default_timeout(30_000)
            # The page reads a cluster of <= NODE_PAGE recorded nodes live, and an imported
            # cluster has no HyperPod behind it to read: every node read the page makes goes
            # to the read model instead, for both clusters alike (a no-op for the 1,000).
            tab.route("**/nodes?*", _recorded_only)
            tab.goto("/")
            tab.get_by_label("API token").fill(TOKEN)
            tab.get_by_role("button", name="Sign in").click()
            expect(tab.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
            for cluster, nodes in (("fleet-00", NODES), ("fleet-03", FEW_NODES)):
                usable: list[float] = []
                for attempt in range(LOADS + 1):  # the first load warms the caches
                    tab.goto(f"/?load={attempt}#/clusters/{cluster}")
                    row = tab.locator("tr[data-node]").first
                    expect(row.get_by_role("button", name="Reboot")).to_be_enabled()
                    seconds = tab.evaluate("performance.now()") / 1000
                    shown = tab.locator("tr[data-node]").count()
                    assert shown == min(nodes, UI_NODE_PAGE), f"{cluster}: {shown} rows"
                    if attempt:
                        usable.append(seconds)
                out[f"{nodes}_nodes"] = {
                    "median_s": round(median(usable), 3),
                    "loads_s": [round(v, 3) for v in usable],
                }
        finally:
            browser.close()
    big, small = out[f"{NODES}_nodes"]["median_s"], out[f"{FEW_NODES}_nodes"]["median_s"]
    out["ratio"] = round(big / small, 2)
    out["goal_s"] = 1.0
    out["goal_ratio"] = 3.0
    out["meets_goal"] = big <= 1.0 and out["ratio"] <= 3.0
    return out


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(median(values), 2), "p95_ms": round(percentile(values, 95), 2)}


def _read_everything(api: httpx.Client) -> None:
    """Every list the fleet has, once: what the memory peak is sampled under."""
    clusters = api.get("/api/v1/clusters", params={"limit": 1000}).json()
    assert len(clusters) == CLUSTERS
    nodes = api.get("/api/v1/clusters/fleet-00/nodes", params={"source": "recorded"}).json()
    assert len(nodes["nodes"]) == NODES, "the 1,000 recorded nodes"
    assert len(api.get("/api/v1/endpoints", params={"cluster": "*", "limit": 1000}).json()) == (
        ENDPOINTS
    )
    for cluster in clusters:
        api.get(f"/api/v1/clusters/{cluster['name']}/jobs", params={"limit": 1000})


class Sampler:
    """VmRSS and PSS of named processes every `interval` seconds, kept as (time, name, rss,
    pss), until stopped; windows of it summarised by `steady` and `peak`."""

    def __init__(self, pids: Any, interval: float = 1.0) -> None:
        self.pids = pids
        self.interval = interval
        self.samples: list[tuple[float, str, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for name, pids in self.pids().items():
                rss = sum(rss_mb(p) for p in pids)
                pss = sum(pss_mb(p) for p in pids)
                self.samples.append((now, name, rss, pss))
            self._stop.wait(self.interval)

    def window(self, start: float, end: float) -> dict[str, list[tuple[float, float]]]:
        out: dict[str, list[tuple[float, float]]] = {}
        for at, name, rss, pss in list(self.samples):
            if start <= at <= end:
                out.setdefault(name, []).append((rss, pss))
        return out

    def steady(self, start: float, end: float) -> dict[str, dict[str, float]]:
        """The median of each process's samples in the window."""
        return {
            name: {
                "rss_mb": round(statistics.median(r for r, _ in values), 1),
                "pss_mb": round(statistics.median(p for _, p in values), 1),
            }
            for name, values in self.window(start, end).items()
        }

    def peak(self, start: float, end: float) -> dict[str, dict[str, float]]:
        return {
            name: {
                "rss_mb": round(max(r for r, _ in values), 1),
                "pss_mb": round(max(p for _, p in values), 1),
            }
            for name, values in self.window(start, end).items()
        }


def growth_per_cluster(points: dict[int, float]) -> float:
    """The least-squares slope of MB against clusters (MB per cluster) of >= 2 points."""
    if len(points) < 2:
        raise ValueError("a slope needs two points")
    xs, ys = list(points), list(points.values())
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        raise ValueError("a slope needs two different cluster counts")
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def per_cluster_hour(calls: float, clusters: int, seconds: float) -> float:
    """Calls counted over `seconds` across `clusters`, as calls per cluster per hour."""
    return calls / clusters / (seconds / 3600.0)


def _live_spec(api: httpx.Client, name: str, count: int) -> dict[str, Any]:
    """A create as tests/e2e/conftest.py's cluster_spec makes it: the first zone and an
    instance type offered there."""
    deadline = time.monotonic() + 60
    while (answer := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
        assert time.monotonic() < deadline, answer.text  # cluster-svc not on NATS yet
        time.sleep(0.2)
    zone = answer.json()[0]["zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
    ).json()
    types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
    instance_type = "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0]
    return {
        "name": name,
        "availability_zone_id": zone,
        "instance_groups": [{"name": "gpu", "instance_type": instance_type, "count": count}],
    }


async def _create(api: httpx.AsyncClient, spec: dict[str, Any], gate: asyncio.Semaphore) -> float:
    async with gate:
        began = time.monotonic()
        for _ in range(CREATE_TRIES):
            accepted = await api.post("/api/v1/clusters", json=spec)
            if accepted.status_code not in (429, 502, 503, 504) and RETRY not in accepted.text:
                break
            await asyncio.sleep(2.0)
        assert accepted.status_code == 202, accepted.text
        operation = accepted.json()["operation_id"]
        while True:
            response = await api.get(f"/api/v1/operations/{operation}", params={"wait": 30})
            op = response.json()
            if op["status"] in ("succeeded", "failed", "cancelled", "noop"):
                break
        assert op["status"] == "succeeded", f"{spec['name']}: {op.get('error')}"
        return time.monotonic() - began


async def _build(url: str, specs: list[dict[str, Any]]) -> list[float]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    gate = asyncio.Semaphore(BUILD_AT_ONCE)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as api:
        return list(await asyncio.gather(*(_create(api, s, gate) for s in specs)))


async def _buckets(dsn: str) -> dict[str, int]:
    """Calls counted so far: every AWS call of every service (the account's buckets), and the
    node and drift watchers' own (their per-cluster buckets)."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT key, calls FROM aws_call_buckets")
    finally:
        await conn.close()
    out = {"all": 0, "nodes": 0, "drift": 0}
    for key, calls in rows:
        if key.startswith("aws:"):
            out["all"] += int(calls)
        elif key.startswith("watch:nodes:"):
            out["nodes"] += int(calls)
        elif key.startswith("watch:drift:"):
            out["drift"] += int(calls)
    return out


def _read_fleet(api: httpx.Client, names: list[str], large: str) -> dict[str, int]:
    """Every list of the live fleet once; returns how many answers were not 200, by route."""
    failed: dict[str, int] = {}

    def get(route: str, path: str, **params: Any) -> Any:
        response = api.get(path, params=params)
        if response.status_code != 200:
            failed[route] = failed.get(route, 0) + 1
            return None
        return response.json()

    clusters = get("clusters", "/api/v1/clusters", limit=1000)
    assert clusters is not None and len(clusters) == len(names), "the fleet's clusters"
    for name in names:
        get("cluster", f"/api/v1/clusters/{name}")
        live = get("nodes_live", f"/api/v1/clusters/{name}/nodes")  # every node, no page
        expected = NODES if name == large else LIVE_SMALL_NODES
        assert live is None or len(live["nodes"]) == expected, f"{name}: live nodes"
        get("nodes_recorded", f"/api/v1/clusters/{name}/nodes", source="recorded", limit=500)
        get("capacity", f"/api/v1/clusters/{name}/capacity")
        get("jobs", f"/api/v1/clusters/{name}/jobs", limit=1000)
    get("endpoints", "/api/v1/endpoints", cluster="*", limit=1000)
    get("fleet_capacity", "/api/v1/capacity")
    return failed


def live_fleet(idle_seconds: float = IDLE_SECONDS) -> dict[str, Any]:
    """Part 4: 50 clusters built through REST, the watchers on; memory and AWS calls."""
    from sim.testing import AdminClient

    names = [f"live-{i:02d}" for i in range(CLUSTERS)]
    large = names[-1]  # built last
    with embedded_stack(extra_env=BUILD_ENV) as stack:
        assert stack.database_url is not None and stack.aws_endpoint_url is not None
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            httpx.Client(base_url=stack.url, headers=headers, timeout=180) as api,
            Sampler(lambda: _processes(stack)) as sampler,
        ):
            template = _live_spec(api, "x", 1)
            instance_type = template["instance_groups"][0]["instance_type"]
            AdminClient(stack.aws_endpoint_url).update_account(
                {"quotas": {"sagemaker": {f"{instance_type} for cluster usage": 10_000}}}
            )
            specs = [
                {
                    **template,
                    "name": name,
                    "instance_groups": [
                        {
                            "name": "gpu",
                            "instance_type": instance_type,
                            "count": NODES if name == large else LIVE_SMALL_NODES,
                        }
                    ],
                }
                for name in names
            ]
            build_seconds: list[float] = []
            began = time.monotonic()
            growth: dict[int, dict[str, dict[str, float]]] = {}
            done = 0
            for checkpoint in CHECKPOINTS:
                build_seconds += asyncio.run(_build(stack.url, specs[done:checkpoint]))
                done = checkpoint
                time.sleep(SETTLE_SECONDS)
                now = time.monotonic()
                growth[checkpoint] = sampler.steady(now - SETTLE_SECONDS / 2, now)
            built = time.monotonic() - began
            time.sleep(WARMUP_SECONDS)
            before = asyncio.run(_buckets(stack.database_url))
            idle_start = time.monotonic()
            time.sleep(idle_seconds)
            idle_end = time.monotonic()
            after = asyncio.run(_buckets(stack.database_url))
            failed: dict[str, int] = {}
            read_times: list[float] = []
            for _ in range(READ_ROUNDS):
                round_began = time.monotonic()
                for route, count in _read_fleet(api, names, large).items():
                    failed[route] = failed.get(route, 0) + count
                read_times.append(time.monotonic() - round_began)
            reads_end = time.monotonic()
            time.sleep(READ_IDLE_SECONDS)
            end = time.monotonic()
        inventory = AdminClient(stack.aws_endpoint_url).inventory()
    idle = sampler.steady(idle_start, idle_end)
    idle_peak = sampler.peak(idle_start, idle_end)
    reading_peak = sampler.peak(idle_end, reads_end)
    after_reads = sampler.steady(reads_end, end)
    whole_peak = sampler.peak(0.0, end)
    processes = sorted(whole_peak)
    memory = {
        name: {
            "steady_idle_rss_mb": idle[name]["rss_mb"],
            "steady_idle_pss_mb": idle[name]["pss_mb"],
            "peak_idle_rss_mb": idle_peak[name]["rss_mb"],
            "peak_reading_rss_mb": reading_peak[name]["rss_mb"],
            "peak_reading_pss_mb": reading_peak[name]["pss_mb"],
            "steady_after_reads_rss_mb": after_reads[name]["rss_mb"],
            "peak_whole_run_rss_mb": whole_peak[name]["rss_mb"],
        }
        for name in processes
        if name in idle and name in reading_peak and name in after_reads
    }
    slopes = {
        name: round(
            growth_per_cluster({n: growth[n][name]["rss_mb"] for n in SMALL_CHECKPOINTS}), 3
        )
        for name in processes
        if all(name in growth[n] for n in SMALL_CHECKPOINTS)
    }
    large_adds = {
        name: round(growth[50][name]["rss_mb"] - growth[49][name]["rss_mb"], 1)
        for name in processes
        if name in growth[49] and name in growth[50]
    }
    spent = {k: after[k] - before[k] for k in after}
    hourly = {
        "all_services": round(per_cluster_hour(spent["all"], CLUSTERS, idle_seconds), 1),
        "node_watcher": round(per_cluster_hour(spent["nodes"], CLUSTERS, idle_seconds), 1),
        "drift_watcher": round(per_cluster_hour(spent["drift"], CLUSTERS, idle_seconds), 1),
        "rest": round(
            per_cluster_hour(
                spent["all"] - spent["nodes"] - spent["drift"], CLUSTERS, idle_seconds
            ),
            1,
        ),
    }
    calls = {
        "window_seconds": round(idle_end - idle_start, 1),
        "calls_in_window": spent,
        "per_cluster_hour": hourly,
        "goal_per_cluster_hour": CALL_GOAL,
        "meets_goal": hourly["all_services"] <= CALL_GOAL,
    }
    worst = max(memory[name]["peak_whole_run_rss_mb"] for name in SERVICES if name in memory)
    return {
        "clusters": CLUSTERS,
        "nodes": {
            "large": NODES,
            "small": LIVE_SMALL_NODES,
            "total": NODES + 49 * LIVE_SMALL_NODES,
        },
        "build": {
            "seconds": round(built, 1),
            "at_once": BUILD_AT_ONCE,
            "create_p50_seconds": round(median(build_seconds), 1),
            "create_max_seconds": round(max(build_seconds), 1),
            "env": BUILD_ENV,
        },
        "watchers": _shipped_watchers(),
        "idle_seconds": round(idle_end - idle_start, 1),
        "read_rounds_seconds": [round(t, 1) for t in read_times],
        "read_failures": failed,
        "memory": memory,
        "growth_rss_mb": {
            str(n): {k: v["rss_mb"] for k, v in growth[n].items()} for n in CHECKPOINTS
        },
        "growth_mb_per_cluster": slopes,
        "growth_mb_per_cluster_of": f"{LIVE_SMALL_NODES}-node clusters, {SMALL_CHECKPOINTS}",
        "large_cluster_adds_mb": large_adds,
        "aws_calls": calls,
        "simulator_inventory": {kind: len(items) for kind, items in sorted(inventory.items())},
        "worst_service_peak_mb": worst,
        "goal_mb": GOAL_MB,
        "meets_goal": worst <= GOAL_MB,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }


def run(runs: int) -> dict[str, Any]:
    with embedded_stack() as stack:
        assert stack.database_url is not None
        asyncio.run(seed(stack.database_url))
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as api:
            tokens = _tokens(api, "fleet-01")
            assert len(tokens) == JOBS // PAGE
            for _ in range(20):  # warm both paths (connections, prepared statements)
                _page_ms(api, "fleet-02", None)
                _page_ms(api, "fleet-01", random.choice(tokens))
            time.sleep(1)
            idle = {
                name: round(sum(rss_mb(p) for p in pids), 1)
                for name, pids in _processes(stack).items()
            }
            few: list[float] = []
            many: list[float] = []
            spread = [tokens[i * (len(tokens) - 1) // (runs - 1)] for i in range(runs)]
            with MemorySampler(lambda: _processes(stack)) as sampler:
                for token in spread:  # interleaved: both see the same machine
                    few.append(_page_ms(api, "fleet-02", None))
                    many.append(_page_ms(api, "fleet-01", token))
                for _ in range(3):
                    _read_everything(api)
            peak = {name: round(value, 1) for name, value in sampler.peak.items()}
            node_list = _node_list(api, runs)
        ui = _cluster_page(stack.url)
    floor, measured = _stats(few), _stats(many)
    ratio = round(measured["p95_ms"] / floor["p95_ms"], 2)
    services = {name: {"idle_mb": idle.get(name), "peak_mb": peak.get(name)} for name in SERVICES}
    worst = max(float(v["peak_mb"] or 0) for v in services.values())
    return {
        "what": (
            f"GET jobs page of {PAGE} with {JOBS} jobs vs {FEW_JOBS}; recorded node list and"
            f" cluster page in Chromium, {NODES} nodes vs {FEW_NODES}; VmRSS per service with"
            f" {CLUSTERS} clusters (one of {NODES} recorded nodes) in the read model"
        ),
        "jobs_page": {
            "runs": runs,
            "pages_of_the_long_list": len(tokens),
            f"{FEW_JOBS}_jobs": floor,
            f"{JOBS}_jobs": measured,
            "p95_ratio": ratio,
            "goal_ratio": 3.0,
            "meets_goal": ratio <= 3.0,
        },
        "node_list": node_list,
        "cluster_page": ui,
        "memory": {
            "services": services,
            "others_peak_mb": {k: v for k, v in peak.items() if k not in SERVICES},
            "worst_service_peak_mb": worst,
            "goal_mb": GOAL_MB,
            "meets_goal": worst <= GOAL_MB,
        },
    }


def _print_seeded(result: dict[str, Any]) -> None:
    page, memory = result["jobs_page"], result["memory"]
    for label, nodes in result["node_list"].items():
        if isinstance(nodes, dict):
            print(
                f"node list limit {nodes['limit']}: p95 {nodes[f'{NODES}_nodes']['p95_ms']} ms"
                f" with {NODES} nodes vs {nodes[f'{FEW_NODES}_nodes']['p95_ms']} ms with"
                f" {FEW_NODES} ({nodes['p95_ratio']}x, goal <= 3x) [{label}]"
            )
    ui = result["cluster_page"]
    if "skipped" in ui:
        print(f"cluster page: skipped, {ui['skipped']}")
    else:
        print(
            f"cluster page usable after {ui[f'{NODES}_nodes']['median_s']} s with {NODES} nodes"
            f" vs {ui[f'{FEW_NODES}_nodes']['median_s']} s with {FEW_NODES} ({ui['ratio']}x;"
            " goal <= 1 s and <= 3x)"
        )
    print(
        f"jobs page p95 {page[f'{JOBS}_jobs']['p95_ms']} ms with {JOBS} jobs vs"
        f" {page[f'{FEW_JOBS}_jobs']['p95_ms']} ms with {FEW_JOBS} ({page['p95_ratio']}x, goal"
        f" <= 3x); read model only: worst service peak {memory['worst_service_peak_mb']} MB"
    )


def _print_live(live: dict[str, Any]) -> None:
    for name, mb in live["memory"].items():
        print(
            f"{name}: steady {mb['steady_idle_rss_mb']} MB RSS ({mb['steady_idle_pss_mb']} PSS),"
            f" peak reading {mb['peak_reading_rss_mb']}, whole run {mb['peak_whole_run_rss_mb']},"
            f" after reads {mb['steady_after_reads_rss_mb']};"
            f" {live['growth_mb_per_cluster'].get(name)} MB per cluster"
        )
    calls = live["aws_calls"]["per_cluster_hour"]
    print(
        f"live fleet of {live['clusters']} built in {live['build']['seconds']} s; worst service"
        f" {live['worst_service_peak_mb']} MB (goal <= {GOAL_MB:.0f}); AWS calls per idle"
        f" cluster-hour {calls['all_services']} (nodes {calls['node_watcher']}, drift"
        f" {calls['drift_watcher']}, rest {calls['rest']}; goal <= {CALL_GOAL:.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--part", choices=("all", "seeded", "live"), default="all", help="which stack to run"
    )
    parser.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS)
    args = parser.parse_args()
    previous = RESULTS / "scale.json"
    kept: dict[str, Any] = json.loads(previous.read_text()) if previous.exists() else {}
    kept.pop("machine", None)
    kept.pop("recorded_at", None)
    result = run(args.runs) if args.part != "live" else {k: v for k, v in kept.items()}
    if args.part != "seeded":
        live = live_fleet(args.idle_seconds)
        live["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result["live_fleet"] = live
    elif "live_fleet" in kept:
        result["live_fleet"] = kept["live_fleet"]
    path = record("scale", result)
    if "jobs_page" in result:
        _print_seeded(result)
    if "live_fleet" in result:
        _print_live(result["live_fleet"])
    print(f"-> {path}")


if __name__ == "__main__":
    main()
