"""Benchmark of the Kubernetes API emulator: GETs per second and concurrent watches.

The API server runs in its own process (as in `python -m sim`), the load generator in this
one, both over HTTPS with an EKS-style bearer token. Writes bench/results/k8s_api.json.

    .venv/bin/python bench/k8s_api.py [--seconds 10] [--connections 16] [--watches 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import ssl
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

RESULTS = Path(__file__).resolve().parent / "results" / "k8s_api.json"


def serve(conn: Any) -> None:
    """Child process: one emulated cluster, until told to stop."""
    from sim.k8s import ApiServer
    from sim.profile import get_profile

    server = ApiServer("bench", get_profile("fast")).start()
    conn.send({"endpoint": server.endpoint, "ca": server.ca_pem, "token": server.token()})
    conn.recv()
    server.stop()


async def get_load(
    endpoint: str, ctx: ssl.SSLContext, headers: dict[str, str], seconds: float, connections: int
) -> dict[str, Any]:
    url = f"{endpoint}/api/v1/namespaces/default/configmaps/bench"
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(ssl=ctx, limit=connections)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                async with session.get(url) as resp:
                    await resp.read()
                    if resp.status != 200:
                        errors += 1
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "connections": connections,
        "seconds": round(elapsed, 2),
        "requests": len(latencies),
        "errors": errors,
        "gets_per_second": round(len(latencies) / elapsed, 1),
        "latency_ms_p50": round(statistics.median(latencies) * 1000, 2),
        "latency_ms_p99": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
    }


async def watch_load(
    endpoint: str, ctx: ssl.SSLContext, headers: dict[str, str], watches: int, writes: int
) -> dict[str, Any]:
    base = f"{endpoint}/api/v1/namespaces/default/configmaps"
    connector = aiohttp.TCPConnector(ssl=ctx, limit=watches + 8)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(
        connector=connector, headers=headers, timeout=timeout
    ) as session:
        async with session.get(base) as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        received = [0] * watches
        last_seen = [0.0] * watches
        opened = 0
        all_open = asyncio.Event()

        async def watcher(i: int) -> None:
            nonlocal opened
            params = {
                "watch": "true",
                "resourceVersion": rv,
                "labelSelector": "bench=watch",
                "timeoutSeconds": "120",
            }
            async with session.get(base, params=params) as resp:
                opened += 1
                if opened == watches:
                    all_open.set()
                async for _line in resp.content:
                    received[i] += 1
                    last_seen[i] = time.perf_counter()
                    if received[i] == writes:
                        return

        tasks = [asyncio.create_task(watcher(i)) for i in range(watches)]
        await asyncio.wait_for(all_open.wait(), 60)
        t0 = time.perf_counter()
        for n in range(writes):
            body = {
                "metadata": {"name": f"w{n}", "labels": {"bench": "watch"}},
                "data": {"n": str(n)},
            }
            async with session.post(base, json=body) as resp:
                assert resp.status == 201, await resp.text()
        write_done = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        fanout = max(last_seen) - t0
    delivered = sum(received)
    return {
        "watches": watches,
        "writes": writes,
        "events_delivered": delivered,
        "events_expected": watches * writes,
        "all_delivered": delivered == watches * writes,
        "write_seconds": round(write_done - t0, 3),
        "fanout_seconds": round(fanout, 3),
        "events_per_second": round(delivered / fanout, 1),
    }


async def run(args: argparse.Namespace, info: dict[str, str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as f:
        f.write(info["ca"])
    ctx = ssl.create_default_context(cafile=f.name)
    os.unlink(f.name)
    headers = {"Authorization": f"Bearer {info['token']}", "Accept": "application/json"}
    connector = aiohttp.TCPConnector(ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        body = {"metadata": {"name": "bench"}, "data": {"key": "value" * 20}}
        async with session.post(
            f"{info['endpoint']}/api/v1/namespaces/default/configmaps", json=body
        ) as resp:
            assert resp.status == 201, await resp.text()
    gets = await get_load(info["endpoint"], ctx, headers, args.seconds, args.connections)
    watches = await watch_load(info["endpoint"], ctx, headers, args.watches, args.writes)
    return {"get": gets, "watch": watches}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--writes", type=int, default=50)
    args = parser.parse_args()
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve, args=(child,), daemon=True)
    proc.start()
    info = parent.recv()
    try:
        result = asyncio.run(run(args, info))
    finally:
        parent.send("stop")
        proc.join(timeout=15)
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    result["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
