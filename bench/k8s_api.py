"""Benchmark of the Kubernetes API emulator: GETs per second and concurrent watches.

The API server runs in its own process (as in `python -m sim`), the load generator in another,
both over HTTPS with an EKS-style bearer token. GETs are driven by wrk (Debian's package, a C
client: `make bench` installs it when it can) so the figure is the server's, not a Python
client's; the floor is the same HTTP/TLS layer (`sim.k8s.http.HttpServer`) answering a fixed
body of the same size in the same process, measured by the same wrk in the same run. Without
wrk the GETs are driven by aiohttp and the result says so. Issue 24's goal: >= 10,000 GETs/s.
Writes bench/results/k8s_api.json.

    .venv/bin/python bench/k8s_api.py [--seconds 10] [--connections 16] [--watches 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp

RESULTS = Path(__file__).resolve().parent / "results" / "k8s_api.json"


GOAL_GETS_PER_SECOND = 10_000
CONFIGMAP = "/api/v1/namespaces/default/configmaps/bench"


def _floor_server(server: Any, body: bytes) -> int:
    """The emulator's HTTP/TLS layer alone, answering `body` to every request, on a loop of
    its own in this process (so it has the same interpreter and TLS setup as the API)."""
    from sim.k8s.http import HttpServer, Request, Response

    async def fixed(_request: Request) -> Response:
        return Response(200, body)

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.cert.configure_cert(ctx)
    ctx.set_alpn_protocols(["http/1.1"])
    loop = asyncio.new_event_loop()
    http = HttpServer(fixed, ctx)
    port: int = loop.run_until_complete(http.start("127.0.0.1", 0))
    threading.Thread(target=loop.run_forever, name="floor", daemon=True).start()
    return port


def serve(conn: Any) -> None:
    """Child process: one emulated cluster (and, when asked, the bare HTTP layer serving the
    body of its ConfigMap), until told to stop."""
    from sim.k8s import ApiServer
    from sim.profile import get_profile

    server = ApiServer("bench", get_profile("fast")).start()
    conn.send({"endpoint": server.endpoint, "ca": server.ca_pem, "token": server.token()})
    while (message := conn.recv()) != "stop":
        conn.send(f"https://127.0.0.1:{_floor_server(server, message)}")
    server.stop()


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk_load(url: str, token: str, seconds: float, connections: int) -> dict[str, Any]:
    """GETs of `url` by wrk (one thread: the other core is the server's)."""
    wrk = shutil.which("wrk")
    assert wrk is not None
    out = subprocess.run(
        [
            *(wrk, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"),
            *("-H", f"Authorization: Bearer {token}", "-H", "Accept: application/json", url),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in ([\d.]+)s", out)
    latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.MULTILINE))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    assert rate and total, out

    def ms(key: str) -> float:
        m = re.fullmatch(r"([\d.]+)(us|ms|s)", latency[key])
        assert m, latency
        return round(_ms(m.group(1), m.group(2)), 2)

    return {
        "client": "wrk, 1 thread",
        "connections": connections,
        "seconds": float(total.group(2)),
        "requests": int(total.group(1)),
        "errors": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": socket_errors.group(1).strip() if socket_errors else "",
        "gets_per_second": round(float(rate.group(1)), 1),
        "latency_ms_p50": ms("50"),
        "latency_ms_p99": ms("99"),
    }


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
        "client": "aiohttp (Python), one process",
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


def _context(info: dict[str, str]) -> ssl.SSLContext:
    with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as f:
        f.write(info["ca"])
    ctx = ssl.create_default_context(cafile=f.name)
    os.unlink(f.name)
    return ctx


async def seed(info: dict[str, str]) -> bytes:
    """Create the ConfigMap the GETs read; return its body as the API serves it."""
    headers = {"Authorization": f"Bearer {info['token']}", "Accept": "application/json"}
    connector = aiohttp.TCPConnector(ssl=_context(info))
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        body = {"metadata": {"name": "bench"}, "data": {"key": "value" * 20}}
        async with session.post(
            f"{info['endpoint']}/api/v1/namespaces/default/configmaps", json=body
        ) as resp:
            assert resp.status == 201, await resp.text()
        async with session.get(f"{info['endpoint']}{CONFIGMAP}") as resp:
            return await resp.read()


async def python_load(args: argparse.Namespace, info: dict[str, str]) -> dict[str, Any]:
    ctx = _context(info)
    headers = {"Authorization": f"Bearer {info['token']}", "Accept": "application/json"}
    seconds = args.seconds if shutil.which("wrk") is None else min(args.seconds, 5.0)
    gets = await get_load(info["endpoint"], ctx, headers, seconds, args.connections)
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
    wrk = shutil.which("wrk") is not None
    try:
        body = asyncio.run(seed(info))
        result: dict[str, Any] = {}
        if wrk:
            parent.send(body)
            floor_url = parent.recv()
            result["floor"] = wrk_load(floor_url, info["token"], args.seconds, args.connections)
            result["floor"]["what"] = (
                "the same HTTP/TLS layer answering the ConfigMap's bytes, no API work"
            )
            result["get"] = wrk_load(
                f"{info['endpoint']}{CONFIGMAP}", info["token"], args.seconds, args.connections
            )
            result["get_python_client"] = None
        python = asyncio.run(python_load(args, info))
        if wrk:
            result["get_python_client"] = python["get"]
        else:
            result["get"] = python["get"]
            result["note"] = (
                "wrk is not installed: GETs driven by aiohttp, so the client is measured too"
            )
        result["watch"] = python["watch"]
        result["goal_gets_per_second"] = GOAL_GETS_PER_SECOND
        if "floor" in result:
            result["ratio_to_floor"] = round(
                result["get"]["gets_per_second"] / result["floor"]["gets_per_second"], 3
            )
    finally:
        parent.send("stop")
        proc.join(timeout=15)
    result["machine"] = {
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    result["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
