"""The floors: the same work done by the bare minimum of NATS, PostgreSQL and FastAPI.

- `serve`: a bare FastAPI app under one uvicorn worker, served as the gateway is
  (`gateway.app.SERVER_OPTIONS`). `POST /items` does one INSERT (the accept floor);
  `GET /stream` is a Server-Sent Events stream fed by one LISTEN connection (the fan-out floor).
- `PipelineFloor`: a JetStream publish, a pull consumer in another process that INSERTs and
  NOTIFYs in one transaction, and a LISTEN receiver (the pipeline floor), one round at a time.

    .venv/bin/python -m bench.floor --dsn DSN --port PORT     # the HTTP floor app
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict

FANOUT_CHANNEL = "bench_floor_fanout"


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


def create_floor_app(dsn: str) -> Any:
    import asyncpg

    subscribers: set[asyncio.Queue[str]] = set()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = await asyncpg.create_pool(dsn, min_size=0, max_size=20)
        async with pool.acquire() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS bench_floor_items"
                " (id bigserial PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now())"
            )
        listener = await asyncpg.connect(dsn)

        def fan_out(*args: object) -> None:
            payload = str(args[3])
            for queue in subscribers:
                queue.put_nowait(payload)

        await listener.add_listener(FANOUT_CHANNEL, fan_out)
        app.state.pool = pool
        try:
            yield
        finally:
            await listener.close()
            await pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/items", status_code=202)
    async def create_item(item: Item, request: Request) -> JSONResponse:
        async with request.app.state.pool.acquire() as conn:
            row_id = await conn.fetchval(
                "INSERT INTO bench_floor_items (name) VALUES ($1) RETURNING id", item.name
            )
        return JSONResponse({"id": row_id}, status_code=202)

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        queue: asyncio.Queue[str] = asyncio.Queue()

        async def frames() -> AsyncIterator[bytes]:
            subscribers.add(queue)
            try:
                yield b"retry: 1000\n\n"
                while True:
                    payload = await queue.get()
                    yield b"data: " + payload.encode() + b"\n\n"
            finally:
                subscribers.discard(queue)

        return StreamingResponse(frames(), media_type="text/event-stream")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def start_floor_app(dsn: str, port: int, log_dir: Path) -> subprocess.Popen[bytes]:
    """The floor app in its own process, like the gateway; returns once it answers."""
    import urllib.request

    log = open(log_dir / "floor.log", "ab")  # noqa: SIM115 - owned by the process
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.floor", "--dsn", dsn, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the floor app exited with {process.returncode}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response,
        ):
            if response.status == 200:
                return process
        time.sleep(0.05)
    process.kill()
    raise TimeoutError("the floor app did not start")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# The pipeline floor -------------------------------------------------------------------------

FLOOR_STREAM = "BENCH_FLOOR"
FLOOR_SUBJECT = "benchfloor.cmd"
FLOOR_CHANNEL = "bench_floor_done"


async def _consume(nats_url: str, dsn: str, ready: Any, stop: Any) -> None:
    import asyncpg
    import nats
    from nats.js.errors import FetchTimeoutError

    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    sub = await js.pull_subscribe(FLOOR_SUBJECT, durable="bench-floor", stream=FLOOR_STREAM)
    conn = await asyncpg.connect(dsn)
    ready.set()
    while not stop.is_set():
        try:
            messages = await sub.fetch(1, timeout=0.5)
        except (FetchTimeoutError, TimeoutError):
            continue
        for msg in messages:
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO bench_floor_pipeline (body) VALUES ($1)", msg.data.decode()
                )
                await conn.execute("SELECT pg_notify($1, $2)", FLOOR_CHANNEL, msg.data.decode())
            await msg.ack()
    await conn.close()
    await nc.close()


def _consumer_process(nats_url: str, dsn: str, ready: Any, stop: Any) -> None:
    asyncio.run(_consume(nats_url, dsn, ready, stop))


class PipelineFloor:
    """publish -> pull consume (another process) -> INSERT + NOTIFY -> LISTEN receiver, one
    message at a time: `once()` is one round, so that rounds can be interleaved with the
    measurement they are the floor of (both then see the same machine)."""

    def __init__(self, nats_url: str, dsn: str) -> None:
        self.nats_url = nats_url
        self.dsn = dsn
        self._waiting: dict[str, asyncio.Future[float]] = {}
        self._sent = 0

    async def __aenter__(self) -> PipelineFloor:
        import asyncpg
        import nats
        from nats.js.api import StreamConfig

        self._nc = await nats.connect(self.nats_url)
        self._js = self._nc.jetstream()
        with contextlib.suppress(Exception):
            await self._js.delete_stream(FLOOR_STREAM)
        await self._js.add_stream(StreamConfig(name=FLOOR_STREAM, subjects=[FLOOR_SUBJECT]))
        setup = await asyncpg.connect(self.dsn)
        await setup.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor_pipeline"
            " (id bigserial PRIMARY KEY, body text NOT NULL, created_at timestamptz DEFAULT now())"
        )
        await setup.close()
        ctx = mp.get_context("spawn")
        ready, self._stop = ctx.Event(), ctx.Event()
        self._consumer = ctx.Process(
            target=_consumer_process, args=(self.nats_url, self.dsn, ready, self._stop)
        )
        self._consumer.start()
        await asyncio.get_running_loop().run_in_executor(None, ready.wait, 30)
        self._listener = await asyncpg.connect(self.dsn)
        await self._listener.add_listener(FLOOR_CHANNEL, self._received)
        for _ in range(10):  # warm the connections up
            await self.once()
        return self

    def _received(self, *args: object) -> None:
        future = self._waiting.pop(str(args[3]), None)
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    async def once(self) -> float:
        """One round's latency, in ms."""
        self._sent += 1
        key = f"m-{self._sent}"
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        start = time.perf_counter()
        await self._js.publish(FLOOR_SUBJECT, key.encode(), headers={"Nats-Msg-Id": key})
        done = await asyncio.wait_for(future, 10)
        return (done - start) * 1000

    async def __aexit__(self, *_: object) -> None:
        self._stop.set()
        self._consumer.join(10)
        if self._consumer.is_alive():
            self._consumer.kill()
        await self._listener.close()
        with contextlib.suppress(Exception):
            await self._js.delete_stream(FLOOR_STREAM)
        await self._nc.close()


def main() -> None:
    import uvicorn

    from gateway.app import SERVER_OPTIONS

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        create_floor_app(args.dsn),
        host="127.0.0.1",
        port=args.port,
        **SERVER_OPTIONS,
    )


if __name__ == "__main__":
    main()
