"""Versioned migrations: `python -m shared.migrate` applies every new `NNNN_*.sql` in order.

Each file runs in its own transaction and is recorded in `schema_migrations`; an advisory lock
makes concurrent migrate steps (several replicas starting at once) safe.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import asyncpg

from shared.config import get_settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
_LOCK_KEY = 0x4879_7065_7270  # "Hyperp"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files() -> list[tuple[int, Path]]:
    found = []
    for path in sorted(MIGRATIONS_DIR.iterdir()):
        match = _NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    versions = [v for v, _ in found]
    if len(versions) != len(set(versions)):
        raise RuntimeError(f"duplicate migration versions in {MIGRATIONS_DIR}")
    return found


async def migrate(dsn: str) -> list[int]:
    """Apply pending migrations; return the versions applied now."""
    conn = await asyncpg.connect(dsn)
    applied_now: list[int] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for version, path in migration_files():
            if version in done:
                continue
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    version,
                    path.name,
                )
            applied_now.append(version)
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()
    return applied_now


def main() -> None:
    applied = asyncio.run(migrate(get_settings().database_url))
    print(f"migrations applied: {applied or 'none (up to date)'}", file=sys.stderr)


if __name__ == "__main__":
    main()
