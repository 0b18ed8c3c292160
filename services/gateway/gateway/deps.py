"""Request dependencies: the app's shared objects, the caller, the source face."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import asyncpg
from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from gateway.auth import SOURCES, Principal, TokenVerifier, require_role
from gateway.stream import EventBroadcaster
from shared.config import Settings

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Every dependency is a coroutine: FastAPI runs a plain `def` dependency in a worker thread,
# a thread hand-off per dependency per request for what is an attribute lookup. Headers and
# query parameters every mutation shares are read from the request itself, in one dependency
# (`mutation`): FastAPI spends about as much on one declared parameter, or on one nested
# dependency, as on the whole body model.


async def get_pool(request: Request) -> asyncpg.Pool:
    pool: asyncpg.Pool = request.app.state.pool
    return pool


async def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_broadcaster(request: Request) -> EventBroadcaster:
    broadcaster: EventBroadcaster = request.app.state.broadcaster
    return broadcaster


def token_verifier(app: Any) -> TokenVerifier:
    """The app's token verifier. The lifespan makes it follow revocations (on the live stream's
    LISTEN connection); an app served without the lifespan follows them from the first use."""
    verifier: TokenVerifier = app.state.tokens
    if isinstance(verifier, TokenVerifier) and not verifier.following:
        verifier.follow(app.state.broadcaster)
    return verifier


async def get_principal(request: Request) -> Principal:
    verifier = token_verifier(request.app)
    principal = await verifier.verify(request.headers.get("authorization"))
    request.state.principal = principal
    return principal


async def _authorized(request: Request, required: str) -> Principal:
    """The caller, if its role suffices; its mutations count against its rate limit."""
    principal = await get_principal(request)
    require_role(principal, required)
    if request.method in MUTATING_METHODS:
        request.app.state.rate_limiter.check(principal.name)
    return principal


def role(required: str) -> object:
    async def check(request: Request) -> Principal:
        return await _authorized(request, required)

    return Depends(check)


async def get_source(request: Request) -> str:
    source = request.headers.get("x-hyperpilot-source")
    return source if source in SOURCES else "rest"


DRY_RUN = "Answer the plan (the calls it would make) without doing it"
IDEMPOTENCY_KEY = "Same key + same body: the same operation"
_BOOLEAN = TypeAdapter(bool)


@dataclass(frozen=True, slots=True)
class Mutation:
    """What a mutating route reads from its request besides its path and body, in one
    dependency: the pool, the caller (authorized and rate-limited), the source face, the
    `Idempotency-Key` header (checked when the operation is accepted) and `?dry_run`."""

    pool: asyncpg.Pool
    principal: Principal
    source: str
    idempotency_key: str | None
    dry_run: bool


def _dry_run(value: str | None) -> bool:
    """`?dry_run` as FastAPI reads a boolean query parameter, with the same error."""
    if value is None:
        return False
    try:
        return _BOOLEAN.validate_python(value)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("query", "dry_run")} for error in exc.errors()]
        ) from None


def mutation(required: str) -> Any:
    """The dependency of a route that accepts operations, for callers with `required` role."""

    async def read(request: Request) -> Mutation:
        return Mutation(
            await get_pool(request),
            await _authorized(request, required),
            await get_source(request),
            request.headers.get("idempotency-key"),
            _dry_run(request.query_params.get("dry_run")),
        )

    # Read from the request above rather than declared; `PrefixedRoute` lists them in the API
    # reference as FastAPI would.
    read.openapi_parameters = (  # type: ignore[attr-defined]
        {
            "name": "dry_run",
            "in": "query",
            "required": False,
            "schema": {
                "type": "boolean",
                "default": False,
                "title": "Dry Run",
                "description": DRY_RUN,
            },
            "description": DRY_RUN,
        },
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "schema": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "title": "Idempotency-Key",
                "description": IDEMPOTENCY_KEY,
            },
            "description": IDEMPOTENCY_KEY,
        },
    )
    return Depends(read)


Pool = Annotated[asyncpg.Pool, Depends(get_pool)]
Broadcaster = Annotated[EventBroadcaster, Depends(get_broadcaster)]
Source = Annotated[str, Depends(get_source)]
Viewer = Annotated[Principal, role("viewer")]
Operator = Annotated[Principal, role("operator")]
Admin = Annotated[Principal, role("admin")]
OperatorMutation = Annotated[Mutation, mutation("operator")]
AdminMutation = Annotated[Mutation, mutation("admin")]
