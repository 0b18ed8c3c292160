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

from bench.common import cpu_seconds, percentile


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
        while self.idle:
            reader, writer = self.idle.pop()
            if not reader.at_eof():
                break
            writer.close()  # idle longer than the server's keep-alive: closed by the server
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


@dataclass
class _Run:
    """What one stretch of scheduled requests saw."""

    count: int
    elapsed: float
    pending: int
    statuses: dict[str, int]
    scheduled_ms: list[float]
    sent_ms: list[float]
    server_cpu_seconds: float


async def _warm(client: _Connections, target: Target, prefix: str) -> None:
    for i in range(20):  # open a few connections
        await client.post(target.body.replace("{i}", f"{prefix}w{i}").encode())


async def _run(
    client: _Connections, target: Target, rate: float, seconds: float, prefix: str, pid: int
) -> _Run:
    count = max(1, int(rate * seconds))
    run = _Run(count, 0.0, 0, {}, [], [], 0.0)

    async def one(i: int, due: float) -> None:
        sent = time.perf_counter()
        try:
            key = str(await client.post(target.body.replace("{i}", f"{prefix}{i}").encode()))
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
            key = type(exc).__name__
        done = time.perf_counter()
        run.statuses[key] = run.statuses.get(key, 0) + 1
        run.scheduled_ms.append((done - due) * 1000)
        run.sent_ms.append((done - sent) * 1000)

    cpu_before = cpu_seconds(pid) if pid else 0.0
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
    run.elapsed = time.perf_counter() - start
    run.pending = len(pending)
    run.server_cpu_seconds = cpu_seconds(pid) - cpu_before if pid else 0.0
    return run


def _summary(rate: float, runs: list[_Run]) -> dict[str, Any]:
    """The runs of one target at one rate, pooled."""
    statuses: dict[str, int] = {}
    for run in runs:
        for key, n in run.statuses.items():
            statuses[key] = statuses.get(key, 0) + n
    sent = [ms for run in runs for ms in run.sent_ms]
    scheduled = [ms for run in runs for ms in run.scheduled_ms]
    requests = sum(run.count for run in runs)
    ok = statuses.get("202", 0)
    summary: dict[str, Any] = {
        "offered_rate": rate,
        "requests": requests,
        "completed_2xx": ok,
        "unfinished": sum(run.pending for run in runs),
        "statuses": statuses,
        "achieved_rate": round(ok / sum(run.elapsed for run in runs), 1),
        "p50_ms": round(percentile(sent, 50), 3),
        "p99_ms": round(percentile(sent, 99), 3),
        "p50_from_schedule_ms": round(percentile(scheduled, 50), 3),
        "p99_from_schedule_ms": round(percentile(scheduled, 99), 3),
        "server_cpu_ms_per_request": round(
            sum(run.server_cpu_seconds for run in runs) * 1000 / requests, 3
        ),
    }
    if len(runs) > 1:
        summary["rounds_p50_ms"] = [round(percentile(run.sent_ms, 50), 3) for run in runs]
    return summary


async def _alternating(
    targets: list[tuple[Target, int]], rate: float, seconds: float, rounds: int, prefix: str
) -> list[dict[str, Any]]:
    clients = [_Connections(target.url, target.headers) for target, _ in targets]
    for client, (target, _) in zip(clients, targets, strict=True):
        await _warm(client, target, prefix)
    runs: list[list[_Run]] = [[] for _ in targets]
    for r in range(rounds):
        # Each round runs every target once, in turn; who goes first alternates.
        order = list(range(len(targets)))
        for k in order if r % 2 == 0 else order[::-1]:
            target, pid = targets[k]
            runs[k].append(await _run(clients[k], target, rate, seconds, f"{prefix}r{r}-", pid))
    for client in clients:
        client.close()
    return [_summary(rate, target_runs) for target_runs in runs]


def _child(
    targets: list[tuple[Target, int]],
    rate: float,
    seconds: float,
    rounds: int,
    prefix: str,
    conn: Any,
) -> None:
    conn.send(asyncio.run(_alternating(targets, rate, seconds, rounds, prefix)))
    conn.close()


def run_rounds(
    targets: list[tuple[Target, int]], rate: float, seconds: float, rounds: int, prefix: str
) -> list[dict[str, Any]]:
    """`rounds` rounds of `rate` requests per second for `seconds` on each target in turn (a
    target is its URL and its server's pid, whose CPU time is counted; 0: none), from one
    separate process; each target's figures pool its rounds. Interleaved like this, a change in
    the machine's speed falls on every target alike."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(targets, rate, seconds, rounds, prefix, child))
    process.start()
    child.close()
    budget = rounds * len(targets) * (seconds + 20) + 60
    if not parent.poll(budget):
        process.kill()
        raise TimeoutError(f"the load at {rate}/s did not finish")
    result: list[dict[str, Any]] = parent.recv()
    process.join(10)
    return result


def run_step(
    target: Target, rate: float, seconds: float, prefix: str, pid: int = 0
) -> dict[str, Any]:
    """One step of `rate` requests per second for `seconds`, from a separate process."""
    return run_rounds([(target, pid)], rate, seconds, 1, prefix)[0]


def sustained(step: dict[str, Any], p99_limit_ms: float = 100.0) -> bool:
    """The server kept up: every request answered 202, at >= 95% of the offered rate, and no
    queue built up (p99 from the schedule within the limit)."""
    return bool(
        step["completed_2xx"] == step["requests"]
        and step["achieved_rate"] >= 0.95 * step["offered_rate"]
        and step["p99_from_schedule_ms"] <= p99_limit_ms
    )
