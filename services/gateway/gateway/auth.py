"""Bearer tokens (stored as SHA-256 hashes) with roles viewer < operator < admin."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import asyncpg

from gateway.errors import ApiError

if TYPE_CHECKING:
    from gateway.oidc import OidcVerifier

ROLES = ("viewer", "operator", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}
SOURCES = frozenset({"ui", "rest", "mcp", "cli"})
_CACHE_SECONDS = 5.0


@dataclass(frozen=True)
class Principal:
    name: str
    role: str

    def allows(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return "hp_" + secrets.token_urlsafe(32)


async def store_token(conn: asyncpg.Connection, name: str, role: str, token: str) -> None:
    """Create or replace the token called `name` (only its hash is kept)."""
    if role not in RANK:
        raise ValueError(f"role must be one of {ROLES}")
    await conn.execute(
        "INSERT INTO api_tokens (id, name, token_hash, role) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (name) DO UPDATE SET token_hash = $3, role = $4, revoked_at = NULL",
        uuid.uuid4(),
        name,
        hash_token(token),
        role,
    )


class TokenVerifier:
    """Looks tokens up by hash, with a short cache so a revoke takes effect within seconds.

    With OIDC configured, a JWT is verified against the issuer instead.
    """

    def __init__(self, pool: asyncpg.Pool, oidc: OidcVerifier | None = None) -> None:
        self.pool = pool
        self.oidc = oidc
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self._lookups: dict[str, asyncio.Future[Principal | None]] = {}

    async def _lookup(self, digest: str) -> Principal | None:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT name, role FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
                digest,
            )
        principal = Principal(row["name"], row["role"]) if row else None
        self._cache[digest] = (time.monotonic(), principal)
        return principal

    async def verify(self, authorization: str | None) -> Principal:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise ApiError(
                401,
                "unauthorized",
                "this request needs a bearer token",
                hint="send 'Authorization: Bearer <token>' (the token `hyperpilot up` printed)",
            )
        token = authorization[7:].strip()
        if self.oidc is not None and looks_like_jwt(token):
            return await self.oidc.verify(token)
        digest = hash_token(token)
        cached = self._cache.get(digest)
        if cached is not None and time.monotonic() - cached[0] < _CACHE_SECONDS:
            principal = cached[1]
        else:
            # One lookup per token at a time: requests that arrive while it runs share it.
            pending = self._lookups.get(digest)
            if pending is None:
                pending = asyncio.ensure_future(self._lookup(digest))
                self._lookups[digest] = pending
                pending.add_done_callback(lambda _: self._lookups.pop(digest, None))
            principal = await asyncio.shield(pending)
        if principal is None:
            raise ApiError(
                401,
                "unauthorized",
                "the bearer token is unknown or revoked",
                hint="ask an admin for a token",
            )
        return principal


def require_role(principal: Principal, role: str) -> None:
    if not principal.allows(role):
        raise ApiError(
            403,
            "forbidden",
            f"this action needs the {role} role; token {principal.name!r} has {principal.role}",
            hint=f"use a token with the {role} role",
        )


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")
