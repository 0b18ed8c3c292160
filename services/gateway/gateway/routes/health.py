"""Liveness, readiness (PostgreSQL and NATS) and Prometheus metrics.

/metrics needs a bearer token (viewer or above), like the API. With METRICS_BIND set it is
served instead, without a token, by a separate small server on that address (see
`gateway.metrics.MetricsServer`), and the gateway's own port has no /metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway.deps import Viewer
from gateway.errors import retry_after
from gateway.routing import PrefixedRoute

router = APIRouter(route_class=PrefixedRoute, tags=["health"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="PostgreSQL and NATS are reachable")
async def readyz(request: Request) -> JSONResponse:
    checks: dict[str, Any] = {}
    try:
        async with request.app.state.pool.acquire(timeout=2) as conn:
            await conn.fetchval("SELECT 1")
        checks["postgres"] = "ok"
    except Exception as exc:
        checks["postgres"] = f"unavailable: {type(exc).__name__}"
    checks["nats"] = "ok" if request.app.state.bus.connected else "unavailable"
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not_ready", "checks": checks},
        status_code=200 if ready else 503,
        headers=None if ready else retry_after(503),
    )


METRICS_PATH = "/metrics"


@router.get(METRICS_PATH, summary="Prometheus metrics", include_in_schema=False)
async def metrics(_: Viewer) -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
