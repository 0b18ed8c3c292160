"""An open-loop load generator in its own process: a fixed request rate, bounded in count and time.

Requests leave on a schedule (request i at start + i / rate) whatever the answers do, so a slow
server shows up as latency instead of a lower rate. Latency is measured from the scheduled
instant (queueing included) and from the actual send.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from dataclasses import dataclass
from typing import Any

from bench.common import percentile


@dataclass(frozen=True)
class Target:
    url: str  # absolute URL of the POST
    body: str  # JSON with one `{i}` placeholder made unique per request
    headers: tuple[tuple[str, str], ...] = ()


async def _step(target: Target, rate: float, seconds: float, prefix: str) -> dict[str, Any]:
    import httpx

    count = max(1, int(rate * seconds))
    scheduled_ms: list[float] = []
    sent_ms: list[float] = []
    statuses: dict[str, int] = {}
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx.AsyncClient(limits=limits, timeout=30, headers=dict(target.headers)) as client:
        for i in range(20):  # open the connections
            await client.post(
                target.url,
                content=target.body.replace("{i}", f"{prefix}w{i}"),
                headers={"Content-Type": "application/json"},
            )

        async def one(i: int, due: float) -> None:
            sent = time.perf_counter()
            try:
                response = await client.post(
                    target.url,
                    content=target.body.replace("{i}", f"{prefix}{i}"),
                    headers={"Content-Type": "application/json"},
                )
                key = str(response.status_code)
            except httpx.HTTPError as exc:
                key = type(exc).__name__
            done = time.perf_counter()
            statuses[key] = statuses.get(key, 0) + 1
            scheduled_ms.append((done - due) * 1000)
            sent_ms.append((done - sent) * 1000)

        tasks: list[asyncio.Task[None]] = []
        start = time.perf_counter() + 0.01
        i = 0
        while i < count:
            now = time.perf_counter()
            while i < count and start + i / rate <= now:
                tasks.append(asyncio.create_task(one(i, start + i / rate)))
                i += 1
            if i < count:
                await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
        _, pending = await asyncio.wait(tasks, timeout=seconds + 20)
        for task in pending:
            task.cancel()
        elapsed = time.perf_counter() - start
    ok = statuses.get("202", 0)
    return {
        "offered_rate": rate,
        "requests": count,
        "completed_2xx": ok,
        "unfinished": len(pending),
        "statuses": statuses,
        "achieved_rate": round(ok / elapsed, 1),
        "p50_ms": round(percentile(sent_ms, 50), 3),
        "p99_ms": round(percentile(sent_ms, 99), 3),
        "p50_from_schedule_ms": round(percentile(scheduled_ms, 50), 3),
        "p99_from_schedule_ms": round(percentile(scheduled_ms, 99), 3),
    }


def _child(target: Target, rate: float, seconds: float, prefix: str, conn: Any) -> None:
    conn.send(asyncio.run(_step(target, rate, seconds, prefix)))
    conn.close()


def run_step(target: Target, rate: float, seconds: float, prefix: str) -> dict[str, Any]:
    """One step of `rate` requests per second for `seconds`, from a separate process."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(target, rate, seconds, prefix, child))
    process.start()
    child.close()
    if not parent.poll(seconds + 60):
        process.kill()
        raise TimeoutError(f"the load step at {rate}/s did not finish")
    result: dict[str, Any] = parent.recv()
    process.join(10)
    return result


def sustained(step: dict[str, Any], p99_limit_ms: float = 100.0) -> bool:
    """The server kept up: every request answered 202, at >= 95% of the offered rate, and no
    queue built up (p99 from the schedule within the limit)."""
    return (
        step["completed_2xx"] == step["requests"]
        and step["achieved_rate"] >= 0.95 * step["offered_rate"]
        and step["p99_from_schedule_ms"] <= p99_limit_ms
    )
