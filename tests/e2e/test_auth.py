"""Authentication and authorization over the whole route table."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import websockets

from tests.e2e.conftest import TOKEN, Client, RunningStack

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


# ---- token administration audited, the last admin kept, revocation immediate --------------


def _audit_rows(api: Client) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = api.get(
            "/api/v1/audit", params={"after": rows[-1]["seq"] if rows else 0, "limit": 1000}
        )
        assert page.status_code == 200, page.text
        rows.extend(page.json())
        if len(page.json()) < 1000:
            return rows


def _audited(
    api: Client, match: Callable[[dict[str, Any]], bool], count: int = 1, timeout: float = 15
) -> list[dict[str, Any]]:
    """The audit rows `match` accepts, once there are `count` of them."""
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in _audit_rows(api) if match(r)]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"{len(found)} of {count} audit rows"
        time.sleep(0.2)


def _as(stack: RunningStack, token: str, source: str = "rest") -> Client:
    client = Client(stack.stack.url, token)
    client.http.headers["X-Hyperpilot-Source"] = source
    return client


def test_token_create_rotate_and_revoke_are_audited_without_the_token(
    module_stack: RunningStack,
) -> None:
    api = module_stack.client
    admin = _as(module_stack, TOKEN, "cli")
    created = admin.post("/api/v1/tokens", {"name": "audited", "role": "viewer"})
    assert created.status_code == 201, created.text
    rotated = admin.post("/api/v1/tokens", {"name": "audited", "role": "operator"})
    assert rotated.status_code == 201, rotated.text
    assert admin.delete("/api/v1/tokens/audited").status_code == 200

    rows = _audited(api, lambda r: r["payload"].get("name") == "audited", count=3)
    assert [(r["type"], r["principal"], r["source"]) for r in rows] == [
        ("TokenCreated", "admin", "cli"),
        ("TokenRotated", "admin", "cli"),
        ("TokenRevoked", "admin", "cli"),
    ]
    assert [r["payload"] for r in rows] == [
        {"name": "audited", "role": "viewer"},
        {"name": "audited", "role": "operator", "previous_role": "viewer"},
        {"name": "audited", "role": "operator"},
    ]
    assert all(r["subject"].startswith("evt.auth.token_") for r in rows)
    written = str(rows) + api.get("/api/v1/events", params={"limit": 1000}).text
    for token in (created.json()["token"], rotated.json()["token"]):
        assert token not in written
        assert hashlib.sha256(token.encode()).hexdigest() not in written


def _live_admins(api: Client) -> list[str]:
    return [
        t["name"]
        for t in api.get("/api/v1/tokens").json()
        if t["role"] == "admin" and t["revoked_at"] is None
    ]


def test_the_last_admin_token_is_neither_revoked_nor_rotated_down(
    module_stack: RunningStack,
) -> None:
    api = module_stack.client
    for name in _live_admins(api):
        if name != "admin":
            assert api.delete(f"/api/v1/tokens/{name}").status_code == 200
    assert _live_admins(api) == ["admin"]

    refused = api.delete("/api/v1/tokens/admin")
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "conflict"
    assert "last live admin token" in error["message"]
    assert "create another admin token first" in error["hint"]
    down = api.post("/api/v1/tokens", {"name": "admin", "role": "operator"})
    assert down.status_code == 409, down.text
    assert "rotating it to operator" in down.json()["error"]["message"]
    assert "create another admin token first" in down.json()["error"]["hint"]
    # the admin token still works, with its role
    assert api.get("/api/v1/tokens").status_code == 200
    assert _live_admins(api) == ["admin"]

    # With a second admin token, either may go.
    spare = api.post("/api/v1/tokens", {"name": "spare-admin", "role": "admin"})
    assert spare.status_code == 201
    assert api.delete("/api/v1/tokens/spare-admin").status_code == 200
    assert _live_admins(api) == ["admin"]


def _at_once(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    """The calls' answers, the calls made in threads released together."""
    start = threading.Barrier(len(calls))

    def call(made: Callable[[], httpx.Response]) -> httpx.Response:
        start.wait()
        return made()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(call, calls))


def test_concurrent_revokes_of_the_last_two_admin_tokens_leave_one(
    running_stack: RunningStack,
) -> None:
    url = running_stack.stack.url
    survivor, survivor_token = "admin", TOKEN
    for round_ in range(5):
        other = f"second-{round_}"
        made = Client(url, survivor_token).post("/api/v1/tokens", {"name": other, "role": "admin"})
        assert made.status_code == 201, made.text
        tokens = {survivor: survivor_token, other: made.json()["token"]}
        # each of the two admin tokens revokes the other at the same moment
        pairs = [(survivor, other), (other, survivor)]
        clients = [Client(url, tokens[actor]) for actor, _ in pairs]
        for client in clients:  # connected before the race
            assert client.get("/api/v1/tokens").status_code == 200
        answers = _at_once(
            [
                functools.partial(client.delete, f"/api/v1/tokens/{target}")
                for client, (_, target) in zip(clients, pairs, strict=True)
            ]
        )
        # one revoke wins; the other is refused (409), or finds its own token revoked (401)
        statuses = sorted(a.status_code for a in answers)
        assert statuses in ([200, 401], [200, 409]), [a.text for a in answers]
        winner = 0 if answers[0].status_code == 200 else 1
        survivor = pairs[winner][0]
        survivor_token = tokens[survivor]
        listed = Client(url, survivor_token).get("/api/v1/tokens").json()
        admins = [t["name"] for t in listed if t["role"] == "admin" and t["revoked_at"] is None]
        assert admins == [survivor], (round_, admins)


class _Stream(threading.Thread):
    """An SSE stream of the events, read in the background until it ends."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.token = token
        self.opened = threading.Event()
        self.data = b""
        self.outcome: str | None = None
        self.ended_at: float | None = None

    def run(self) -> None:
        try:
            with httpx.stream(
                "GET",
                f"{self.url}/api/v1/events/stream",
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=httpx.Timeout(10, read=8),
            ) as response:
                assert response.status_code == 200, response.read()
                for chunk in response.iter_raw():
                    self.data += chunk
                    self.opened.set()
            self.outcome = "ended"
        except httpx.ReadTimeout:
            self.outcome = "still open"
        except Exception as exc:
            self.outcome = repr(exc)
        finally:
            self.ended_at = time.monotonic()
            self.opened.set()


def test_a_revoked_tokens_event_stream_ends_within_a_second(module_stack: RunningStack) -> None:
    api = module_stack.client
    url = module_stack.stack.url
    token = api.post("/api/v1/tokens", {"name": "sse-viewer", "role": "viewer"}).json()["token"]
    revoked, kept = _Stream(url, token), _Stream(url, TOKEN)
    for stream in (revoked, kept):
        stream.start()
        assert stream.opened.wait(10) and stream.outcome is None, stream.outcome
    time.sleep(0.5)
    assert revoked.is_alive(), revoked.outcome

    started = time.monotonic()
    assert api.delete("/api/v1/tokens/sse-viewer").status_code == 200
    revoked.join(5)
    assert revoked.outcome == "ended", revoked.outcome
    assert revoked.ended_at is not None and revoked.ended_at - started < 2.5
    # the stream of another token goes on, and carries the revocation's event
    deadline = time.monotonic() + 5
    while b"event: TokenRevoked" not in kept.data:
        assert time.monotonic() < deadline and kept.is_alive(), kept.outcome
        time.sleep(0.1)
    assert kept.is_alive(), kept.outcome
    again = httpx.get(f"{url}/api/v1/events/stream", headers={"Authorization": f"Bearer {token}"})
    assert again.status_code == 401


def _submit_job(api: Client, cluster: str, spec: dict[str, Any]) -> None:
    answer = api.post(f"/api/v1/clusters/{cluster}/jobs", spec)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=60)
    assert op["status"] == "succeeded", op.get("error")


def test_a_revoked_tokens_log_websocket_closes_within_a_second(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    jobs = f"/api/v1/clusters/{cluster}/jobs"
    # long enough to outlive the test: 2000 steps of the simulated training
    spec = {
        "recipe": "pytorch",
        "name": "ws-revoked",
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "2000"],
        "resources": {"gpus": 1},
    }
    _submit_job(api, cluster, spec)
    deadline = time.monotonic() + 60
    while True:
        job = api.get(f"{jobs}/ws-revoked").json()
        pods = [p["name"] for p in (job.get("live") or {}).get("observed", {}).get("pods", [])]
        if job["status"] == "running" and pods:
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    token = api.post("/api/v1/tokens", {"name": "ws-viewer", "role": "viewer"}).json()["token"]
    ws_url = stack.stack.url.replace("http", "ws", 1) + f"{jobs}/ws-revoked/logs/ws?pod={pods[0]}"

    async def follow() -> tuple[list[dict[str, Any]], int | None, float]:
        frames: list[dict[str, Any]] = []
        async with websockets.connect(
            ws_url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None
        ) as ws:
            while not any(f["type"] == "lines" for f in frames):
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=30)))
            started = time.monotonic()
            revoked = await asyncio.to_thread(api.delete, "/api/v1/tokens/ws-viewer")
            assert revoked.status_code == 200, revoked.text
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                while time.monotonic() - started < 8:
                    frames.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=8)))
            return frames, ws.close_code, time.monotonic() - started

    try:
        frames, close_code, took = asyncio.run(follow())
        assert close_code == 1008, (close_code, frames[-3:])
        assert took < 2.5, took
        assert frames[-1]["type"] == "error" and frames[-1]["code"] == "unauthorized", frames[-1]
    finally:
        api.wait(api.delete(f"{jobs}/ws-revoked").json()["operation_id"])


def test_an_invoke_is_audited_without_its_bodies(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    instance_type = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["instance_groups"][0][
        "instance_type"
    ]
    body = {
        "name": "audited",
        "instance_type": instance_type,
        "gpus": 1,
        "replicas": 1,
        "service": "internal",
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    deployed = api.post("/api/v1/endpoints", body, params={"cluster": cluster})
    assert deployed.status_code == 202, deployed.text
    assert api.wait(deployed.json()["operation_id"], timeout=90)["status"] == "succeeded"
    operator_token = api.post("/api/v1/tokens", {"name": "invoker", "role": "operator"}).json()[
        "token"
    ]
    invoker = _as(stack, operator_token, "mcp")
    prompt = "a prompt that never reaches the audit log"
    try:
        answer = invoker.post(
            "/api/v1/endpoints/audited/invoke",
            {"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": prompt}]},
            params={"cluster": cluster},
        )
        assert answer.status_code == 200, answer.text
        reply = answer.json()["choices"][0]["message"]["content"]
        completed = invoker.post(
            "/api/v1/endpoints/audited/v1/completions",
            {"model": "Qwen/Qwen3-0.6B", "prompt": prompt},
            params={"cluster": cluster},
        )
        rows = _audited(api, lambda r: r["type"] == "EndpointInvoked", count=2)
        assert [(r["principal"], r["source"]) for r in rows] == [("invoker", "mcp")] * 2
        assert rows[0]["payload"] == {
            "cluster": cluster,
            "endpoint": "audited",
            "path": "/v1/chat/completions",
            "status": 200,
            "error": None,
        }
        assert rows[1]["payload"]["path"] == "/v1/completions"
        assert rows[1]["payload"]["status"] == completed.status_code
        assert prompt not in str(rows) and reply not in str(rows)
    finally:
        deleted = api.delete("/api/v1/endpoints/audited", params={"cluster": cluster})
        api.wait(deleted.json()["operation_id"], timeout=60)
