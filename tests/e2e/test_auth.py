"""Authentication and authorization over the whole route table."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from tests.e2e.conftest import RunningStack

MUTATING = ("post", "put", "patch", "delete")


def _concrete(path: str) -> str:
    return re.sub(r"\{operation_id\}", str(uuid.uuid4()), re.sub(r"\{name\}", "abc-name", path))


def _mutating_routes(url: str) -> list[tuple[str, str]]:
    spec = httpx.get(f"{url}/openapi.json").json()
    return [
        (method.upper(), path)
        for path, methods in spec["paths"].items()
        for method in methods
        if method in MUTATING and path.startswith("/api/v1/")
    ]


@pytest.fixture(scope="module")
def tokens(module_stack: RunningStack) -> dict[str, str]:
    made = {}
    for role in ("viewer", "operator"):
        response = module_stack.client.post(
            "/api/v1/tokens", {"name": f"test-{role}", "role": role}
        )
        assert response.status_code == 201
        made[role] = response.json()["token"]
    return made


def test_every_mutating_route_refuses_no_token_and_a_viewer_token(
    module_stack: RunningStack, tokens: dict[str, str]
) -> None:
    url = module_stack.stack.url
    routes = _mutating_routes(url)
    assert len(routes) >= 8, routes
    for method, path in routes:
        target = url + _concrete(path)
        anonymous = httpx.request(method, target, json={})
        assert anonymous.status_code == 401, (method, path, anonymous.text)
        assert anonymous.json()["error"]["code"] == "unauthorized"
        viewer = httpx.request(
            method, target, json={}, headers={"Authorization": f"Bearer {tokens['viewer']}"}
        )
        assert viewer.status_code == 403, (method, path, viewer.text)
        assert "needs the" in viewer.json()["error"]["message"]


def test_every_read_route_refuses_no_token(module_stack: RunningStack) -> None:
    url = module_stack.stack.url
    spec = httpx.get(f"{url}/openapi.json").json()
    reads = [
        p for p, methods in spec["paths"].items() if "get" in methods and p.startswith("/api/v1/")
    ]
    for path in reads:
        response = httpx.get(url + _concrete(path))
        assert response.status_code == 401, (path, response.text)


def test_destructive_actions_need_admin(module_stack: RunningStack, tokens: dict[str, str]) -> None:
    url = module_stack.stack.url
    operator = {"Authorization": f"Bearer {tokens['operator']}"}
    assert httpx.delete(f"{url}/api/v1/clusters/abc-name", headers=operator).status_code == 403
    assert (
        httpx.delete(f"{url}/api/v1/storage/buckets/abc-name", headers=operator).status_code == 403
    )
    assert (
        httpx.post(
            f"{url}/api/v1/tokens", json={"name": "x", "role": "admin"}, headers=operator
        ).status_code
        == 403
    )
    # An operator may create; the request reaches validation (422), not authorization.
    created = httpx.post(f"{url}/api/v1/storage/buckets", json={"name": "BAD"}, headers=operator)
    assert created.status_code == 422


def test_a_revoked_token_stops_working(module_stack: RunningStack) -> None:
    api = module_stack.client
    token = api.post("/api/v1/tokens", {"name": "short-lived", "role": "viewer"}).json()["token"]
    url = module_stack.stack.url
    assert (
        httpx.get(
            f"{url}/api/v1/operations", headers={"Authorization": f"Bearer {token}"}
        ).status_code
        == 200
    )
    assert api.delete("/api/v1/tokens/short-lived").status_code == 200
    listed = {t["name"]: t for t in api.get("/api/v1/tokens").json()}
    assert listed["short-lived"]["revoked_at"] is not None
    assert "token" not in listed["short-lived"]
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        status = httpx.get(
            f"{url}/api/v1/operations", headers={"Authorization": f"Bearer {token}"}
        ).status_code
        if status == 401:
            break
        time.sleep(0.5)
    assert status == 401


def test_tokens_appear_nowhere_in_the_database_events_or_logs(
    module_stack: RunningStack, tokens: dict[str, str]
) -> None:
    import asyncio

    import asyncpg

    from tests.e2e.conftest import TOKEN

    api = module_stack.client
    op = api.post("/api/v1/storage/buckets", {"name": f"scan-{uuid.uuid4().hex[:8]}"}).json()[
        "operation_id"
    ]
    api.wait(op)
    secrets = [TOKEN, *tokens.values()]

    async def dump() -> str:
        conn = await asyncpg.connect(module_stack.stack.database_url)
        try:
            tables = [
                r["tablename"]
                for r in await conn.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            ]
            parts = [
                str(
                    await conn.fetchval(
                        f"SELECT coalesce(string_agg(t::text, chr(10)), '') FROM \"{t}\" t"
                    )
                )
                for t in tables
            ]
        finally:
            await conn.close()
        return "\n".join(parts)

    database = asyncio.run(dump())
    assert "api_tokens" in database or len(database) > 1000
    logs = "\n".join(
        p.read_text(errors="replace") for p in module_stack.stack.state_dir.glob("*.log")
    )
    stream = (
        api.get("/api/v1/events", params={"limit": 1000}).text
        + api.get("/api/v1/audit", params={"limit": 1000}).text
    )
    for secret in secrets:
        assert secret not in database
        assert secret not in logs
        assert secret not in stream
