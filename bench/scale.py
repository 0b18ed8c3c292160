"""Issue 28, fleet scale: a page of the jobs list with 10,000 jobs in history against one with
100, and the memory of each service with 50 clusters loaded.

The stack as `make up` runs it (the simulated world in its own process). Its read model in
PostgreSQL is filled directly: 50 clusters (imported, no Kubernetes API behind them, so no
watcher reads them live), one with 1,000 recorded nodes, one with 10,000 jobs and one with
100, and 100 endpoints spread over the clusters.

1. **Jobs list page** (GET /api/v1/clusters/{name}/jobs, limit 100, over HTTP with the admin
   token): p50/p95 of RUNS reads of pages spread over the whole list (the first, the last and
   between, each by its page token) of the 10,000-job cluster, against the same reads of the
   100-job cluster's one page. Floor: the 100-job page. Goal: p95 <= 3x.
2. **Memory**: VmRSS of each process, idle once the fleet is loaded, and its peak while the
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
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx

from bench.common import TOKEN, embedded_stack, median, percentile, record, rss_mb
from bench.pipeline import MemorySampler, _processes

CLUSTERS = 50
NODES = 1000
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
                    "fleet-00",
                    n["node_id"],
                    n["instance_group"],
                    n["instance_type"],
                    "Running",
                    "healthy",
                    json.dumps(n),
                )
                for n in map(_node, range(NODES))
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
    floor, measured = _stats(few), _stats(many)
    ratio = round(measured["p95_ms"] / floor["p95_ms"], 2)
    services = {name: {"idle_mb": idle.get(name), "peak_mb": peak.get(name)} for name in SERVICES}
    worst = max(float(v["peak_mb"] or 0) for v in services.values())
    return {
        "what": (
            f"GET jobs page of {PAGE} with {JOBS} jobs vs {FEW_JOBS}; VmRSS per service with"
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
    print(
        f"jobs page p95 {page[f'{JOBS}_jobs']['p95_ms']} ms with {JOBS} jobs vs"
        f" {page[f'{FEW_JOBS}_jobs']['p95_ms']} ms with {FEW_JOBS} ({page['p95_ratio']}x, goal"
        f" <= 3x); worst service peak {memory['worst_service_peak_mb']} MB (goal <= {GOAL_MB:.0f})"
        f" -> {path}"
    )


if __name__ == "__main__":
    main()
