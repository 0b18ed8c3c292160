"""Item 4, live-stream fan-out: 500 concurrent subscribers of /api/v1/events/stream.

The subscribers run in another process (plain asyncio sockets, so the client costs little);
events come from bucket creates accepted by the gateway (one OperationAccepted each), and the
delivery latency of each is its arrival at each subscriber minus its `occurred_at`. Floor: the
same subscribers on a bare FastAPI Server-Sent Events endpoint fed by one LISTEN connection,
events sent with pg_notify, in the same run.

    .venv/bin/python -m bench.fanout [--subscribers 500] [--events 30]

Writes bench/results/fanout.json. Goal: p99 delivery <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import time
from datetime import datetime
from typing import Any

import asyncpg
import httpx
import orjson

from bench.common import TOKEN, embedded_stack, percentile, record
from bench.floor import FANOUT_CHANNEL, start_floor_app, stop_process


def _sent_at(payload: bytes) -> float:
    data = orjson.loads(payload)
    if "occurred_at" in data:
        return datetime.fromisoformat(data["occurred_at"]).timestamp()
    return float(data["t"])


async def _subscribers(
    port: int, path: str, headers: dict[str, str], count: int, events: int, conn: Any
) -> None:
    ready = 0
    all_ready = asyncio.Event()
    delays: list[float] = []
    received = [0] * count
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        + "\r\n"
    ).encode()

    async def subscriber(index: int) -> None:
        nonlocal ready
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        writer.write(request)
        try:
            while received[index] < events:
                line = await reader.readline()
                if not line:
                    return
                if line.startswith(b"retry:"):
                    ready += 1
                    if ready == count:
                        all_ready.set()
                elif line.startswith(b"data: "):
                    now = time.time()
                    delays.append((now - _sent_at(line[6:])) * 1000)
                    received[index] += 1
        finally:
            writer.close()

    tasks = []
    for i in range(count):
        tasks.append(asyncio.create_task(subscriber(i)))
        if i % 50 == 49:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(all_ready.wait(), 60)
    conn.send("ready")
    await asyncio.wait(tasks, timeout=60)
    for task in tasks:
        task.cancel()
    conn.send({"delays": delays, "complete": sum(1 for r in received if r >= events)})


def _child(
    port: int, path: str, headers: dict[str, str], count: int, events: int, conn: Any
) -> None:
    asyncio.run(_subscribers(port, path, headers, count, events, conn))


def _fan_out(
    port: int,
    path: str,
    headers: dict[str, str],
    count: int,
    events: int,
    emit: Any,
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_child, args=(port, path, headers, count, events, child))
    process.start()
    if not parent.poll(90) or parent.recv() != "ready":
        process.kill()
        raise TimeoutError("the subscribers did not connect")
    time.sleep(0.5)
    for i in range(events):
        emit(i)
        time.sleep(0.1)
    if not parent.poll(90):
        process.kill()
        raise TimeoutError("the subscribers did not finish")
    result: dict[str, Any] = parent.recv()
    process.join(10)
    delays = result["delays"]
    return {
        "subscribers": count,
        "events": events,
        "deliveries": len(delays),
        "expected_deliveries": count * events,
        "subscribers_complete": result["complete"],
        "p50_ms": round(percentile(delays, 50), 2),
        "p99_ms": round(percentile(delays, 99), 2),
        "max_ms": round(max(delays, default=float("nan")), 2),
    }


def run(subscribers: int, events: int) -> dict[str, Any]:
    from hyperpilot.infra import free_port

    with embedded_stack((("gateway", "gateway"),), with_sim=False) as stack:
        dsn = stack.database_url
        assert dsn is not None
        floor_port = free_port()
        floor_app = start_floor_app(dsn, floor_port, stack.state_dir)
        loop = asyncio.new_event_loop()
        notifier = loop.run_until_complete(asyncpg.connect(dsn))
        api = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {TOKEN}"})
        try:

            def notify(i: int) -> None:
                payload = orjson.dumps({"t": time.time(), "i": i}).decode()
                loop.run_until_complete(
                    notifier.execute("SELECT pg_notify($1, $2)", FANOUT_CHANNEL, payload)
                )

            def accept(i: int) -> None:
                name = f"fan-{time.time_ns() % 10**9}-{i}"
                response = api.post("/api/v1/storage/buckets", json={"name": name})
                assert response.status_code == 202, response.text

            floor = _fan_out(floor_port, "/stream", {}, subscribers, events, notify)
            latest = loop.run_until_complete(
                notifier.fetchval("SELECT coalesce(max(seq), 0) FROM events")
            )
            ours = _fan_out(
                stack.gateway_port,
                f"/api/v1/events/stream?after={latest}",
                {"Authorization": f"Bearer {TOKEN}"},
                subscribers,
                events,
                accept,
            )
        finally:
            api.close()
            loop.run_until_complete(notifier.close())
            loop.close()
            stop_process(floor_app)
    return {
        "what": f"{subscribers} live-stream subscribers, {events} events at 10/s",
        "floor": "bare FastAPI SSE endpoint fed by one LISTEN connection (pg_notify)",
        "ours": ours,
        "floor_result": floor,
        "summary": {
            "p50_ms": ours["p50_ms"],
            "p99_ms": ours["p99_ms"],
            "floor_p50_ms": floor["p50_ms"],
            "floor_p99_ms": floor["p99_ms"],
            "ratio_p99": round(ours["p99_ms"] / floor["p99_ms"], 2),
            "delivered": f"{ours['deliveries']}/{ours['expected_deliveries']}",
        },
        "goal": "p99 delivery <= 100 ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subscribers", type=int, default=500)
    parser.add_argument("--events", type=int, default=30)
    args = parser.parse_args()
    result = run(args.subscribers, args.events)
    path = record("fanout", result)
    s = result["summary"]
    print(
        f"fan-out to {args.subscribers}: p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms "
        f"(floor p99 {s['floor_p99_ms']} ms, ratio {s['ratio_p99']}), delivered {s['delivered']}"
        f" -> {path}"
    )


if __name__ == "__main__":
    main()
