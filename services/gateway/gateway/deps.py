"""Request dependencies: the app's shared objects, the caller, the source face."""

from __future__ import annotations

from typing import Annotated

import asyncpg
from fastapi import Depends, Request

from gateway.auth import SOURCES, Principal, TokenVerifier, require_role
from gateway.stream import EventBroadcaster
from shared.config import Settings

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Every dependency is a coroutine: FastAPI runs a plain `def` dependency in a worker thread,
# a thread hand-off per dependency per request for what is an attribute lookup. Headers that the
# API reference does not list are read from the request itself: FastAPI spends about as much
# on one declared header parameter, or on one nested dependency, as on the whole body model.


async def get_pool(request: Request) -> asyncpg.Pool:
    pool: asyncpg.Pool = request.app.state.pool
    return pool


async def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_broadcaster(request: Request) -> EventBroadcaster:
    broadcaster: EventBroadcaster = request.app.state.broadcaster
    return broadcaster


async def get_principal(request: Request) -> Principal:
    verifier: TokenVerifier = request.app.state.tokens
    principal = await verifier.verify(request.headers.get("authorization"))
    request.state.principal = principal
    return principal


def role(required: str) -> object:
    async def check(request: Request) -> Principal:
        principal = await get_principal(request)
        require_role(principal, required)
        if request.method in MUTATING_METHODS:
            request.app.state.rate_limiter.check(principal.name)
        return principal

    return Depends(check)


async def get_source(request: Request) -> str:
    source = request.headers.get("x-hyperpilot-source")
    return source if source in SOURCES else "rest"


Pool = Annotated[asyncpg.Pool, Depends(get_pool)]
Broadcaster = Annotated[EventBroadcaster, Depends(get_broadcaster)]
Source = Annotated[str, Depends(get_source)]
Viewer = Annotated[Principal, role("viewer")]
Operator = Annotated[Principal, role("operator")]
Admin = Annotated[Principal, role("admin")]
