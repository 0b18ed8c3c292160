"""Bad input gets a 4xx naming the field, the rule and the fix; nothing is stored; never a 5xx."""

from __future__ import annotations

import json
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


BEYOND_BIGINT = 2**63  # one more than PostgreSQL's bigint (an event's seq) takes
NUL_HINT = "remove the NUL character (\\u0000)"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/events",
        "/api/v1/audit",
        "/api/v1/events/stream",
        "/api/v1/clusters/c1/jobs/j1/events",
    ],
)
def test_a_seq_beyond_a_bigint_is_a_422_not_a_database_error(
    module_stack: RunningStack, path: str
) -> None:
    api = module_stack.client
    response = api.get(path, params={"after": BEYOND_BIGINT})
    assert response.status_code == 422, response.text
    field = _fields(response)["query.after"]
    assert field["rule"] == "less_than_equal"
    assert str(2**63 - 1) in field["hint"]
    if path != "/api/v1/events/stream":
        largest = api.get(path, params={"after": 2**63 - 1})
        assert largest.status_code in (200, 404), largest.text  # 404: no cluster c1


@pytest.mark.parametrize("last_event_id", [str(BEYOND_BIGINT), "12a", "\u00b2"])
def test_a_last_event_id_that_is_no_seq_is_a_422(
    module_stack: RunningStack, last_event_id: str
) -> None:
    response = module_stack.client.get(
        "/api/v1/events/stream", headers={"Last-Event-ID": last_event_id.encode("latin-1")}
    )
    assert response.status_code == 422, response.text
    assert _fields(response)["header.last-event-id"]["hint"]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/audit?principal=a%00b", "query.principal"),
        ("/api/v1/operations?kind=a%00b", "query.kind"),
        ("/api/v1/operations?target_id=c1%00", "query.target_id"),
        ("/api/v1/endpoints?cluster=%00", "query.cluster"),
        ("/api/v1/events?operation_id=%00", "query.operation_id"),
        ("/api/v1/storage/buckets/ab%00cd", "path"),
        ("/api/v1/clusters/c1%00/jobs", "path"),
        ("/ui/app%00.js", "path"),
    ],
)
def test_a_nul_in_the_query_or_path_is_a_422_naming_it(
    module_stack: RunningStack, path: str, field: str
) -> None:
    response = module_stack.client.get(path)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert _fields(response)[field]["rule"] == "no_nul"
    assert _fields(response)[field]["hint"] == NUL_HINT


def _cluster_body(api: Any, **changes: Any) -> dict[str, Any]:
    from tests.e2e.conftest import cluster_spec, unique

    return {**cluster_spec(api, unique("edge")), **changes}


@pytest.mark.parametrize("dry_run", ["true", "false"])
@pytest.mark.parametrize(
    ("changes", "field", "rule"),
    [
        ({"tags": {"team": "ml\u0000ops"}}, "tags.team", "no_nul"),
        ({"tags": {"te\u0000am": "ml"}}, "tags", "no_nul"),  # a key
        ({"tags": {"team": "\ud800"}}, "tags.team", "no_lone_surrogate"),
        ({"kubernetes_version": "1.32\u0000"}, "kubernetes_version", "no_nul"),
    ],
)
def test_a_body_string_that_cannot_be_stored_is_a_422_dry_run_or_not(
    module_stack: RunningStack, dry_run: str, changes: dict[str, Any], field: str, rule: str
) -> None:
    api = module_stack.client
    body = _cluster_body(api, **changes)
    response = api.http.post(
        "/api/v1/clusters",
        # json.dumps writes a lone surrogate as its \ud800 escape (httpx's encoder refuses it)
        content=json.dumps(body).encode(),
        params={"dry_run": dry_run},
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    fields = _fields(response)
    assert fields[field]["rule"] == rule, fields
    if rule == "no_nul":
        assert fields[field]["hint"] == NUL_HINT
    _nothing_stored(module_stack)


@pytest.mark.parametrize("dry_run", ["true", "false"])
def test_a_nul_in_a_job_env_or_args_is_refused_before_anything_is_looked_up(
    module_stack: RunningStack, dry_run: str
) -> None:
    job = {
        "recipe": "pytorch",
        "name": "nul-job",
        "instance_group": "gpu",
        "script": "scripts/train.py",
        "env": {"MODE": "fast\u0000"},
        "args": ["--lr", "0.1\u0000"],
    }
    response = module_stack.client.post(
        "/api/v1/clusters/no-such-cluster/jobs", job, params={"dry_run": dry_run}
    )
    assert response.status_code == 422, response.text
    fields = _fields(response)
    assert fields["env.MODE"]["rule"] == fields["args.1"]["rule"] == "no_nul"
    _nothing_stored(module_stack)


@pytest.mark.parametrize("dry_run", ["true", "false"])
def test_an_integer_beyond_64_bits_in_a_body_is_a_422(
    module_stack: RunningStack, dry_run: str
) -> None:
    api = module_stack.client
    body = _cluster_body(api)
    body["instance_groups"][0]["min_count"] = 10**30
    response = api.post("/api/v1/clusters", body, params={"dry_run": dry_run})
    assert response.status_code == 422, response.text
    assert _fields(response)["instance_groups.0.min_count"]["rule"] == "int64_range"
    _nothing_stored(module_stack)


def test_text_that_only_looks_like_nul_or_a_pair_is_accepted(module_stack: RunningStack) -> None:
    api = module_stack.client
    body = _cluster_body(api, tags={"literal": "\\u0000", "emoji": "\U0001f600"})
    response = api.http.post(
        "/api/v1/clusters",
        # the emoji as its escaped surrogate pair, the backslash escaped: both are text
        content=json.dumps(body).encode(),
        params={"dry_run": "true"},
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    _nothing_stored(module_stack)
