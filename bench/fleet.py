"""Issue 28, fleet scale and the AWS call budget: what the node watcher spends per idle cluster
and hour, and what reading a 1,000-node cluster's nodes costs against a 10-node one.

In one process: a private PostgreSQL (migrated), the simulated AWS with its Kubernetes
emulator, HyperPod clusters of 10, 10 and 1,000 nodes made with boto3 (an EKS cluster each),
and cluster-svc's node watcher and node adapter (boto3 over HTTP to the simulator, the
official Kubernetes client to the emulator). Every AWS request goes through
`shared.adapters.aws_session`'s hook, which counts it here.

1. **AWS calls per idle cluster-hour**:
   - *today's polling*: a full read every round (ListClusterNodes, 100 nodes a page, plus
     DescribeCluster) every NODE_WATCH_SECONDS = 5 s, the watcher before the budget: one
     round's calls counted, times the 720 rounds of an hour;
   - *events + budget*: the watcher as shipped (the newest HyperPod event each round, a full
     read on a new event or every NODE_WATCH_RESYNC_SECONDS, at most
     NODE_WATCH_AWS_CALLS_PER_CLUSTER_HOUR calls per cluster per hour, their defaults; no
     event queue, so every round may check), run round
     after round on a fake clock 5 s apart (the watcher's and its budget's), so that an hour
     of rounds takes what its calls take; its first 10 minutes (the burst the budget holds)
     are left out, then one hour counted. Every call is a real request to the simulator.
   - what that budget costs in lag: a node failure injected on the idle 10-node cluster (ten
     quiet minutes apart),
     the fake seconds until the watcher has recorded it (5 failures).
   Floor: 0 calls (nothing changed, nothing to ask). Goal: <= 60.
2. **Reading the nodes**, the 1,000-node cluster against a 10-node one (p50/p95 over RUNS
   reads): the live read cluster-svc answers GET /clusters/{name}/nodes with (ListClusterNodes
   pages, the Kubernetes Node list, the joined health views) and the recorded read (one page
   of 100 of the read model, indexed). Goal: p95 <= 3x the 10-node one.
3. **Throttles**: the simulator throttles beyond AWS's published request rates
   (sim/aws/throttle.py); the throttling answers the bench's calls met. Floor and goal: 0.

    .venv/bin/python -m bench.fleet

Writes bench/results/fleet.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from bench.common import median, percentile, record

ROUND = 5.0  # NODE_WATCH_SECONDS
LAG_FAILURES = 5
REGION = "us-east-1"
ACCOUNT = "777788889999"
SIZES = {"small-a": 10, "small-b": 10, "large": 1000}
RUNS = 10
PAGE_QUERY = (
    "SELECT view FROM cluster_nodes WHERE cluster = $1 ORDER BY instance_group, node_id LIMIT $2"
)
WARMUP = 600.0
HOUR = 3600.0


class CountingBudget:
    """Stands where the account limiter does (aws_session.use_budget): counts each request, and
    each throttling answer (the simulator throttles beyond AWS's published rates)."""

    def __init__(self) -> None:
        self.requests = 0
        self.throttled = 0
        self._lock = threading.Lock()

    def gate(self, region: str, service: str | None = None, operation: str | None = None) -> None:
        with self._lock:
            self.requests += 1

    def report_throttled(self, region: str) -> None:
        with self._lock:
            self.throttled += 1


def _make_clusters(sim: Any) -> dict[str, tuple[str, str]]:
    """name -> (HyperPod ARN, EKS name), every cluster InService."""
    from sim.testing import hyperpod_clusters

    made = hyperpod_clusters(sim, SIZES, cidr="10.80", timeout=120)
    return {name: (arn, str(eks["name"])) for name, (arn, eks) in made.items()}


async def _register(
    pool: asyncpg.Pool, made: dict[str, tuple[str, str]], port: Any, *, kube: bool
) -> None:
    """The clusters as the watcher finds them; with `kube`, their Kubernetes API too."""
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM clusters")
        for name, (arn, eks_name) in made.items():
            access = await port.eks_access(eks_name) if kube else None
            await conn.execute(
                "INSERT INTO clusters (name, region, status, managed, hyperpod_cluster_arn,"
                " eks_cluster_arn, endpoint, ca_data)"
                " VALUES ($1, $2, 'active', true, $3, $4, $5, $6)",
                name,
                REGION,
                arn,
                f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{eks_name}",
                access.endpoint if access else None,
                access.ca_data if access else None,
            )


async def _spent(pool: asyncpg.Pool, watcher: str) -> dict[str, int]:
    from shared.aws_budget import figures

    prefix = f"watch:{watcher}:"
    return {f.key[len(prefix) :]: f.calls for f in await figures(pool, prefix)}


async def _run_watcher(watcher: Any, interval: float, seconds: float) -> None:
    task = asyncio.create_task(watcher.run(interval))
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


class FakeTime:
    """One clock for the watcher (monotonic seconds) and its budget (timestamps): an idle hour
    runs as 720 rounds as fast as they go, each 5 s later than the one before."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.start = datetime(2026, 12, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds)


async def _calls_per_hour(
    pool: asyncpg.Pool, port: Any, counter: CountingBudget, sim: Any, made: dict[str, Any]
) -> dict[str, Any]:
    """AWS calls only: the clusters are registered without their Kubernetes API here (the
    Node list is no AWS call)."""
    from cluster_svc.areas.nodes import NodeWatcher, WatchSettings
    from cluster_svc.domain.nodes.watch_plan import idle_calls_per_hour, pages_for
    from shared.aws_budget import WatchBudget
    from shared.config import shipped_defaults
    from sim.testing import inject_fault

    rounds = int(HOUR / ROUND)
    # Today's polling: a full read every round. One round measured, times the rounds of an
    # hour; the shipped watcher reads the newest event with each full read, today's did not.
    today = NodeWatcher(pool, port, WatchBudget(pool, "today", 1e12), resync=0.0)
    await today.once()
    today_per_hour = {
        name: int((calls - 1) * rounds) for name, calls in (await _spent(pool, "today")).items()
    }

    # The watcher as shipped (its default resync and budget; no event queue here, so no quiet
    # rounds), its first 10 minutes (the burst the budget holds) then one hour, on the fake
    # clock.
    defaults = shipped_defaults(WatchSettings)
    resync = defaults["node_watch_resync_seconds"]
    per_hour = defaults["node_watch_aws_calls_per_cluster_hour"]
    fake = FakeTime()
    budget = WatchBudget(pool, "nodes", per_hour, clock=fake.now)
    shipped = NodeWatcher(pool, port, budget, resync=resync, clock=fake.monotonic)

    async def run(seconds: float) -> None:
        for _ in range(int(seconds / ROUND)):
            await shipped.once()
            fake.seconds += ROUND

    await run(WARMUP)
    start, first = await _spent(pool, "nodes"), counter.requests
    began = time.monotonic()
    await run(HOUR)
    wall = time.monotonic() - began
    end, last = await _spent(pool, "nodes"), counter.requests

    # A node failing on an idle cluster: the fake seconds until the watcher recorded it.
    arn = made["small-a"][0]
    lags: list[float] = []
    for victim in [i.node_id for i in shipped.clusters["small-a"].instances][:LAG_FAILURES]:
        with inject_fault(sim, "node_failure", cluster=arn, node_ids=[victim]):
            pass
        failed_at = fake.seconds
        while True:
            await shipped.once()
            async with pool.acquire() as conn:
                status = await conn.fetchval(
                    "SELECT instance_status FROM cluster_nodes WHERE cluster = 'small-a'"
                    " AND node_id = $1",
                    victim,
                )
            if status == "Failure":
                break
            fake.seconds += ROUND
        lags.append(fake.seconds - failed_at)
        await run(600.0)  # ten quiet minutes between failures, the watcher running
    demand = {
        name: round(idle_calls_per_hour(ROUND, resync, pages_for(SIZES[name]), 1e12))
        for name in SIZES
    }
    return {
        "idle_hour_wall_seconds": round(wall, 1),
        "today_polling_calls_per_cluster_hour": today_per_hour,
        "events_demand_calls_per_cluster_hour_unbudgeted": demand,
        "events_and_budget_calls_per_cluster_hour": {
            name: end[name] - start.get(name, 0) for name in end
        },
        "events_and_budget_requests_in_the_hour": last - first,
        "budget_per_cluster_hour": per_hour,
        "resync_seconds": resync,
        "node_failure_seen_after_seconds": sorted(lags),
        "node_failure_seen_after_p50_seconds": median(lags),
    }


async def _reads(pool: asyncpg.Pool, port: Any, made: dict[str, tuple[str, str]]) -> dict[str, Any]:
    from cluster_svc.areas.nodes import observe

    live: dict[str, list[float]] = {}
    recorded: dict[str, list[float]] = {}
    for name in ("small-a", "large"):
        arn, eks_name = made[name]
        access = await port.eks_access(eks_name)
        await observe(port, arn, access)  # warm: clients, connections
        live[name] = []
        for _ in range(RUNS):
            began = time.perf_counter()
            _, views, readable = await observe(port, arn, access)
            live[name].append((time.perf_counter() - began) * 1000)
            assert readable and len(views) == SIZES[name]
        async with pool.acquire() as conn:
            for limit in (100, 10):
                samples = recorded.setdefault(f"{name}_limit_{limit}", [])
                for _ in range(RUNS):
                    began = time.perf_counter()
                    rows = await conn.fetch(PAGE_QUERY, name, limit)
                    samples.append((time.perf_counter() - began) * 1000)
                    assert len(rows) == min(limit, SIZES[name])
            plan = "\n".join(
                r[0] for r in await conn.fetch("EXPLAIN " + PAGE_QUERY.replace("$2", "100"), name)
            )

    def figures(samples: dict[str, list[float]], large: str, small: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            name: {"p50_ms": round(median(v), 2), "p95_ms": round(percentile(v, 95), 2)}
            for name, v in samples.items()
        }
        out["p95_ratio"] = round(out[large]["p95_ms"] / out[small]["p95_ms"], 2)
        return out

    return {
        "live": figures(live, "large", "small-a"),
        # the first page of the 1,000-node cluster (100 nodes) against all of the 10-node one
        "recorded_page_of_100": figures(
            {k: v for k, v in recorded.items() if k.endswith("_limit_100")},
            "large_limit_100",
            "small-a_limit_100",
        ),
        # the same number of nodes read from each: what the cluster's size itself costs
        "recorded_page_of_10": figures(
            {k: v for k, v in recorded.items() if k.endswith("_limit_10")},
            "large_limit_10",
            "small-a_limit_10",
        ),
        "plan_of_the_large_page": plan,
    }


async def _bench() -> dict[str, Any]:
    from cluster_svc.adapters.aws import AwsClients
    from cluster_svc.adapters.hyperpod_nodes import HyperPodNodes
    from cluster_svc.adapters.k8s import EksKubeFactory
    from cluster_svc.areas.nodes import NodeWatcher
    from hyperpilot.infra import start_postgres
    from shared.adapters import aws_session
    from shared.aws_budget import WatchBudget
    from shared.db import create_pool
    from shared.migrate import migrate
    from sim.aws import SimulatedAws
    from sim.k8s import KubeWorld
    from sim.profile import get_profile

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    profile = get_profile("fast")
    world = KubeWorld(profile)
    sim = SimulatedAws(profile, kube=world, account_id=ACCOUNT).start()
    root = Path(tempfile.mkdtemp(prefix="hp-fleet-"))
    postgres = start_postgres(root / "data")
    try:
        dsn = postgres.create_database("fleet")
        await migrate(dsn)
        pool = await create_pool(dsn, min_size=2, max_size=10)
        made = await asyncio.to_thread(_make_clusters, sim)
        counter = CountingBudget()
        aws_session.use_budget(counter)
        port = HyperPodNodes(AwsClients(REGION, sim.endpoint_url), EksKubeFactory(REGION))
        await _register(pool, made, port, kube=True)
        # The read model filled once (a watcher round), for the recorded reads.
        await NodeWatcher(pool, port, WatchBudget(pool, "fill", 1e12)).once()
        async with pool.acquire() as conn:
            await conn.execute("ANALYZE cluster_nodes")  # what autovacuum does after the fill
        reads = await _reads(pool, port, made)
        await _register(pool, made, port, kube=False)
        calls = await _calls_per_hour(pool, port, counter, sim, made)
        aws_session.use_budget(None)
        await pool.close()
        ops = Counter(str(c.get("operation")) for c in sim.call_log())
        return {
            **calls,
            "reads": reads,
            "mutating_calls_in_the_simulator": dict(ops),
            # throttling answers the bench's calls met (the simulator's count, and the hook's)
            "throttled_in_the_simulator": sim.throttle.throttled,
            "throttled_answers_seen": counter.throttled,
        }
    finally:
        sim.stop()
        world.close()
        postgres.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    result = asyncio.run(_bench())
    shipped = result["events_and_budget_calls_per_cluster_hour"]
    today = result["today_polling_calls_per_cluster_hour"]
    summary = {
        "idle_calls_per_cluster_hour_max": max(shipped.values()),
        "idle_calls_per_cluster_hour_goal": 60,
        "idle_calls_floor": 0,
        "events_demand_unbudgeted_max": max(
            result["events_demand_calls_per_cluster_hour_unbudgeted"].values()
        ),
        "today_polling_calls_per_cluster_hour_10_nodes": today["small-a"],
        "today_polling_calls_per_cluster_hour_1000_nodes": today["large"],
        "live_nodes_p95_ratio_1000_vs_10": result["reads"]["live"]["p95_ratio"],
        "recorded_page_of_100_p95_ratio_1000_vs_10": result["reads"]["recorded_page_of_100"][
            "p95_ratio"
        ],
        "recorded_page_of_10_p95_ratio_1000_vs_10": result["reads"]["recorded_page_of_10"][
            "p95_ratio"
        ],
        "ratio_goal": 3.0,
        "throttled": result["throttled_in_the_simulator"],
        "throttled_floor": 0,
    }
    path = record(
        "fleet",
        {
            "what": "node watcher AWS calls per idle cluster-hour; 1,000-node vs 10-node reads",
            "floor": "0 AWS calls for an idle cluster; the 10-node read for the 1,000-node one",
            **result,
            "summary": summary,
        },
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
