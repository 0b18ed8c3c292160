"""Failover on a loopback topology: a three-node NATS cluster with R3 streams, two gateways and
two replicas of each domain service, the test's own PostgreSQL. With 500 bucket creations in
flight, kill -9 one NATS server (the one leading the commands stream), one gateway and one
replica of each domain service, then kill -9 PostgreSQL and start it again.

Asserted: every operation ends terminal and succeeded, none is lost, none is duplicated (the
simulated AWS's call log: one successful CreateBucket per bucket), and the client sees only
202s and retriable 503s carrying Retry-After; a request to the killed gateway fails to connect
(what a load balancer's health check takes out of rotation) and is retried, with the same
Idempotency-Key, at the other. The figures go to bench/results/failover.json and
docs/reliability.md. Slow: run with `make reliability`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from hyperpilot.infra import Postgres, free_port, start_postgres
from hyperpilot.stack import Stack
from shared.bus import server_urls
from shared.contracts.subjects import COMMANDS_STREAM
from sim.aws import SimulatedAws
from sim.testing import simulated_aws
from tests.reliability.nats_cluster import NatsCluster

OPERATIONS = 500
TOKEN = "hp_failover_admin_token"
DOMAIN_SERVICES = ("cluster-svc", "workload-svc", "inference-svc")
TERMINAL = ("succeeded", "failed", "cancelled", "noop")
# the kills start once this many creations have been accepted (the rest are still being sent)
KILL_AFTER_ACCEPTED = 150

sim_aws = simulated_aws(profile="fast")


@dataclass
class Topology:
    root: Path
    postgres: Postgres
    nats: NatsCluster
    stack: Stack
    gateways: list[str]

    def log(self, name: str) -> str:
        return (self.stack.state_dir / f"{name}.log").read_text(errors="replace")


@pytest.fixture
def topology(sim_aws: SimulatedAws, tmp_path: Path) -> Iterator[Topology]:
    root = Path(tempfile.mkdtemp(prefix="hp-fo-"))
    postgres = start_postgres(root / "pg")
    database_url = postgres.create_database("failover")
    cluster = NatsCluster(root / "nats").start()
    cluster.wait_meta_leader()
    ports = [free_port(), free_port()]
    stack = Stack(
        state_dir=root / "stack",
        gateway_port=ports[0],
        database_url=database_url,
        nats_url=cluster.url,
        aws_endpoint_url=sim_aws.endpoint_url,
        admin_token=TOKEN,
        extra_env={
            "NATS_STREAM_REPLICAS": "3",
            "ACK_WAIT_SECONDS": "2",
            "POLL_MAX_SECONDS": "0.5",
            "LOG_FORMAT": "console",
            "MUTATIONS_PER_MINUTE": "100000",
            "MUTATION_BURST": "100000",
            "CONSUMER_CONCURRENCY": "16",
        },
    )
    try:
        stack.start_infra()
        stack.start_services()
        stack.start_replica("gateway", 1, {"GATEWAY_PORT": str(ports[1])})
        for name in DOMAIN_SERVICES:
            stack.start_replica(name, 1)
        gateways = [f"http://127.0.0.1:{p}" for p in ports]
        _wait_ready(gateways)
        for name in DOMAIN_SERVICES:
            for replica in (name, f"{name}-1"):
                _wait_for(
                    lambda r=replica: "consuming" in (stack.state_dir / f"{r}.log").read_text(),
                    f"{replica} consuming",
                )
        yield Topology(root, postgres, cluster, stack, gateways)
    finally:
        stack.stop()
        cluster.stop()
        postgres.stop()
        # the processes' logs stay with the test's own temporary directory
        logs = tmp_path / "logs"
        logs.mkdir(exist_ok=True)
        for log in [*stack.state_dir.glob("*.log"), *(root / "nats").glob("n*/nats.log")]:
            shutil.copy(log, logs / f"{log.parent.name}-{log.name}")
        shutil.rmtree(root, ignore_errors=True)


def _wait_for(predicate: Any, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.1)


def _wait_ready(gateways: list[str]) -> None:
    def ready(url: str) -> bool:
        try:
            return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    for url in gateways:
        _wait_for(lambda u=url: ready(u), f"{url}/readyz")


@dataclass
class Client:
    """What the client saw: every answer by gateway and status, and connection failures."""

    gateways: list[str]
    answers: Counter[tuple[int, int]] = field(default_factory=Counter)
    unretriable: list[str] = field(default_factory=list)
    connection_failures: Counter[int] = field(default_factory=Counter)
    failure_kinds: Counter[tuple[int, str]] = field(default_factory=Counter)
    survivor_failures: list[str] = field(default_factory=list)
    accepted: dict[str, str] = field(default_factory=dict)  # bucket name -> operation id

    async def create(self, clients: list[httpx.AsyncClient], name: str, first: int) -> None:
        key = str(uuid.uuid4())
        gateway = first
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                answer = await clients[gateway].post(
                    "/api/v1/storage/buckets",
                    json={"name": name},
                    headers={"Idempotency-Key": key},
                )
            except httpx.TransportError as exc:
                # the gateway is gone: the same request, same key, to the other one
                self.connection_failures[gateway] += 1
                self.failure_kinds[(gateway, type(exc).__name__)] += 1
                if gateway == 0:  # the surviving gateway: what, and when
                    self.survivor_failures.append(f"{time.monotonic():.2f} {exc!r}")
                gateway = 1 - gateway
                await asyncio.sleep(0.2)
                continue
            self.answers[(gateway, answer.status_code)] += 1
            if answer.status_code == 202:
                self.accepted[name] = answer.json()["operation_id"]
                return
            if answer.status_code == 503 and "Retry-After" in answer.headers:
                await asyncio.sleep(float(answer.headers["Retry-After"]))
                continue
            self.unretriable.append(f"{answer.status_code} {answer.headers} {answer.text}")
            return
        self.unretriable.append(f"{name}: not accepted within 600 s")


def _commands_leader(cluster: NatsCluster) -> int:
    async def leader() -> str:
        nc = await nats.connect(server_urls(cluster.url))
        try:
            info = await nc.jetstream(timeout=10).stream_info(COMMANDS_STREAM)
        finally:
            await nc.close()
        assert info.cluster is not None and info.cluster.leader, info
        assert len(info.cluster.replicas or []) == 2, info.cluster  # R3
        return info.cluster.leader

    return int(asyncio.run(leader()).removeprefix("n"))


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_failover_loses_and_repeats_nothing(topology: Topology, sim_aws: SimulatedAws) -> None:
    stack, cluster = topology.stack, topology.nats
    prefix = f"fo{time.time_ns() % 10**8}"
    names = [f"{prefix}-{i}" for i in range(OPERATIONS)]
    client = Client(topology.gateways)
    leader = _commands_leader(cluster)
    timeline: dict[str, float] = {}
    started = time.monotonic()

    def faults() -> None:
        """The kills, from a thread, while the creations are sent and run."""
        _wait_for(lambda: len(client.accepted) >= KILL_AFTER_ACCEPTED, "first acceptances", 300)
        timeline["in_flight_at_kill"] = OPERATIONS - _count_terminal(topology.gateways[0])
        node = cluster.nodes[leader]
        assert node.process is not None
        _kill(node.process.pid)
        node.process.wait()
        stack.kill_service("gateway-1")
        for name in DOMAIN_SERVICES:
            stack.kill_service(f"{name}-1")
        timeline["killed"] = time.monotonic() - started
        time.sleep(2.0)
        pid = topology.postgres.pid
        assert pid is not None
        _kill(pid)
        timeline["postgres_killed"] = time.monotonic() - started
        time.sleep(1.0)
        topology.postgres.restart()
        timeline["postgres_back"] = time.monotonic() - started

    fault_thread = threading.Thread(target=faults, daemon=True)
    fault_thread.start()

    async def submit() -> None:
        # An idle connection expires on the client before the gateway closes it (uvicorn: after
        # 5 s), so a request never goes out on a connection the server is closing.
        limits = httpx.Limits(max_connections=32, keepalive_expiry=2.0)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        clients = [
            httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60)
            for url in topology.gateways
        ]
        try:
            await asyncio.gather(*(client.create(clients, n, i % 2) for i, n in enumerate(names)))
        finally:
            for c in clients:
                await c.aclose()

    asyncio.run(submit())
    accepted_at = time.monotonic() - started
    fault_thread.join(120)
    assert not fault_thread.is_alive() and "postgres_back" in timeline, timeline
    assert client.unretriable == [], client.unretriable[:5]
    # only the killed gateway (index 1) ever failed to answer
    assert client.connection_failures[0] == 0, (
        client.failure_kinds,
        client.survivor_failures,
        {k: round(v + started, 2) for k, v in timeline.items()},
    )
    assert sorted(client.accepted) == sorted(names)
    ids = set(client.accepted.values())
    assert len(ids) == OPERATIONS  # one operation per bucket, retries included

    # every operation terminal, read through the surviving gateway
    survivor = httpx.Client(
        base_url=topology.gateways[0], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    statuses: dict[str, str] = {}
    deadline = time.monotonic() + 900
    while len(statuses) < OPERATIONS:
        assert time.monotonic() < deadline, Counter(statuses.values())
        for op_id in ids - set(statuses):
            answer = survivor.get(f"/api/v1/operations/{op_id}")
            if answer.status_code == 503:
                break
            assert answer.status_code == 200, answer.text
            if answer.json()["status"] in TERMINAL:
                statuses[op_id] = answer.json()["status"]
        else:
            continue
        time.sleep(0.5)
    finished = time.monotonic() - started
    outcome = Counter(statuses.values())
    # every one succeeded: an operation whose replica died after CreateBucket took effect and
    # before its stage was recorded finds, redelivered, its own bucket there (made once, by it:
    # the call log below) and goes on as succeeded, never noop, failed or cancelled
    assert outcome == Counter({"succeeded": OPERATIONS}), outcome

    # exactly once, from the simulated AWS's call log
    calls = [
        c
        for c in sim_aws.call_log("s3", "CreateBucket")
        if str(c["params"].get("Bucket", "")).startswith(prefix + "-")
    ]
    created = Counter(c["params"]["Bucket"] for c in calls if c["applied"])
    assert sorted(created) == sorted(names), set(names) - set(created)
    assert set(created.values()) == {1}, [n for n, k in created.items() if k > 1][:5]

    # the replicas that lived did the work of the ones that died
    handled = {
        replica: topology.log(replica).count("operation finished")
        for replica in ("cluster-svc", "cluster-svc-1")
    }
    result = {
        "operations": OPERATIONS,
        "topology": "3 NATS servers (R3 streams), 2 gateways, 2 replicas of each domain service",
        "killed": [
            f"nats n{leader} (commands stream leader)",
            "gateway-1",
            *(f"{n}-1" for n in DOMAIN_SERVICES),
            "postgres (kill -9, then started again)",
        ],
        "in_flight_at_kill": int(timeline["in_flight_at_kill"]),
        "kill_seconds": round(timeline["killed"], 2),
        "postgres_down_seconds": round(timeline["postgres_back"] - timeline["postgres_killed"], 2),
        "all_accepted_seconds": round(accepted_at, 2),
        "all_terminal_seconds": round(finished, 2),
        "outcomes": dict(outcome),
        "lost": OPERATIONS - len(created),
        "duplicated": sum(k - 1 for k in created.values()),
        "create_bucket_calls": len(calls),
        "answers": {
            f"gateway-{g} {status}": n for (g, status), n in sorted(client.answers.items())
        },
        "connection_failures": {
            f"gateway-{g} {kind}": n for (g, kind), n in sorted(client.failure_kinds.items())
        },
        "unretriable_answers": len(client.unretriable),
        "operations_finished_by": handled,
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).resolve().parents[2] / "bench" / "results" / "failover.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


def _count_terminal(gateway: str) -> int:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    total = 0
    for status in TERMINAL:
        answer = httpx.get(
            f"{gateway}/api/v1/operations",
            params={"limit": 1, "status": status},
            headers=headers,
            timeout=30,
        )
        total += int(answer.headers["X-Total-Count"])
    return total
