"""The asyncpg pool every process uses, with JSON codecs and the database-down error."""

from __future__ import annotations

import os
import secrets
from typing import Any

import asyncpg
import orjson

from shared.errors import DatabaseUnavailable

# Connection errors that mean "PostgreSQL is not reachable right now", not "bad SQL".
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ConnectionError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.ConnectionFailureError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InterfaceError,
    # A connection the server dropped mid-operation (PostgreSQL killed) can refuse the next
    # statement before asyncpg has noticed the loss: "cannot switch to state ...; another
    # operation is in progress". Nothing was sent, so it is the database being down too.
    asyncpg.exceptions.InternalClientError,
)


# Names this process's PostgreSQL sessions (their application_name): a row it queues in the
# outbox wakes its own relay only (see shared/outbox.py).
PROCESS_TAG = f"hyperpilot:{os.getpid()}:{secrets.token_hex(4)}"
_SERVER_SETTINGS = {"application_name": PROCESS_TAG}


def _encode_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    # orjson: every event, operation and stage row passes through these codecs.
    for name in ("jsonb", "json"):
        await conn.set_type_codec(
            name, encoder=_encode_json, decoder=orjson.loads, schema="pg_catalog"
        )


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """A pooled connection goes back to the pool without asyncpg's reset query (a round trip
    on every release): pooled connections keep no session state to undo, since LISTEN, session
    advisory locks and settings live on dedicated connections (`connect`). An open transaction
    is still rolled back by the pool before this runs."""


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 20) -> asyncpg.Pool:
    try:
        pool = await asyncpg.create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            init=_init_connection,
            command_timeout=30,
            server_settings=_SERVER_SETTINGS,
            reset=_keep_session,
        )
    except CONNECTION_ERRORS as exc:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    """A dedicated connection (LISTEN, session advisory locks), with the same codecs."""
    try:
        conn: asyncpg.Connection = await asyncpg.connect(dsn, server_settings=_SERVER_SETTINGS)
    except CONNECTION_ERRORS as exc:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
    await _init_connection(conn)
    return conn


def record_to_dict(record: Any) -> dict[str, Any]:
    return dict(record.items()) if record is not None else {}
