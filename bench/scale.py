"""Issue 28, fleet scale: a page of the jobs list with 10,000 jobs in history against one with
100, and the memory of each service with 50 clusters loaded.

The stack as `make up` runs it (the simulated world in its own process). Its read model in
PostgreSQL is filled directly: 50 clusters (imported, no Kubernetes API behind them, so no
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
4. **Memory**: VmRSS of each process, idle once the fleet is loaded, and its peak while the
   lists are read (every cluster's page, the 1,000 recorded nodes, the jobs pages, the
   endpoints of every cluster). Goal: <= 150 MB per service.

    .venv/bin/python -m bench.scale [--runs 200]

Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import TOKEN, embedded_stack, median, percentile, record, rss_mb
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    result = run(args.runs)
    path = record("scale", result)
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
        f" <= 3x); worst service peak {memory['worst_service_peak_mb']} MB (goal <= {GOAL_MB:.0f})"
        f" -> {path}"
    )


if __name__ == "__main__":
    main()
