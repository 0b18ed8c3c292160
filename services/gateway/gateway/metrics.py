"""Prometheus metrics of the gateway (request latency by route template)."""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram
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
