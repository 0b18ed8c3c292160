"""Migrations apply once, in order; the audit log refuses to be rewritten."""

from __future__ import annotations

import asyncpg
import pytest

from shared.migrate import migrate, migration_files


async def test_migrating_again_applies_nothing(database_url: str) -> None:
    assert await migrate(database_url) == []
    conn = await asyncpg.connect(database_url)
    try:
        applied = [
            r["version"]
            for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
        ]
    finally:
        await conn.close()
    assert applied == [v for v, _ in migration_files()]


async def test_the_event_log_and_so_the_audit_log_is_append_only(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO events (event_id, type, subject, principal, source, payload, occurred_at)"
            " VALUES (gen_random_uuid(), 'T', 'evt.t.t', 'alice', 'rest', '{}', now())"
        )
        for statement in (
            "UPDATE events SET principal = 'mallory'",
            "UPDATE audit_log SET principal = 'mallory'",
            "DELETE FROM events",
            "DELETE FROM audit_log",
            "TRUNCATE events",
        ):
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await conn.execute(statement)
        assert await conn.fetchval("SELECT principal FROM audit_log") == "alice"
        assert await conn.fetchval("SELECT source FROM audit_log") == "rest"
