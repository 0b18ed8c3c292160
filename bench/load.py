"""An open-loop load generator in its own process: a fixed request rate, bounded in count and time.

Requests leave on a schedule (request i at start + i / rate) whatever the answers do, so a slow
server shows up as latency instead of a lower rate. Latency is measured from the scheduled
instant (queueing included) and from the actual send. Loopback only: keep-alive HTTP/1.1 on
asyncio streams.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bench.common import percentile


@dataclass(frozen=True)
class Target:
    url: str  # absolute URL of the POST
    body: str  # JSON with one `{i}` placeholder made unique per request
    headers: tuple[tuple[str, str], ...] = ()


class _Connections:
    """Keep-alive HTTP/1.1 connections on plain asyncio streams: a client that costs the
    machine far less per request than a full HTTP library, so the server gets the cores."""

    def __init__(self, url: str, headers: tuple[tuple[str, str], ...]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        self.head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        ).encode()
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, body: bytes) -> int:
        if self.idle:
            reader, writer = self.idle.pop()
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.write(self.head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        status_line = await reader.readline()
        if not status_line:
            writer.close()
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split(b" ", 2)[1])
        length = 0
        keep = True
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            lowered = name.strip().lower()
            if lowered == b"content-length":
                length = int(value.strip())
            elif lowered == b"connection" and value.strip().lower() == b"close":
                keep = False
        if length:
            await reader.readexactly(length)
        if keep:
            self.idle.append((reader, writer))
        else:
            writer.close()
        return status

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


async def _step(target: Target, rate: float, seconds: float, prefix: str) -> dict[str, Any]:
    count = max(1, int(rate * seconds))
    scheduled_ms: list[float] = []
    sent_ms: list[float] = []
    statuses: dict[str, int] = {}
    client = _Connections(target.url, target.headers)
    for i in range(20):  # open a few connections
        await client.post(target.body.replace("{i}", f"{prefix}w{i}").encode())

    async def one(i: int, due: float) -> None:
        sent = time.perf_counter()
        try:
            key = str(await client.post(target.body.replace("{i}", f"{prefix}{i}").encode()))
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
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
    client.close()
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
    return bool(
        step["completed_2xx"] == step["requests"]
        and step["achieved_rate"] >= 0.95 * step["offered_rate"]
        and step["p99_from_schedule_ms"] <= p99_limit_ms
    )
