"""The REST lists of jobs, clusters, endpoints, operations, buckets, tokens, dependencies and
instance groups on real PostgreSQL, a page at a time: walking the X-Next-Page-Token headers
returns every row once in order, even with rows inserted between two pages; a token altered, of
another list or not a token at all is a 400 naming page_token; and the page reads use the
indexes of migration 0019 and the primary keys (EXPLAIN), not a sort of the whole table.
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
from gateway.routes.dependencies import list_components
from gateway.routes.endpoints import list_endpoints
from gateway.routes.instance_groups import list_instance_groups
from gateway.routes.jobs import list_jobs
from gateway.routes.operations import list_operations
from gateway.routes.storage import list_buckets
from gateway.routes.tokens import list_tokens
from shared import pages

VIEWER = Principal(name="viewer", role="viewer")
ADMIN = Principal(name="admin", role="admin")
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


async def test_operations_page_newest_first_by_token(
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
    seen, totals = await _walk(call, limit=10, target_id=None)
    assert [o["id"] for o in seen] == [str(op) for op in newest_first]
    assert set(totals) == {45} and len(totals) == 5
    failed, totals = await _walk(call, limit=4, target_id=None, status_="failed")
    assert len(failed) == 22 and set(totals) == {22}
    assert all(o["status"] == "failed" for o in failed)
    # a token of another list is refused, naming page_token
    foreign = pages.encode("jobs", ("2026-01-01T00:00:00+00:00", "x"))
    with pytest.raises(ApiError) as refused:
        await call(response=Response(), limit=10, target_id=None, page_token=foreign)
    assert refused.value.status == 400
    assert refused.value.fields[0]["field"] == "page_token"


async def _seed_lists(pool: asyncpg.Pool) -> None:
    """Two clusters with 23 and 4 components and instance groups, 31 buckets, 17 tokens."""
    async with pool.acquire() as conn:
        await conn.executemany(
            "INSERT INTO clusters (name, region, status, managed) VALUES ($1, 'us-east-1',"
            " 'active', true)",
            [("c1",), ("c2",)],
        )
        for cluster, count in (("c1", 23), ("c2", 4)):
            await conn.executemany(
                "INSERT INTO cluster_components (cluster, component, version, status)"
                " VALUES ($1, $2, '1.0', 'installed')",
                [(cluster, f"component-{i:02d}") for i in reversed(range(count))],
            )
            await conn.executemany(
                "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
                " VALUES ($1, $2, 'ml.g5.8xlarge', 1, '{}', 'InService')",
                [(cluster, f"group-{i:02d}") for i in reversed(range(count))],
            )
        await conn.executemany(
            "INSERT INTO storage_buckets (name, region, status) VALUES ($1, 'us-east-1',"
            " 'available')",
            [(f"bucket-{i:02d}",) for i in reversed(range(31))],
        )
        await conn.executemany(
            "INSERT INTO api_tokens (id, name, token_hash, role) VALUES ($1, $2, $3, 'viewer')",
            [(uuid.uuid4(), f"holder-{i:02d}", f"hash-{i}") for i in reversed(range(17))],
        )


async def test_buckets_tokens_dependencies_and_groups_page_by_name(pool: asyncpg.Pool) -> None:
    await _seed_lists(pool)

    async def buckets(**query: Any) -> list[dict[str, Any]]:
        return await list_buckets(pool=pool, _=VIEWER, **query)

    async def tokens(**query: Any) -> list[dict[str, Any]]:
        return await list_tokens(pool=pool, _=ADMIN, **query)

    async def components(**query: Any) -> list[dict[str, Any]]:
        return await list_components(name="c1", pool=pool, _=VIEWER, **query)

    async def groups(**query: Any) -> list[dict[str, Any]]:
        return await list_instance_groups(name="c1", pool=pool, _=VIEWER, **query)

    async with pool.acquire() as conn:  # whatever the fixture's database holds already
        known = [r["name"] for r in await conn.fetch("SELECT name FROM api_tokens ORDER BY name")]
    for call, count, prefix, limit in (
        (buckets, 31, "bucket", 10),
        (components, 23, "component", 5),
        (groups, 23, "group", 12),
    ):
        seen, totals = await _walk(call, limit=limit)
        assert [r["name"] for r in seen] == [f"{prefix}-{i:02d}" for i in range(count)], prefix
        assert set(totals) == {count} and len(totals) == -(-count // limit), prefix
    seen, totals = await _walk(tokens, limit=4)
    assert [t["name"] for t in seen] == known
    assert set(totals) == {len(known)} and len(known) >= 17
    assert "token_hash" not in seen[0]

    # Two pages of another cluster's groups: its own rows only, the total its own.
    first = Response()
    page = await list_instance_groups(name="c2", pool=pool, _=VIEWER, response=first, limit=3)
    assert first.headers[TOTAL_HEADER] == "4"
    last = Response()
    rest = await list_instance_groups(
        name="c2",
        pool=pool,
        _=VIEWER,
        response=last,
        limit=3,
        page_token=first.headers[NEXT_HEADER],
    )
    assert [g["name"] for g in page + rest] == [f"group-{i:02d}" for i in range(4)]
    assert NEXT_HEADER not in last.headers

    # A bucket added between two pages comes in its place, none repeated.
    first = Response()
    page = await buckets(response=first, limit=10)
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO storage_buckets (name, region, status) VALUES ('bucket-05a', 'us-east-1',"
            " 'available'), ('bucket-15a', 'us-east-1', 'available')"
        )
    token = first.headers[NEXT_HEADER]
    later: list[dict[str, Any]] = []
    while token:
        response = Response()
        later += await buckets(response=response, limit=10, page_token=token)
        token = response.headers.get(NEXT_HEADER, "")
    names = [b["name"] for b in page + later]
    assert "bucket-05a" not in names and "bucket-15a" in names  # before the cursor / after it
    assert len(names) == len(set(names)) == 32


@pytest.mark.parametrize(
    "call",
    [
        lambda pool, **q: list_buckets(pool=pool, _=VIEWER, **q),
        lambda pool, **q: list_tokens(pool=pool, _=ADMIN, **q),
        lambda pool, **q: list_components(name="c1", pool=pool, _=VIEWER, **q),
        lambda pool, **q: list_instance_groups(name="c1", pool=pool, _=VIEWER, **q),
    ],
    ids=["buckets", "tokens", "dependencies", "instance-groups"],
)
async def test_a_token_of_another_list_is_refused_by_the_new_lists(
    pool: asyncpg.Pool, call: Any
) -> None:
    await _seed_lists(pool)
    for token in (
        pages.encode("clusters", ["2026-01-01T00:00:00+00:00", "c1"]),
        pages.encode("jobs", ["x"]),  # another list's, a key of the same size
        "not-a-token",
    ):
        with pytest.raises(ApiError) as refused:
            await call(pool, response=Response(), limit=10, page_token=token)
        assert refused.value.status == 400
        assert refused.value.fields[0]["field"] == "page_token"


async def test_the_new_lists_read_by_their_primary_keys(pool: asyncpg.Pool) -> None:
    await _seed_lists(pool)
    async with pool.acquire() as conn:
        await conn.execute("ANALYZE")
        await conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        for sql, args in (
            (
                "SELECT * FROM instance_groups WHERE cluster = $1 AND (name) > ($2)"
                " ORDER BY name LIMIT 11",
                ("c1", "group-05"),
            ),
            (
                "SELECT * FROM cluster_components WHERE cluster = $1 AND (component) > ($2)"
                " ORDER BY component LIMIT 11",
                ("c1", "component-05"),
            ),
            (
                "SELECT * FROM storage_buckets WHERE TRUE AND (name) > ($1) ORDER BY name LIMIT 11",
                ("b",),
            ),
        ):
            plan = await _plan(conn, sql, *args)
            assert any(n["Node Type"] == "Index Scan" for n in plan), plan
            assert not any(n["Node Type"] == "Sort" for n in plan), plan
