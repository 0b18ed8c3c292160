"""The gateway: REST API v1, the live event stream and the outbox relay."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from gateway import errors
from gateway.accept import close_accept_queue, open_accept_queue
from gateway.auth import TokenVerifier, hash_token, store_token
from gateway.limits import BodySizeLimit, StorableInput
from gateway.metrics import MetricsServer, RequestMetrics
from gateway.ratelimit import MutationRateLimiter
from gateway.routes import routers
from gateway.routes.health import METRICS_PATH
from gateway.routing import RouteIndex
from gateway.stream import EventBroadcaster
from shared.bus import Bus
from shared.config import Settings, get_settings
from shared.db import create_pool
from shared.logging import configure_logging, get_logger
from shared.memory import limit_arenas
from shared.outbox import OutboxRelay

log = get_logger("gateway")

DESCRIPTION = """
Hyperpilot's REST API. Every mutation answers `202 {operation_id, status_url}`; poll the
operation (or follow `/api/v1/events/stream`) until it is terminal. Send `Idempotency-Key` to make
a retry safe: the same key with the same body returns the same operation.
"""


async def _bootstrap_admin(app: FastAPI, settings: Settings) -> None:
    token = settings.hyperpilot_admin_token
    if token is None:
        return
    while True:
        try:
            async with app.state.pool.acquire() as conn:
                await store_token(conn, "admin", "admin", token.get_secret_value())
            # A request that came before the row was stored cached the token as unknown;
            # forget that, so the admin token works from now on, not after the cache expires.
            app.state.tokens.ended(hash_token(token.get_secret_value()))
            return
        except Exception as exc:
            log.warning("cannot store the admin token yet", error=repr(exc))
            await asyncio.sleep(1)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    pool = await create_pool(settings.database_url, min_size=0, max_size=20)
    bus = Bus(settings.nats_url, name="gateway")
    bus.start()
    app.state.pool = pool
    app.state.bus = bus
    oidc = None
    if settings.oidc_issuer and settings.oidc_audience and settings.oidc_jwks:
        # Imported only when configured: the JWT and HTTP client libraries cost the
        # process about 18 MB.
        from gateway.oidc import OidcVerifier

        oidc = OidcVerifier(
            settings.oidc_issuer,
            settings.oidc_audience,
            settings.oidc_jwks,
            settings.oidc_role_claim,
        )
    app.state.tokens = TokenVerifier(pool, oidc)
    app.state.rate_limiter = MutationRateLimiter(
        settings.mutations_per_minute, settings.mutation_burst
    )
    app.state.broadcaster = EventBroadcaster(pool, settings.database_url)
    app.state.tokens.follow(app.state.broadcaster)  # revocations, from every gateway
    app.state.relay = OutboxRelay(
        pool, bus, settings.database_url, poll_seconds=settings.outbox_poll_seconds
    )
    open_accept_queue(pool, settings.database_url, app.state.relay, app.state.broadcaster.committed)
    metrics_server = MetricsServer(settings.metrics_bind) if settings.metrics_bind else None
    if metrics_server is not None:
        metrics_server.start()
    tasks = [
        asyncio.create_task(_bootstrap_admin(app, settings)),
        asyncio.create_task(app.state.broadcaster.run(), name="event-stream"),
        asyncio.create_task(app.state.relay.run(), name="outbox-relay"),
    ]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        if metrics_server is not None:
            metrics_server.stop()
        await app.state.tokens.close()
        await close_accept_queue(pool)
        await bus.close()
        await pool.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        title="Hyperpilot",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        # FastAPI's native OpenTelemetry records nothing without the OpenTelemetry SDK (not a
        # dependency), yet looks for configured providers on every request (7 us of the
        # bucket create's 120 in-process). The gateway's metrics are Prometheus (/metrics).
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # /docs is served from the gateway's own files (routes/ui.py), not a CDN; no /redoc.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    errors.install(app)
    # Innermost first: the storable-input check reads the body BodySizeLimit has let through.
    app.add_middleware(StorableInput)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestMetrics)
    if settings.cors_origins:
        # Tokens travel in the Authorization header, never in cookies, so a cross-site page
        # cannot ride a user's session (no CSRF surface); CORS only opens named origins.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "Idempotency-Key",
                "X-Hyperpilot-Source",
                "Last-Event-ID",
            ],
        )
    for router in routers():
        # Each route already carries its full path, tags and schema flag. Added directly, a
        # request is matched by one flat scan; an included router is re-resolved on every
        # request, which cost a quarter of the gateway's CPU per accept.
        app.router.routes.extend(
            route
            for route in router.routes
            # With METRICS_BIND, /metrics is served there instead (no token), not here.
            if not (settings.metrics_bind and getattr(route, "path", None) == METRICS_PATH)
        )
    # First in the scan: finds an HTTP request's route by its path's prefixes.
    app.router.routes.insert(0, RouteIndex(app.router.routes))

    return app


# How the gateway is served: one uvicorn worker on uvloop with the httptools parser, which
# spend less CPU per request than asyncio's own loop and h11 (bench/floor.py serves the accept
# floor the same way).
SERVER_OPTIONS: dict[str, Any] = {
    "loop": "uvloop",
    "http": "httptools",
    "log_level": "warning",
    "access_log": False,
}


def main() -> None:
    import uvicorn

    settings = get_settings()
    limit_arenas(settings.malloc_arenas)  # before uvicorn starts a thread
    configure_logging(settings.log_level, settings.log_format)
    uvicorn.run(
        create_app(settings),
        host=settings.gateway_host,
        port=settings.gateway_port,
        **SERVER_OPTIONS,
    )
