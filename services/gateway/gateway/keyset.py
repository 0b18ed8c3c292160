"""One keyset page of a table: the rows after a key, in the key's order, and how many rows the
list has. Every REST list kept in PostgreSQL reads its pages through `page`, each with an index
whose leading columns are the list's filter and key (the primary key, or migration 0019's).

The rows come LIMIT limit + 1: one more than the page says a next page follows
(gateway/pages.py `send` keeps the page and names the token of the next).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg


async def page(
    conn: asyncpg.Connection,
    table: str,
    key: Sequence[str],
    after: Sequence[Any] | None,
    limit: int,
    *,
    columns: str = "*",
    where: str = "TRUE",
    args: Sequence[Any] = (),
    descending: bool = False,
) -> tuple[list[asyncpg.Record], int]:
    """The rows of `table` matching `where` (its parameters `args`, numbered from $1) whose
    `key` columns come after `after` (None: from the first), ordered by `key` (newest first
    when `descending`), at most limit + 1; and how many rows match `where` in all.

    `table`, `columns`, `where` and `key` are the caller's SQL, never a client's text: what a
    client sends travels only in `args` and `after`.
    """
    total: int = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE {where}", *args)
    params = list(args)
    found = where
    if after is not None:
        if len(after) != len(key):
            raise ValueError(f"a key of {len(key)} columns, not {len(after)}")
        holders = ", ".join(f"${len(params) + i}" for i in range(1, len(key) + 1))
        found += f" AND ({', '.join(key)}) {'<' if descending else '>'} ({holders})"
        params += after
    order = ", ".join(f"{k} DESC" if descending else k for k in key)
    rows = await conn.fetch(
        f"SELECT {columns} FROM {table} WHERE {found} ORDER BY {order} LIMIT ${len(params) + 1}",
        *params,
        limit + 1,
    )
    return list(rows), total
