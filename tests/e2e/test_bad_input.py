"""Bad input gets a 4xx naming the field, the rule and the fix; nothing is stored; never a 5xx."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.conftest import RunningStack


def _fields(response: httpx.Response) -> dict[str, dict[str, Any]]:
    error = response.json()["error"]
    return {f["field"]: f for f in error.get("fields", [])}


def _nothing_stored(stack: RunningStack) -> None:
    assert stack.client.get("/api/v1/operations").json()["items"] == []
    assert stack.client.get("/api/v1/storage/buckets").json() == []


def test_bad_bodies_are_refused_with_the_field_named(module_stack: RunningStack) -> None:
    api = module_stack.client
    url = "/api/v1/storage/buckets"
    cases: list[tuple[dict[str, Any], int, str, str]] = [
        (
            {"content": b'{"name": "abc",', "headers": {"Content-Type": "application/json"}},
            422,
            "body",
            "json_invalid",
        ),
        ({"json": {"name": 42}}, 422, "name", "string_type"),
        ({"json": {"name": "ok-bucket", "color": "red"}}, 422, "color", "extra_forbidden"),
        ({"json": {}}, 422, "name", "missing"),
        ({"json": {"name": "Bad_Name"}}, 422, "name", "value_error"),
        ({"json": {"name": "ok-bucket", "region": "mars-1"}}, 422, "region", "value_error"),
        ({"json": {"name": "../../etc/passwd"}}, 422, "name", "value_error"),
        ({"json": {"name": "x'; DROP TABLE operations;--"}}, 422, "name", "value_error"),
        ({"json": ["name"]}, 422, "body", "model_attributes_type"),
        (
            {"content": b'{"name": "\xff\xfe"}', "headers": {"Content-Type": "application/json"}},
            400,
            "body",
            "body_unreadable",
        ),
    ]
    for kwargs, status, field, rule in cases:
        response = api.http.post(url, **kwargs)
        assert response.status_code == status, (kwargs, response.text)
        fields = _fields(response)
        assert field in fields, (kwargs, response.text)
        assert fields[field]["rule"] == rule
        assert fields[field]["hint"], fields[field]
    color = _fields(api.http.post(url, json={"name": "ok-bucket", "color": "red"}))["color"]
    assert "accepted fields: name, region" in color["hint"]
    _nothing_stored(module_stack)


def test_an_oversized_body_is_refused_before_parsing(module_stack: RunningStack) -> None:
    api = module_stack.client
    response = api.http.post(
        "/api/v1/storage/buckets",
        content=b'{"name": "' + b"a" * 400_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"

    def chunks() -> Any:
        yield b'{"name": "'
        for _ in range(100):
            yield b"a" * 10_000
        yield b'"}'

    streamed = api.http.post(
        "/api/v1/storage/buckets", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    _nothing_stored(module_stack)


def test_deeply_nested_json_is_a_clear_4xx(module_stack: RunningStack) -> None:
    api = module_stack.client
    deep = b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    response = api.http.post(
        "/api/v1/storage/buckets", content=deep, headers={"Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500
    _nothing_stored(module_stack)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/v1/operations/not-a-uuid", 422),
        ("GET", "/api/v1/operations/00000000-0000-0000-0000-000000000000", 404),
        ("POST", "/api/v1/operations/00000000-0000-0000-0000-000000000000/retry", 404),
        ("GET", "/api/v1/storage/buckets/..%2F..%2Fetc", 404),
        ("GET", "/api/v1/storage/buckets/UPPER-case", 422),
        ("DELETE", "/api/v1/storage/buckets/never-made-here", 404),
        ("GET", "/api/v1/operations?limit=100000", 422),
        ("GET", "/api/v1/events?after=-1", 422),
        ("PUT", "/api/v1/storage/buckets", 405),
    ],
)
def test_bad_paths_and_queries_are_4xx(
    module_stack: RunningStack, method: str, path: str, status: int
) -> None:
    response = module_stack.client.http.request(method, path)
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]


def test_a_bad_idempotency_key_is_refused(module_stack: RunningStack) -> None:
    response = module_stack.client.post(
        "/api/v1/storage/buckets",
        {"name": "ok-bucket"},
        headers={"Idempotency-Key": "spaces are not allowed"},
    )
    assert response.status_code == 400
    assert _fields(response)["header.Idempotency-Key"]["hint"]
    _nothing_stored(module_stack)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/storage/buckets"),
        ("DELETE", "/api/v1/storage/buckets/ok-bucket"),
        ("POST", "/api/v1/clusters"),
        ("POST", "/api/v1/clusters/c1/nodes/reboot"),
    ],
)
def test_a_bad_dry_run_is_refused_with_the_field_named(
    module_stack: RunningStack, method: str, path: str
) -> None:
    response = module_stack.client.http.request(method, path, params={"dry_run": "maybe"})
    assert response.status_code == 422, response.text
    field = _fields(response)["query.dry_run"]
    assert field["rule"] == "bool_parsing"
    assert field["hint"] == "send true or false"
    _nothing_stored(module_stack)


def test_tokens_and_roles_are_enforced(module_stack: RunningStack) -> None:
    url = module_stack.stack.url
    assert httpx.post(f"{url}/api/v1/storage/buckets", json={"name": "abc-def"}).status_code == 401
    assert (
        httpx.get(f"{url}/api/v1/operations", headers={"Authorization": "Bearer nope"}).status_code
        == 401
    )
    retry_on_nothing = httpx.post(
        f"{url}/api/v1/operations/00000000-0000-0000-0000-000000000000/retry"
    )
    assert retry_on_nothing.status_code == 401
    _nothing_stored(module_stack)
