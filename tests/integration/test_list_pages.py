"""The REST lists of jobs, clusters, endpoints and operations on real PostgreSQL, a page at a time: walking
the X-Next-Page-Token headers returns every row once in order, even with rows inserted between
two pages; a token altered, of another list or not a token at all is a 400 naming page_token;
and the page reads use the indexes of migration 0019 (EXPLAIN), not a sort of the whole table.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from fastapi import Response

from gateway.auth import Principal
from gateway.errors import ApiError
from gateway.pages import NEXT_HEADER, TOTAL_HEADER
from gateway.routes.clusters import list_clusters
from gateway.routes.endpoints import list_endpoints
from gateway.routes.jobs import list_jobs
from gateway.routes.operations import list_operations
from shared import pages

VIEWER = Principal(name="viewer", role="viewer")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _seed_jobs(pool: asyncpg.Pool, cluster: str, count: int, start: int = 0) -> None:
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO jobs (cluster, name, recipe, api_version, kind, spec, status, created_at)"
            " VALUES ($1, $2, 'pytorch', 'sagemaker.amazonaws.com/v1', 'HyperPodPyTorchJob',"
            " '{}', 'succeeded', $3)",
            # Two jobs share each instant: the name orders them.
            [
                (cluster, f"job-{i:05d}", T0 + timedelta(seconds=i // 2))
                for i in range(start, start + count)
            ],
        )


async def _walk(call: Any, **query: Any) -> tuple[list[dict[str, Any]], list[int]]:
    seen: list[dict[str, Any]] = []
    totals: list[int] = []
    token: str | None = None
    while True:
        response = Response()
        seen += await call(response=response, page_token=token, **query)
        totals.append(int(response.headers[TOTAL_HEADER]))
        token = response.headers.get(NEXT_HEADER)
        if token is None:
            return seen, totals


async def test_jobs_come_in_pages_in_order_once_each(pool: asyncpg.Pool) -> None:
    await _seed_jobs(pool, "c1", 250)
    await _seed_jobs(pool, "c2", 5)

    async def call(**query: Any) -> list[dict[str, Any]]:
        return await list_jobs(name="c1", pool=pool, _=VIEWER, **query)

    seen, totals = await _walk(call, limit=100)
    assert [j["name"] for j in seen] == [f"job-{i:05d}" for i in range(250)]
    assert totals == [250, 250, 250]


async def test_a_job_added_between_two_pages_is_neither_repeated_nor_skipped(
    pool: asyncpg.Pool,
) -> None:
    await _seed_jobs(pool, "c1", 30)
    first = Response()
    page = await list_jobs(name="c1", pool=pool, _=VIEWER, response=first, limit=10)
    await _seed_jobs(pool, "c1", 5, start=30)  # newer: they come at the end
    async with pool.acquire() as conn:  # an older one, before the page already read: not again
        await conn.execute("DELETE FROM jobs WHERE name = 'job-00003'")
    rest: list[dict[str, Any]] = []
    token = first.headers[NEXT_HEADER]
    while token:
        response = Response()
        rest += await list_jobs(
            name="c1", pool=pool, _=VIEWER, response=response, limit=10, page_token=token
        )
        token = response.headers.get(NEXT_HEADER, "")
    names = [j["name"] for j in page + rest]
    assert names == [f"job-{i:05d}" for i in range(35)]


async def test_clusters_and_endpoints_page_the_same_way(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO clusters (name, region, status, managed, created_at)"
            " VALUES ($1, 'us-east-1', 'active', true, $2)",
            [(f"cluster-{i:02d}", T0 + timedelta(seconds=i // 3)) for i in range(50)],
        )
        await conn.executemany(
            "INSERT INTO endpoints (cluster, name, kind, spec, status) VALUES ($1, $2,"
            " 'container', '{}', 'available')",
            [(f"cluster-{i % 3:02d}", f"ep-{i:03d}") for i in range(40)],
        )

    async def clusters(**query: Any) -> list[dict[str, Any]]:
        return await list_clusters(pool=pool, _=VIEWER, **query)

    seen, totals = await _walk(clusters, limit=7)
    assert [c["name"] for c in seen] == [f"cluster-{i:02d}" for i in range(50)]
    assert set(totals) == {50} and len(totals) == 8

    async def endpoints(**query: Any) -> list[dict[str, Any]]:
        return await list_endpoints(pool=pool, _=VIEWER, **query)

    every, totals = await _walk(endpoints, cluster="*", limit=6)
    assert [(e["cluster"], e["name"]) for e in every] == sorted(
        (f"cluster-{i % 3:02d}", f"ep-{i:03d}") for i in range(40)
    )
    assert set(totals) == {40}
    one, totals = await _walk(endpoints, cluster="cluster-01", limit=4)
    assert [e["name"] for e in one] == sorted(f"ep-{i:03d}" for i in range(40) if i % 3 == 1)
    assert set(totals) == {13}


@pytest.mark.parametrize(
    "token",
    [
        "not-a-token",
        pages.encode("clusters", ["2026-01-01T00:00:00+00:00", "c1"]),  # another list's
        pages.encode("jobs", ["yesterday", "job-1"]),  # not a timestamp
        pages.encode("jobs", ["2026-01-01T00:00:00", "job-1"]),  # no time zone
        pages.encode("jobs", ["2026-01-01T00:00:00+00:00"]),  # a key too short
    ],
)
async def test_a_token_this_list_did_not_give_is_a_400_naming_page_token(
    pool: asyncpg.Pool, token: str
) -> None:
    with pytest.raises(ApiError) as refused:
        await list_jobs(
            name="c1", pool=pool, _=VIEWER, response=Response(), limit=10, page_token=token
        )
    assert refused.value.status == 400
    assert refused.value.code == "invalid_page_token"
    assert refused.value.fields[0]["field"] == "page_token"
    assert "page_token" in (refused.value.hint or "")


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _plan_nodes(child)
    return found


async def _plan(conn: asyncpg.Connection, sql: str, *args: Any) -> list[dict[str, Any]]:
    found = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *args)
    plan = json.loads(found) if isinstance(found, str) else found  # the pool decodes json
    return _plan_nodes(plan[0]["Plan"])


async def test_the_page_reads_walk_the_indexes(pool: asyncpg.Pool) -> None:
    await _seed_jobs(pool, "c1", 10_000)
    await _seed_jobs(pool, "c2", 2_000)
    async with pool.acquire() as conn:
        await conn.execute("ANALYZE jobs")
        later = await _plan(
            conn,
            "SELECT * FROM jobs WHERE cluster = $1 AND (created_at, name) > ($2, $3)"
            " ORDER BY created_at, name LIMIT 101",
            "c1",
            T0 + timedelta(seconds=4000),
            "job-08000",
        )
        first = await _plan(
            conn,
            "SELECT * FROM jobs WHERE cluster = $1 ORDER BY created_at, name LIMIT 101",
            "c1",
        )
        # A few clusters fit one block of the heap, which the planner reads whole: with the
        # other scans off, the plan shows the index serves the keyset read and its order.
        await conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        clusters = await _plan(
            conn,
            "SELECT * FROM clusters WHERE (created_at, name) > ($1, $2)"
            " ORDER BY created_at, name LIMIT 101",
            T0,
            "c1",
        )
    for plan in (first, later):
        assert any(n.get("Index Name") == "jobs_by_created" for n in plan), plan
        assert not any(n["Node Type"] == "Sort" for n in plan), plan
    assert "Index Cond" in next(n for n in later if n.get("Index Name") == "jobs_by_created")
    assert any(n.get("Index Name") == "clusters_by_created" for n in clusters), clusters
    assert not any(n["Node Type"] == "Sort" for n in clusters), clusters


async def test_active_and_recipe_keep_only_those_jobs_page_after_page(pool: asyncpg.Pool) -> None:
    await _seed_jobs(pool, "c1", 60)
    async with pool.acquire() as conn:
        await conn.execute(
            "UPDATE jobs SET status = 'running' WHERE cluster = 'c1' AND right(name, 1) IN ('0', '5')"
        )
        await conn.execute(
            "UPDATE jobs SET recipe = 'model-download' WHERE cluster = 'c1'"
            " AND right(name, 1) IN ('5', '7')"
        )

    async def call(**query: Any) -> list[dict[str, Any]]:
        return await list_jobs(name="c1", pool=pool, _=VIEWER, **query)

    running, totals = await _walk(call, limit=5, active=True)
    assert [j["name"] for j in running] == [f"job-{i:05d}" for i in range(60) if i % 5 == 0]
    assert set(totals) == {12} and len(totals) == 3
    downloads, totals = await _walk(call, limit=4, recipe="model-download")
    assert [j["name"] for j in downloads] == [f"job-{i:05d}" for i in range(60) if i % 10 in (5, 7)]
    assert set(totals) == {12}
    both, _ = await _walk(call, limit=100, active=True, recipe="model-download")
    assert [j["name"] for j in both] == [f"job-{i:05d}" for i in range(60) if i % 10 == 5]


async def test_operations_page_newest_first_by_token_and_still_by_offset(
    pool: asyncpg.Pool,
) -> None:
    ids = [uuid.UUID(int=i + 1) for i in range(45)]
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO operations (id, kind, domain, target_type, target_id, request,"
            " command_type, command, principal, request_hash, status, created_at)"
            " VALUES ($1, 'storage.create', 'storage', 'bucket', $2, '{}', 'CreateBucket', '{}',"
            " 'admin', 'h', $3, $4)",
            # three operations share each instant: the id orders them
            [
                (op, f"b{i}", "failed" if i % 2 else "succeeded", T0 + timedelta(seconds=i // 3))
                for i, op in enumerate(ids)
            ],
        )

    async def call(status_: str | None = None, **query: Any) -> list[dict[str, Any]]:
        answer = await list_operations(pool=pool, _=VIEWER, status=status_, kind=None, **query)
        return list(answer["items"])

    newest_first = sorted(ids, key=lambda op: (ids.index(op) // 3, op.int), reverse=True)
    seen, totals = await _walk(call, limit=10, target_id=None, offset=0)
    assert [o["id"] for o in seen] == [str(op) for op in newest_first]
    assert set(totals) == {45} and len(totals) == 5
    failed, totals = await _walk(call, limit=4, target_id=None, offset=0, status_="failed")
    assert len(failed) == 22 and set(totals) == {22}
    assert all(o["status"] == "failed" for o in failed)
    by_offset = await call(response=Response(), limit=10, target_id=None, offset=40)
    assert [o["id"] for o in by_offset] == [str(op) for op in newest_first[40:]]
    first = Response()
    await call(response=first, limit=10, target_id=None, offset=0)
    token = first.headers[NEXT_HEADER]
    with pytest.raises(ApiError) as refused:
        await call(response=Response(), limit=10, target_id=None, offset=5, page_token=token)
    assert refused.value.status == 400
    assert refused.value.fields[0]["field"] == "offset"
