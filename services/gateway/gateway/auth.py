"""Bearer tokens (stored as SHA-256 hashes) with roles viewer < operator < admin.

Token administration (create, rotate, revoke) runs in one transaction under one advisory lock,
with its audit event (`evt.auth.*`: the token's name and role, never the token or its hash):
two concurrent changes are serialised, so the rule "the last active admin token cannot be
revoked, nor rotated to a lower role" holds however they interleave.

A revoke, or a rotation (which replaces the token), notifies `token_revoked` with the old
token's digest at commit. Every gateway listens on it (on the live stream's LISTEN connection):
it drops the token from its cache and ends the streams opened with it (the SSE event stream,
the log WebSocket). While such streams are open, their tokens are also re-read every
RECHECK_SECONDS, for a notification missed while the listener reconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import asyncpg

from gateway.errors import ApiError
from shared.contracts.events import Event
from shared.logging import get_logger
from shared.operations import append_event

if TYPE_CHECKING:
    from gateway.oidc import OidcVerifier

log = get_logger("gateway.auth")

ROLES = ("viewer", "operator", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}
SOURCES = frozenset({"ui", "rest", "mcp", "cli"})
_CACHE_SECONDS = 5.0
RECHECK_SECONDS = 1.0  # how often the tokens of open streams are re-read
REVOKED_CHANNEL = "token_revoked"  # NOTIFY payload: the digest of a token that stopped working
_TOKENS_LOCK = 0x546F_6B65_6E73  # "Tokens": serialises token administration
DOMAIN = "auth"  # token events are evt.auth.<what>


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    # The digest of the API token it authenticated with (None for an OIDC principal): what a
    # revocation names.
    digest: str | None = field(default=None, compare=False, repr=False)

    def allows(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


class TokenCreated(Event):
    """A token was issued under a name that had no live token."""

    what = "token_created"
    name: str
    role: str


class TokenRotated(Event):
    """A live token was replaced by a new one under the same name (the old one stops working);
    `previous_role` differs from `role` when the rotation changed the role."""

    what = "token_rotated"
    name: str
    role: str
    previous_role: str


class TokenRevoked(Event):
    what = "token_revoked"
    name: str
    role: str


class LastAdminToken(Exception):
    """The change would leave no active admin token."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class TokenChange:
    """What a token change did: `ended` is the digest of the token that stopped working (a
    revoke, or a rotation of a live token), `previous_role` the replaced live token's role."""

    name: str
    role: str
    previous_role: str | None = None
    ended: str | None = None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return "hp_" + secrets.token_urlsafe(32)


async def _lock(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock($1)", _TOKENS_LOCK)


async def _keep_an_admin(conn: asyncpg.Connection, name: str) -> None:
    """Refuses a change that takes `name`, a live admin token, away from the admins when no
    other live admin token exists (under the tokens lock)."""
    others = await conn.fetchval(
        "SELECT count(*) FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL"
        " AND name <> $1",
        name,
    )
    if not others:
        raise LastAdminToken(name)


async def _ended(conn: asyncpg.Connection, digest: str) -> None:
    await conn.execute("SELECT pg_notify($1, $2)", REVOKED_CHANNEL, digest)


async def store_token(
    conn: asyncpg.Connection,
    name: str,
    role: str,
    token: str,
    *,
    principal: str = "system",
    source: str = "system",
) -> TokenChange:
    """Create or replace the token called `name` (only its hash is kept), and record it.

    Storing the live token it already is (the bootstrap admin token at each start) changes and
    records nothing. Raises LastAdminToken rather than rotate the last live admin token to a
    lower role."""
    if role not in RANK:
        raise ValueError(f"role must be one of {ROLES}")
    digest = hash_token(token)
    async with conn.transaction():
        await _lock(conn)
        old = await conn.fetchrow(
            "SELECT role, token_hash, revoked_at FROM api_tokens WHERE name = $1", name
        )
        live = old is not None and old["revoked_at"] is None
        if live and old["token_hash"] == digest and old["role"] == role:
            return TokenChange(name, role, role)
        if live and old["role"] == "admin" and role != "admin":
            await _keep_an_admin(conn, name)
        await conn.execute(
            "INSERT INTO api_tokens (id, name, token_hash, role) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (name) DO UPDATE SET token_hash = $3, role = $4, revoked_at = NULL,"
            " created_at = now()",
            uuid.uuid4(),
            name,
            digest,
            role,
        )
        event: Event
        if live:
            # The old token stops working (or, the same token stored again with another role,
            # must be read again): streams opened with it end, caches drop it.
            await _ended(conn, old["token_hash"])
            change = TokenChange(name, role, old["role"], old["token_hash"])
            event = TokenRotated(name=name, role=role, previous_role=old["role"])
        else:
            change = TokenChange(name, role)
            event = TokenCreated(name=name, role=role)
        await append_event(
            conn, operation_id=None, domain=DOMAIN, event=event, principal=principal, source=source
        )
    return change


async def revoke_token(
    conn: asyncpg.Connection, name: str, *, principal: str, source: str
) -> TokenChange | None:
    """Revoke the live token called `name` and record it; None when there is none. Raises
    LastAdminToken rather than revoke the last live admin token."""
    async with conn.transaction():
        await _lock(conn)
        row = await conn.fetchrow(
            "SELECT role, token_hash FROM api_tokens WHERE name = $1 AND revoked_at IS NULL", name
        )
        if row is None:
            return None
        if row["role"] == "admin":
            await _keep_an_admin(conn, name)
        await conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE name = $1", name)
        await _ended(conn, row["token_hash"])
        await append_event(
            conn,
            operation_id=None,
            domain=DOMAIN,
            event=TokenRevoked(name=name, role=row["role"]),
            principal=principal,
            source=source,
        )
    return TokenChange(name, row["role"], row["role"], row["token_hash"])


class Listener(Protocol):
    """What TokenVerifier.follow listens with (the live stream's EventBroadcaster)."""

    def listen(self, channel: str, noticed: Callable[[str | None], None]) -> None: ...


class TokenVerifier:
    """Looks tokens up by hash, with a short cache; a revocation drops a token from it at once.

    With OIDC configured, a JWT is verified against the issuer instead.
    """

    def __init__(self, pool: asyncpg.Pool, oidc: OidcVerifier | None = None) -> None:
        self.pool = pool
        self.oidc = oidc
        self.following = False
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self._lookups: dict[str, asyncio.Future[Principal | None]] = {}
        self._epoch = 0  # counts revocations: a lookup that overlapped one is not cached
        self._watched: dict[str, set[asyncio.Future[None]]] = {}
        self._recheck: asyncio.Task[None] | None = None

    def follow(self, listener: Listener) -> None:
        """Follow revocations notified on `listener`'s connection (from any gateway)."""
        if not self.following:
            self.following = True
            listener.listen(REVOKED_CHANNEL, self.noticed)

    def noticed(self, digest: str | None) -> None:
        """A notification on REVOKED_CHANNEL; None: listening (re)started, and revocations
        notified meanwhile may have been missed, so nothing cached is trusted."""
        if digest is None:
            self._epoch += 1
            self._cache.clear()
        else:
            self.ended(digest.strip())

    def ended(self, digest: str) -> None:
        """The token with this digest no longer works: forget it, end the streams opened with it."""
        self._epoch += 1
        self._cache.pop(digest, None)
        self._lookups.pop(digest, None)  # a lookup under way may have read the row before
        for stream in self._watched.pop(digest, ()):
            if not stream.done():
                stream.set_result(None)

    @contextlib.contextmanager
    def watch(self, principal: Principal) -> Iterator[asyncio.Future[None]]:
        """For a long-lived stream opened by `principal`: a future done when its token is
        revoked or replaced. (An OIDC principal's is never done: a JWT is not revoked here.)"""
        stream: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        digest = principal.digest
        if digest is None:
            yield stream
            return
        self._watched.setdefault(digest, set()).add(stream)
        if self._recheck is None or self._recheck.done():
            self._recheck = asyncio.create_task(self._recheck_watched(), name="token-recheck")
        try:
            yield stream
        finally:
            streams = self._watched.get(digest)
            if streams is not None:
                streams.discard(stream)
                if not streams:
                    del self._watched[digest]

    async def close(self) -> None:
        """Stop the re-check of open streams (at shutdown)."""
        if self._recheck is not None:
            self._recheck.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recheck

    async def _recheck_watched(self) -> None:
        """While streams are open: every RECHECK_SECONDS, ends those whose token stopped
        working without this gateway noticing (a notification missed)."""
        while self._watched:
            await asyncio.sleep(RECHECK_SECONDS)
            digests = list(self._watched)
            if not digests:
                return
            try:
                async with self.pool.acquire() as conn:
                    rows = await conn.fetch(
                        "SELECT token_hash FROM api_tokens WHERE token_hash = ANY($1::text[])"
                        " AND revoked_at IS NULL",
                        digests,
                    )
            except Exception as exc:
                log.warning("cannot re-check the tokens of open streams", error=repr(exc))
                continue
            live = {r["token_hash"] for r in rows}
            for digest in digests:
                if digest not in live:
                    self.ended(digest)

    async def _lookup(self, digest: str) -> Principal | None:
        epoch = self._epoch
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT name, role FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
                digest,
            )
        principal = Principal(row["name"], row["role"], digest) if row else None
        if self._epoch == epoch:
            # Not when a revocation arrived meanwhile: the row read may predate it.
            self._cache[digest] = (time.monotonic(), principal)
        return principal

    def _looked_up(self, digest: str) -> Callable[[asyncio.Future[Principal | None]], None]:
        def done(lookup: asyncio.Future[Principal | None]) -> None:
            if self._lookups.get(digest) is lookup:
                del self._lookups[digest]

        return done

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
                pending.add_done_callback(self._looked_up(digest))
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
