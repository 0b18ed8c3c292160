"""Token administration on real PostgreSQL: the last live admin token survives concurrent
revokes, every change is an event naming the token (never its value or hash), and a revocation
reaches a TokenVerifier at once: by its notification, or by the re-check of open streams."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from gateway.auth import (
    LastAdminToken,
    Principal,
    TokenVerifier,
    hash_token,
    new_token,
    revoke_token,
    store_token,
)
from gateway.stream import EventBroadcaster


async def _live_admins(pool: asyncpg.Pool) -> list[str]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT name FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL ORDER BY name"
        )
    return [r["name"] for r in rows]


async def _revoke(pool: asyncpg.Pool, name: str) -> str:
    async with pool.acquire() as conn:
        try:
            await revoke_token(conn, name, principal="tester", source="rest")
        except LastAdminToken:
            return "refused"
    return "revoked"


async def test_concurrent_revokes_of_the_last_two_admin_tokens_leave_one(
    pool: asyncpg.Pool,
) -> None:
    for round_ in range(10):
        async with pool.acquire() as conn:
            for name in (f"a{round_}", f"b{round_}"):
                await store_token(conn, name, "admin", new_token())
        survivors = await _live_admins(pool)
        others = [n for n in survivors if n not in (f"a{round_}", f"b{round_}")]
        for name in others:  # the survivor of the round before
            assert await _revoke(pool, name) == "revoked"
        outcomes = await asyncio.gather(_revoke(pool, f"a{round_}"), _revoke(pool, f"b{round_}"))
        assert sorted(outcomes) == ["refused", "revoked"], (round_, outcomes)
        assert len(await _live_admins(pool)) == 1


async def test_the_last_admin_token_is_not_rotated_down_and_changes_are_events(
    pool: asyncpg.Pool,
) -> None:
    first, second = new_token(), new_token()
    async with pool.acquire() as conn:
        await store_token(conn, "root", "admin", first, principal="boot", source="system")
        # the same token again (the bootstrap token at a restart): nothing changes
        same = await store_token(conn, "root", "admin", first)
        assert same.ended is None
        with pytest.raises(LastAdminToken):
            await store_token(conn, "root", "operator", second, principal="root", source="cli")
        rotated = await store_token(conn, "root", "admin", second, principal="root", source="cli")
        assert rotated.ended == hash_token(first)
        await store_token(conn, "ops", "operator", new_token(), principal="root", source="ui")
        await store_token(conn, "ops", "viewer", new_token(), principal="root", source="ui")
        await revoke_token(conn, "ops", principal="root", source="mcp")
        events = await conn.fetch(
            "SELECT type, subject, principal, payload::text AS payload FROM events ORDER BY seq"
        )
        queued = await conn.fetch("SELECT body FROM outbox ORDER BY id")
    assert [(e["type"], e["principal"]) for e in events] == [
        ("TokenCreated", "boot"),
        ("TokenRotated", "root"),
        ("TokenCreated", "root"),
        ("TokenRotated", "root"),
        ("TokenRevoked", "root"),
    ]
    assert {e["subject"] for e in events} == {
        "evt.auth.token_created",
        "evt.auth.token_rotated",
        "evt.auth.token_revoked",
    }
    assert '"previous_role": "operator"' in events[3]["payload"]
    assert '"role": "viewer"' in events[3]["payload"]
    text = "".join(e["payload"] for e in events) + "".join(q["body"].decode() for q in queued)
    for secret in (first, second, hash_token(first), hash_token(second)):
        assert secret not in text


async def _verifier_with_a_stream(
    pool: asyncpg.Pool, token: str
) -> tuple[TokenVerifier, Principal]:
    verifier = TokenVerifier(pool)
    principal = await verifier.verify(f"Bearer {token}")
    assert principal.digest == hash_token(token)
    return verifier, principal


async def test_a_revocation_notified_ends_streams_and_empties_the_cache_at_once(
    pool: asyncpg.Pool, database_url: str
) -> None:
    token = new_token()
    async with pool.acquire() as conn:
        await store_token(conn, "root", "admin", new_token())
        await store_token(conn, "watcher", "viewer", token)
    verifier, principal = await _verifier_with_a_stream(pool, token)
    broadcaster = EventBroadcaster(pool, database_url)
    verifier.follow(broadcaster)
    listening = asyncio.create_task(broadcaster.run())
    try:
        await asyncio.sleep(0.3)
        with verifier.watch(principal) as revoked:
            started = asyncio.get_running_loop().time()
            async with pool.acquire() as conn:  # as another gateway would
                await revoke_token(conn, "watcher", principal="root", source="rest")
            await asyncio.wait_for(asyncio.shield(revoked), 0.5)
            assert asyncio.get_running_loop().time() - started < 0.5
        with pytest.raises(Exception, match="unknown or revoked"):
            await verifier.verify(f"Bearer {token}")  # cached a moment ago: dropped
    finally:
        listening.cancel()


async def test_without_a_notification_open_streams_end_within_the_recheck(
    pool: asyncpg.Pool,
) -> None:
    token = new_token()
    async with pool.acquire() as conn:
        await store_token(conn, "watcher", "viewer", token)
    verifier, principal = await _verifier_with_a_stream(pool, token)
    with verifier.watch(principal) as revoked:
        async with pool.acquire() as conn:  # no notification reaches this verifier
            await conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE name = 'watcher'")
        await asyncio.wait_for(asyncio.shield(revoked), 2.0)
