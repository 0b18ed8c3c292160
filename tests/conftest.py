"""Fixtures: real PostgreSQL and NATS on private sockets/free ports, the simulated AWS."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hyperpilot.infra import NatsServer, Postgres, start_nats, start_postgres
from shared.migrate import migrate

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

TEMPLATE = "hp_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    # A directory of its own, not pytest's numbered temp dirs (pruned by concurrent sessions).
    root = Path(tempfile.mkdtemp(prefix="hp-pg-"))
    server = start_postgres(root / "data")
    dsn = server.create_database(TEMPLATE)
    asyncio.run(migrate(dsn))
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def database_url(postgres: Postgres) -> str:
    """A fresh, migrated database for one test."""
    return postgres.create_database(f"t{os.getpid()}_{next(_counter)}", template=TEMPLATE)


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = start_nats(tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[object]:
    from shared.db import create_pool

    p = await create_pool(database_url, min_size=1, max_size=10)
    yield p
    await p.close()
