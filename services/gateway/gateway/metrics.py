"""Prometheus metrics of the gateway (request latency by route template), and the separate
server that exposes them without a token when METRICS_BIND is set."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUESTS = Histogram(
    "hyperpilot_http_request_seconds",
    "HTTP request latency",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
)
OPERATIONS_ACCEPTED = Counter(
    "hyperpilot_operations_accepted_total", "Operations accepted", ["kind"]
)
STREAM_SUBSCRIBERS = Gauge("hyperpilot_stream_subscribers", "Live event stream subscribers")
OUTBOX_PUBLISHED = Gauge("hyperpilot_outbox_published", "Messages the gateway's relay published")


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", "unmatched")
            REQUESTS.labels(scope["method"], template, str(status)).observe(
                time.perf_counter() - start
            )


def split_bind(bind: str) -> tuple[str, int]:
    """`host:port` (`[::1]:9464` for IPv6) as (host, port)."""
    host, _, port = bind.rpartition(":")
    return host.strip("[]"), int(port)


class MetricsServer:
    """/metrics without a token on its own address (METRICS_BIND), for a Prometheus that cannot
    send one: prometheus_client's small HTTP server, on a thread of its own; it serves the
    metrics on every path and nothing else."""

    def __init__(self, bind: str) -> None:
        self.bind = bind
        self._server: Any = None

    def start(self) -> None:
        host, port = split_bind(self.bind)
        self._server, _ = start_http_server(port, addr=host)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
