"""API tokens: created by an admin, shown once, stored only as a hash, revocable."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path
from pydantic import Field

from gateway.auth import new_token, store_token
from gateway.deps import Admin, Pool, Source
from gateway.errors import ApiError
from gateway.routing import PrefixedRoute
from shared.contracts.spec import Spec

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/tokens", tags=["tokens"])

TOKEN_NAME = r"^[a-z0-9][a-z0-9._-]{0,62}$"


class TokenCreate(Spec):
    name: str = Field(
        pattern=TOKEN_NAME, description="A name for the holder, e.g. mcp-agent or alice"
    )
    role: Literal["viewer", "operator", "admin"] = Field(
        description="viewer reads; operator mutates; admin also deletes"
    )


@router.post(
    "",
    status_code=201,
    summary="Create (or rotate) a token; the token is shown only in this answer",
)
async def create_token(body: TokenCreate, pool: Pool, _: Admin, source: Source) -> dict[str, Any]:
    token = new_token()
    async with pool.acquire() as conn:
        await store_token(conn, body.name, body.role, token)
    return {"name": body.name, "role": body.role, "token": token}


@router.get("", summary="List tokens (names and roles; never the tokens)")
async def list_tokens(pool: Pool, _: Admin) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name, role, created_at, revoked_at FROM api_tokens ORDER BY name"
        )
    return [
        {
            "name": r["name"],
            "role": r["role"],
            "created_at": r["created_at"].isoformat(),
            "revoked_at": r["revoked_at"].isoformat() if r["revoked_at"] else None,
        }
        for r in rows
    ]


@router.delete("/{name}", summary="Revoke a token (takes effect within seconds)")
async def revoke_token(
    name: Annotated[str, Path(pattern=TOKEN_NAME)], pool: Pool, _: Admin, source: Source
) -> dict[str, Any]:
    async with pool.acquire() as conn:
        revoked = await conn.fetchval(
            "UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING name",
            name,
        )
    if revoked is None:
        raise ApiError(404, "not_found", f"no live token named {name}", hint="GET /api/v1/tokens")
    return {"name": name, "revoked": True}
