"""Items 2, 3 and 8 on the stack as `make up` runs it (the simulated world in its own process).

2. Pipeline overhead: a bucket create, one at a time, followed on the live stream
   (`/api/v1/events/stream`): POST sent -> 202 -> OperationStarted delivered (the first progress
   event) -> OperationSucceeded delivered. The bucket create makes 7 S3 calls in 3 stages; the
   stage timestamps say how much of the total was S3 (the simulator) and how much was ours.
   Floor: a bare JetStream publish -> pull consume -> INSERT + NOTIFY -> LISTEN receiver.
3. Throughput: bucket creates completed end to end per second, with 1 and with 2 replicas of
   the gateway and of cluster-svc. Floor: the same 7 S3 calls per bucket made directly with
   boto3 against the same simulator, at the same concurrency.
8. Memory: VmRSS of every process idle and at its peak under the throughput load; the whole
   embedded stack. Floor: a bare FastAPI + asyncpg process, idle.

    .venv/bin/python -m bench.pipeline [--sequential 40] [--throughput 120]

Writes bench/results/pipeline.json, throughput.json and memory.json.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import orjson

from bench.common import (
    TOKEN,
    embedded_stack,
    percentile,
    postgres_pids,
    pss_mb,
    record,
    rss_mb,
    stage_seconds,
)
from bench.floor import PipelineFloor, start_floor_app, stop_process

TERMINAL = ("succeeded", "failed", "cancelled", "noop")
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


class LiveStream:
    """An SSE client of /api/v1/events/stream that wakes whoever waits for an event."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.waiting: dict[tuple[str, str], asyncio.Future[float]] = {}
        self.seen: dict[tuple[str, str], float] = {}
        # (operation, type) -> (wall-clock arrival, occurred_at of the event)
        self.walls: dict[tuple[str, str], tuple[float, float]] = {}
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def expect(self, operation_id: str, event_type: str) -> asyncio.Future[float]:
        key = (operation_id, event_type)
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if key in self.seen:
            future.set_result(self.seen.pop(key))
        else:
            self.waiting[key] = future
        return future

    async def start(self, after: int) -> None:
        self._task = asyncio.create_task(self._read(after))
        await asyncio.wait_for(self.connected.wait(), 10)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    async def _read(self, after: int) -> None:
        async with (
            httpx.AsyncClient(timeout=None, headers=HEADERS) as client,
            client.stream("GET", f"{self.url}/api/v1/events/stream?after={after}") as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("retry:"):
                    self.connected.set()
                if not line.startswith("data: "):
                    continue
                now = time.perf_counter()
                wall = time.time()
                event = orjson.loads(line[6:])
                key = (event["operation_id"], event["type"])
                self.walls[key] = (wall, datetime.fromisoformat(event["occurred_at"]).timestamp())
                future = self.waiting.pop(key, None)
                if future is not None and not future.done():
                    future.set_result(now)
                elif future is None:
                    self.seen[key] = now


def _s3_seconds(operation: dict[str, Any]) -> float:
    """Time spent in the bucket create's stages along its critical path: bucket, then the
    longer of public_access and encryption (they run concurrently)."""
    stages = {
        s["name"]: stage_seconds(s["started_at"], s["finished_at"]) for s in operation["stages"]
    }
    return stages.get("bucket", 0.0) + max(
        stages.get("public_access", 0.0), stages.get("encryption", 0.0)
    )


async def _latest_seq(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval("SELECT coalesce(max(seq), 0) FROM events"))
    finally:
        await conn.close()


async def sequential(
    url: str, dsn: str, count: int, floor: PipelineFloor | None = None
) -> dict[str, Any]:
    """`count` bucket creates one at a time; with a floor, one round of it after each (both
    then run on the same machine in the same state)."""
    stream = LiveStream(url)
    floor_ms: list[float] = []
    await stream.start(await _latest_seq(dsn))
    rows: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=30) as client:
        try:
            for i in range(count + 3):
                name = f"seq-{uuid.uuid4().hex[:12]}"
                sent = time.perf_counter()
                response = await client.post("/api/v1/storage/buckets", json={"name": name})
                answered = time.perf_counter()
                answered_wall = time.time()
                assert response.status_code == 202, response.text
                op_id = response.json()["operation_id"]
                started = await asyncio.wait_for(stream.expect(op_id, "OperationStarted"), 30)
                ended = await asyncio.wait_for(stream.expect(op_id, "OperationSucceeded"), 30)
                operation = (await client.get(f"/api/v1/operations/{op_id}")).json()
                if i < 3:  # warm-up
                    continue
                if floor is not None:
                    await asyncio.sleep(0.02)
                    floor_ms.append(await floor.once())
                total = (ended - answered) * 1000
                arrived, occurred = stream.walls[(op_id, "OperationStarted")]
                s3 = _s3_seconds(operation) * 1000
                rows.append(
                    {
                        "accept_ms": (answered - sent) * 1000,
                        "click_to_started_ms": (started - sent) * 1000,
                        "accepted_to_started_ms": (started - answered) * 1000,
                        "accepted_to_started_written_ms": (occurred - answered_wall) * 1000,
                        "started_written_to_delivered_ms": (arrived - occurred) * 1000,
                        "accepted_to_terminal_ms": total,
                        "s3_ms": s3,
                        "ours_ms": total - s3,
                    }
                )
                await asyncio.sleep(0.02)
        finally:
            await stream.stop()

    def stats(key: str) -> dict[str, float]:
        values = [r[key] for r in rows]
        return {"p50": round(percentile(values, 50), 2), "p99": round(percentile(values, 99), 2)}

    return {
        key: stats(key)
        for key in (
            "accept_ms",
            "click_to_started_ms",
            "accepted_to_started_ms",
            "accepted_to_started_written_ms",
            "started_written_to_delivered_ms",
            "accepted_to_terminal_ms",
            "s3_ms",
            "ours_ms",
        )
    } | {"operations": len(rows), "floor_ms": floor_ms}


class MemorySampler:
    """Samples VmRSS of named processes until stopped; keeps each one's peak."""

    def __init__(self, pids: Callable[[], dict[str, list[int]]]) -> None:
        self.pids = pids
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, pids in self.pids().items():
                value = sum(rss_mb(p) for p in pids)
                self.peak[name] = max(self.peak.get(name, 0.0), value)
            self._stop.wait(0.2)


async def throughput(urls: list[str], dsn: str, count: int, concurrency: int) -> dict[str, Any]:
    """Bucket creates sent `concurrency` at a time, spread over `urls`; the rate at which
    they reach a terminal state."""
    ids: list[uuid.UUID] = []
    clients = [httpx.AsyncClient(base_url=u, headers=HEADERS, timeout=60) for u in urls]
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)
    tag = uuid.uuid4().hex[:8]

    async def poster(worker: int) -> None:
        client = clients[worker % len(clients)]
        while not queue.empty():
            i = queue.get_nowait()
            response = await client.post("/api/v1/storage/buckets", json={"name": f"tp-{tag}-{i}"})
            assert response.status_code == 202, response.text
            ids.append(uuid.UUID(response.json()["operation_id"]))

    conn = await asyncpg.connect(dsn)
    start = time.perf_counter()
    posting = asyncio.gather(*(poster(w) for w in range(concurrency)))
    done = 0
    while True:
        await asyncio.sleep(0.05)
        if posting.done():
            posting.result()
        done = await conn.fetchval(
            "SELECT count(*) FROM operations WHERE id = ANY($1::uuid[]) AND status = ANY($2)",
            ids,
            list(TERMINAL),
        )
        if done >= count:
            break
        if time.perf_counter() - start > 120:
            raise TimeoutError(f"only {done} of {count} operations finished in 120 s")
    elapsed = time.perf_counter() - start
    failed = await conn.fetchval(
        "SELECT count(*) FROM operations WHERE id = ANY($1::uuid[]) AND status <> 'succeeded'", ids
    )
    await conn.close()
    for client in clients:
        await client.aclose()
    return {
        "operations": count,
        "not_succeeded": failed,
        "seconds": round(elapsed, 3),
        "ops_per_second": round(count / elapsed, 1),
    }


def s3_floor(endpoint: str, count: int, concurrency: int) -> dict[str, Any]:
    """The bucket create's 7 S3 calls, made directly with boto3 at the same concurrency."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(max_pool_connections=concurrency * 2, retries={"max_attempts": 1}),
    )
    tag = uuid.uuid4().hex[:8]

    def create(i: int) -> None:
        name = f"fl-{tag}-{i}"
        with contextlib.suppress(ClientError):
            client.head_bucket(Bucket=name)
        client.create_bucket(Bucket=name)
        client.put_bucket_tagging(
            Bucket=name, Tagging={"TagSet": [{"Key": "managed-by", "Value": "hyperpilot"}]}
        )
        with contextlib.suppress(ClientError):
            client.get_public_access_block(Bucket=name)
        client.put_public_access_block(
            Bucket=name,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )
        with contextlib.suppress(ClientError):
            client.get_bucket_encryption(Bucket=name)
        client.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
        )

    create(-1)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(create, range(count)))
    elapsed = time.perf_counter() - start
    return {
        "operations": count,
        "seconds": round(elapsed, 3),
        "ops_per_second": round(count / elapsed, 1),
    }


def _processes(stack: Any) -> dict[str, list[int]]:
    found = {name: [p.pid] for name, p in stack.processes.items() if p.poll() is None}
    if stack.sim is not None:
        found["simulator"] = [stack.sim.pid]
    if stack.nats is not None and stack.nats.process is not None:
        found["nats"] = [stack.nats.process.pid]
    found["postgres"] = postgres_pids(stack)
    return found


def _snapshot(processes: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "rss_mb": round(sum(rss_mb(p) for p in pids), 1),
            "pss_mb": round(sum(pss_mb(p) for p in pids), 1),
        }
        for name, pids in processes.items()
    }


def _wait_healthy(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not become healthy")


def run(sequential_count: int, throughput_count: int, concurrency: int) -> dict[str, Any]:
    from hyperpilot.infra import free_port

    with embedded_stack() as stack:
        dsn = stack.database_url
        assert dsn is not None and stack.nats_url is not None
        # One operation through every process before anything is measured.
        asyncio.run(sequential(stack.url, dsn, 1))
        time.sleep(2)
        idle = _snapshot(_processes(stack))
        floor_port = free_port()
        floor_app = start_floor_app(dsn, floor_port, stack.state_dir)
        time.sleep(1)
        floor_idle = _snapshot({"floor": [floor_app.pid]})["floor"]
        stop_process(floor_app)

        async def interleaved(nats_url: str) -> dict[str, Any]:
            async with PipelineFloor(nats_url, dsn) as pipeline_floor:
                return await sequential(stack.url, dsn, sequential_count, pipeline_floor)

        pipeline = asyncio.run(interleaved(stack.nats_url))
        floor_latencies = pipeline.pop("floor_ms")
        floor = {
            "p50": round(percentile(floor_latencies, 50), 2),
            "p99": round(percentile(floor_latencies, 99), 2),
        }

        assert stack.aws_endpoint_url is not None
        with MemorySampler(lambda: _processes(stack)) as sampler:
            one = asyncio.run(throughput([stack.url], dsn, throughput_count, concurrency))
        peak_one = dict(sampler.peak)
        s3 = s3_floor(stack.aws_endpoint_url, throughput_count, concurrency)

        second_port = free_port()
        stack.start_replica("gateway", 2, {"GATEWAY_PORT": str(second_port)})
        stack.start_replica("cluster-svc", 2)
        second_url = f"http://{stack.gateway_host}:{second_port}"
        _wait_healthy(second_url)
        time.sleep(2)  # the second cluster-svc joins the shared consumer
        with MemorySampler(lambda: _processes(stack)) as sampler:
            two = asyncio.run(
                throughput([stack.url, second_url], dsn, throughput_count, concurrency)
            )
        peak_two = dict(sampler.peak)
        processes = _processes(stack)

    services = ("gateway", "cluster-svc")
    whole_idle = sum(v["rss_mb"] for v in idle.values())
    whole_idle_pss = sum(v["pss_mb"] for v in idle.values())
    pipeline_result = {
        "what": "bucket create followed on the live stream, one at a time",
        "floor": "JetStream publish -> pull consume -> INSERT + NOTIFY -> LISTEN receiver,"
        " one round after each of ours",
        "ours": pipeline,
        "floor_ms": floor,
        "summary": {
            "accepted_to_started_p50_ms": pipeline["accepted_to_started_ms"]["p50"],
            "accepted_to_started_p99_ms": pipeline["accepted_to_started_ms"]["p99"],
            "click_to_started_p50_ms": pipeline["click_to_started_ms"]["p50"],
            "floor_p50_ms": floor["p50"],
            "floor_p99_ms": floor["p99"],
            "ratio_p50": round(pipeline["accepted_to_started_ms"]["p50"] / floor["p50"], 2),
            "accepted_to_terminal_p50_ms": pipeline["accepted_to_terminal_ms"]["p50"],
            "s3_p50_ms": pipeline["s3_ms"]["p50"],
            "ours_excluding_s3_p50_ms": pipeline["ours_ms"]["p50"],
            "ours_excluding_s3_p99_ms": pipeline["ours_ms"]["p99"],
        },
        "goal": "ratio <= 2; p50 <= 10 ms",
    }
    throughput_result = {
        "what": f"bucket creates completed end to end, {concurrency} in flight",
        "floor": "the same 7 S3 calls per bucket with boto3, same concurrency, same simulator",
        "one_replica": one,
        "two_replicas": two,
        "floor_result": s3,
        "summary": {
            "ops_per_second_1": one["ops_per_second"],
            "ops_per_second_2": two["ops_per_second"],
            "floor_ops_per_second": s3["ops_per_second"],
            "ratio_1": round(s3["ops_per_second"] / one["ops_per_second"], 2),
            "ratio_2": round(s3["ops_per_second"] / two["ops_per_second"], 2),
        },
    }
    memory_result = {
        "what": "VmRSS per process: idle, and peak under the throughput load",
        "floor": "a bare FastAPI + asyncpg process (uvicorn), idle",
        "idle": idle,
        "peak_under_load_1_replica": {k: round(v, 1) for k, v in peak_one.items()},
        "peak_under_load_2_replicas": {k: round(v, 1) for k, v in peak_two.items()},
        "floor_idle": floor_idle,
        "processes": sorted(processes),
        "summary": {
            **{f"{s}_idle_mb": idle[s]["rss_mb"] for s in services},
            **{f"{s}_peak_mb": round(peak_one.get(s, 0.0), 1) for s in services},
            "floor_idle_mb": floor_idle["rss_mb"],
            "whole_stack_idle_rss_mb": round(whole_idle, 1),
            "whole_stack_idle_pss_mb": round(whole_idle_pss, 1),
            "max_service_idle_mb": max(idle[s]["rss_mb"] for s in services),
        },
        "goal": "<= 100 MB per service idle",
    }
    return {"pipeline": pipeline_result, "throughput": throughput_result, "memory": memory_result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sequential", type=int, default=80)
    parser.add_argument("--throughput", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    results = run(args.sequential, args.throughput, args.concurrency)
    for name, result in results.items():
        record(name, result)
    p = results["pipeline"]["summary"]
    t = results["throughput"]["summary"]
    m = results["memory"]["summary"]
    print(
        f"pipeline: 202 -> OperationStarted delivered p50 {p['accepted_to_started_p50_ms']} ms "
        f"(floor {p['floor_p50_ms']}, ratio {p['ratio_p50']}); to terminal "
        f"{p['accepted_to_terminal_p50_ms']} ms of which S3 {p['s3_p50_ms']} ms"
    )
    print(
        f"throughput: {t['ops_per_second_1']} ops/s (1 replica), {t['ops_per_second_2']} ops/s "
        f"(2 replicas); S3 calls alone {t['floor_ops_per_second']} ops/s"
    )
    print(
        f"memory idle: gateway {m['gateway_idle_mb']} MB, cluster-svc {m['cluster-svc_idle_mb']} MB "
        f"(floor {m['floor_idle_mb']} MB); whole stack {m['whole_stack_idle_rss_mb']} MB RSS"
    )


if __name__ == "__main__":
    main()
