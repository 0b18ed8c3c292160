"""API tokens: created by an admin, shown once, stored only as a hash, revocable.

Creating, rotating (creating under a name that has a live token) and revoking are recorded in the
event log and the audit log (`evt.auth.token_*`: who did it, from which face, the token's name
and role, never the token or its hash). The last live admin token can be neither revoked nor
rotated to a lower role. A revoked or replaced token stops working at once, its open streams
included.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request, Response
from pydantic import Field

from gateway import auth, keyset, pages
from gateway.auth import LastAdminToken, new_token, store_token
from gateway.deps import Admin, Pool, Source, token_verifier
from gateway.errors import ApiError
from gateway.routes.models import errors
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


def _last_admin(request: Request, name: str, change: str, verb: str) -> ApiError:
    oidc = token_verifier(request.app).oidc is not None
    return ApiError(
        409,
        "conflict",
        f"token {name} is the last live admin token: {change} would leave no admin token"
        + (
            " (admins who sign in through OIDC are not counted: this rule is about tokens only)"
            if oidc
            else ""
        ),
        hint=f"create another admin token first (POST /api/v1/tokens with role admin), then {verb}"
        " this one",
    )


@router.post(
    "",
    status_code=201,
    summary="Create (or rotate) a token; the token is shown only in this answer",
)
async def create_token(
    body: TokenCreate, request: Request, pool: Pool, principal: Admin, source: Source
) -> dict[str, Any]:
    token = new_token()
    try:
        async with pool.acquire() as conn:
            change = await store_token(
                conn, body.name, body.role, token, principal=principal.name, source=source
            )
    except LastAdminToken as exc:
        raise _last_admin(request, body.name, f"rotating it to {body.role}", "rotate") from exc
    if change.ended is not None:
        token_verifier(request.app).ended(change.ended)
    return {"name": body.name, "role": body.role, "token": token}


@router.get(
    "",
    response_model=None,
    responses={**pages.paged(), **errors(401, 403, 422), **pages.BAD_TOKEN},
    summary="List tokens (names and roles; never the tokens), by name, a page at a time",
)
async def list_tokens(
    pool: Pool,
    _: Admin,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("tokens", page_token, 1)
    async with pool.acquire() as conn:
        # The unique index of name serves the order.
        rows, total = await keyset.page(
            conn,
            "api_tokens",
            ("name",),
            key,
            limit,
            columns="name, role, created_at, revoked_at",
        )
    page = pages.send(response, "tokens", rows, limit, total, lambda r: (r["name"],))
    return [
        {
            "name": r["name"],
            "role": r["role"],
            "created_at": r["created_at"].isoformat(),
            "revoked_at": r["revoked_at"].isoformat() if r["revoked_at"] else None,
        }
        for r in page
    ]


@router.delete(
    "/{name}", summary="Revoke a token (at once; its open streams end); not the last admin token"
)
async def revoke_token(
    name: Annotated[str, Path(pattern=TOKEN_NAME)],
    request: Request,
    pool: Pool,
    principal: Admin,
    source: Source,
) -> dict[str, Any]:
    try:
        async with pool.acquire() as conn:
            change = await auth.revoke_token(conn, name, principal=principal.name, source=source)
    except LastAdminToken as exc:
        raise _last_admin(request, name, "revoking it", "revoke") from exc
    if change is None:
        raise ApiError(404, "not_found", f"no live token named {name}", hint="GET /api/v1/tokens")
    if change.ended is not None:
        token_verifier(request.app).ended(change.ended)
    return {"name": name, "revoked": True}
