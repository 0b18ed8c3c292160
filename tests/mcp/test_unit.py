"""The MCP service's own logic, with the gateway replaced by an httpx mock transport."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp_types import CallToolResult
from pydantic import ValidationError

from gateway.app import create_app
from mcp_svc.client import Gateway, canonical_json, idempotency_key
from mcp_svc.config import McpConfigError, McpSettings, load_settings
from mcp_svc.errors import from_response, from_validation, render
from mcp_svc.reference import render as render_reference
from mcp_svc.registry import ERROR_META
from mcp_svc.server import build_server
from mcp_svc.terms import field_in_tool_terms
from shared.config import Settings
from shared.contracts.cluster import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]
GATEWAY_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
OPERATION = "123e4567-e89b-12d3-a456-426614174000"


# ---- idempotency keys ---------------------------------------------------------------------


def test_the_key_is_stable_and_ignores_argument_order() -> None:
    a = idempotency_key("create_storage_bucket", {"name": "b1", "region": None})
    b = idempotency_key("create_storage_bucket", {"region": None, "name": "b1"})
    assert a == b
    assert GATEWAY_KEY.match(a) and a.startswith("mcp:create_storage_bucket:")


def test_the_key_changes_with_the_tool_and_with_any_value() -> None:
    base = idempotency_key("create_storage_bucket", {"name": "b1"})
    assert idempotency_key("delete_storage_bucket", {"name": "b1"}) != base
    assert idempotency_key("create_storage_bucket", {"name": "b2"}) != base
    assert idempotency_key("create_storage_bucket", {"name": "b1", "request_id": "again"}) != base
    nested = {"groups": [{"name": "g", "count": 1}]}
    assert idempotency_key("t", nested) != idempotency_key(
        "t", {"groups": [{"name": "g", "count": 2}]}
    )


def test_canonical_json_is_one_spelling() -> None:
    assert (
        canonical_json({"b": 1, "a": {"d": "é", "c": [2, 1]}}) == '{"a":{"c":[2,1],"d":"é"},"b":1}'
    )


# ---- error mapping --------------------------------------------------------------------------


REST_422 = {
    "error": {
        "code": "validation_error",
        "message": "availability_zone_id: use1-az9 is not an Availability Zone of us-east-1",
        "fields": [
            {
                "field": "availability_zone_id",
                "rule": "availability_zone",
                "message": "use1-az9 is not an Availability Zone of us-east-1",
                "hint": "use one of use1-az1 and use1-az2",
            }
        ],
    }
}


def test_a_rest_error_keeps_its_body_and_leads_with_its_message() -> None:
    failure = from_response(422, REST_422, "")
    assert failure.body() == {**REST_422, "status": 422}
    lines = str(failure).splitlines()
    assert lines[0] == f"validation_error (HTTP 422): {REST_422['error']['message']}"
    assert "[availability_zone]" in lines[1] and "use one of use1-az1 and use1-az2" in lines[1]


def test_a_body_that_is_not_the_error_shape_becomes_the_message() -> None:
    failure = from_response(502, None, "Bad Gateway")
    assert failure.error == {"code": "http_error", "message": "Bad Gateway"}
    assert render(failure.error, 502) == "http_error (HTTP 502): Bad Gateway"


def test_schema_errors_are_worded_like_the_gateway() -> None:
    with pytest.raises(ValidationError) as caught:
        ClusterSpec.model_validate(
            {
                "name": "c1",
                "availability_zone_id": "use1-az2",
                "instance_groups": [
                    {
                        "name": "g",
                        "instance_type": "ml.g5.8xlarge",
                        "count": 1,
                        "capacity_type": "training-plan",
                    }
                ],
            }
        )
    failure = from_validation(caught.value)
    field = failure.error["fields"][0]
    assert field["field"] == "instance_groups.0"
    assert field["rule"] == "value_error"
    assert field["message"].startswith("instance group g: capacity_type training-plan needs")
    assert "training-plans" in field["hint"]  # the rule's own hint
    assert failure.error["message"] == f"instance_groups.0: {field['message']}"


# ---- the server against a mock gateway ------------------------------------------------------


def error_of(result: CallToolResult) -> dict[str, Any]:
    """A tool error as a client sees it: `isError`, no structured content (it would not match
    the output schema), the error in the text; the body is in `_meta` for programs."""
    assert result.is_error and result.structured_content is None, result
    (block,) = result.content
    text = block.text  # type: ignore[union-attr]
    assert result.meta is not None
    error: dict[str, Any] = result.meta[ERROR_META]["error"]
    assert text.split("\n")[0].startswith(error["code"]) and error["message"] in text
    if error.get("hint"):
        assert f"hint: {error['hint']}" in text
    for field in error.get("fields") or []:
        assert f"- {field['field']} [{field['rule']}]" in text
    return error


class FakeGateway:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.operations: dict[str, str] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.method == "GET":
            return httpx.Response(200, json=[])
        if request.url.params.get("dry_run") == "true":
            plan = {"noop": False, "diff": {"node_ids": ["i-0123456789abcdef0"]}, "calls": []}
            return httpx.Response(200, json={"dry_run": True, "plan": plan})
        key = request.headers.get("Idempotency-Key", "")
        created = key not in self.operations
        self.operations.setdefault(key, OPERATION)
        return httpx.Response(
            202,
            json={
                "operation_id": self.operations[key],
                "status_url": f"/api/v1/operations/{OPERATION}",
                "created": created,
            },
        )


@pytest.fixture
def fake() -> Iterator[FakeGateway]:
    yield FakeGateway()


def server_with(fake: FakeGateway, allow_write: bool) -> Any:
    gateway = Gateway("http://gateway.test", "hp_token", transport=httpx.MockTransport(fake))
    return build_server(McpSettings(allow_write=allow_write), gateway)


async def test_writes_off_refuses_before_sending_anything(fake: FakeGateway) -> None:
    async with Client(server_with(fake, allow_write=False)) as client:
        result = await client.call_tool("create_storage_bucket", {"name": "team-data"})
        assert error_of(result)["code"] == "writes_disabled"
        assert (await client.call_tool("list_storage_buckets", {})).is_error is False
    assert [r.method for r in fake.requests] == ["GET"]


async def test_an_unknown_argument_is_refused_by_name_and_nothing_is_sent(
    fake: FakeGateway,
) -> None:
    async with Client(server_with(fake, allow_write=True)) as client:
        # Dropping the misspelled dry run would create the bucket.
        refused = await client.call_tool(
            "create_storage_bucket", {"name": "team-data", "dryrun": True, "regoin": "x"}
        )
        listed = await client.call_tool("get_fleet_capacity", {"cluster": "c1"})
    error = error_of(refused)
    assert error["code"] == "validation_error"
    assert [f["field"] for f in error["fields"]] == ["dryrun", "regoin"]
    assert {f["rule"] for f in error["fields"]} == {"extra_forbidden"}
    assert error["hint"] == "create_storage_bucket takes: name, region, dry_run, request_id"
    assert "nothing was sent" in error["message"]
    assert error_of(listed)["hint"] == "get_fleet_capacity takes no arguments"
    assert fake.requests == []


async def test_every_tool_over_a_route_with_dry_run_offers_it(fake: FakeGateway) -> None:
    def shape(path: str) -> str:  # parameter names differ between the two: {id}, {name}
        return re.sub(r"\{[^}]*\}", "{}", path.split("?")[0])

    paths = {shape(path): ops for path, ops in create_app(Settings()).openapi()["paths"].items()}
    server = server_with(fake, allow_write=False)
    previewable = 0
    for info in server.catalog.values():
        if info.rest is None:  # answered by the server itself (get_tool_schema)
            continue
        method, path = info.rest.split(" ", 1)
        operation = paths[shape(path)][method.lower()]
        offers = any(p["name"] == "dry_run" for p in operation.get("parameters", []))
        assert info.previewable == offers, info.name
        previewable += offers
    # the accepting routes, PUT and PATCH node-recovery being one tool: 27, the 4 of task
    # governance (task-governance, teams create, update, delete), 2 more of adoption and drift,
    # the 4 of spaces (create, update, start or stop, delete), and the 2 of storage claims (add,
    # remove), and buying a training plan
    assert previewable == 40
    async with Client(server) as client:
        preview = await client.call_tool(
            "create_storage_bucket", {"name": "team-data", "dry_run": True}
        )
    assert not preview.is_error and preview.structured_content["operation_id"] is None
    (sent,) = fake.requests
    assert sent.url.params["dry_run"] == "true" and "Idempotency-Key" not in sent.headers


async def test_a_dry_run_works_read_only_and_starts_nothing(fake: FakeGateway) -> None:
    arguments = {"cluster": "c1", "node_ids": ["i-0123456789abcdef0"]}
    async with Client(server_with(fake, allow_write=False)) as client:
        preview = await client.call_tool("reboot_nodes", {**arguments, "dry_run": True})
        real = await client.call_tool("reboot_nodes", arguments)
    assert not preview.is_error and real.is_error
    plan = preview.structured_content
    assert plan is not None and plan["dry_run"] is True and plan["operation_id"] is None
    assert plan["diff"] == {"node_ids": ["i-0123456789abcdef0"]}
    (sent,) = fake.requests
    assert sent.url.path == "/api/v1/clusters/c1/nodes/reboot"
    assert sent.url.params["dry_run"] == "true" and "Idempotency-Key" not in sent.headers
    assert json.loads(sent.content) == {"node_ids": ["i-0123456789abcdef0"]}


async def test_a_mutation_carries_the_derived_key_the_token_and_the_source(
    fake: FakeGateway,
) -> None:
    async with Client(server_with(fake, allow_write=True)) as client:
        first = (
            await client.call_tool("create_storage_bucket", {"name": "team-data"})
        ).structured_content
        again = (
            await client.call_tool("create_storage_bucket", {"name": "team-data", "region": None})
        ).structured_content
    assert first is not None and again is not None
    posts = [r for r in fake.requests if r.method == "POST"]
    assert len({r.headers["Idempotency-Key"] for r in posts}) == 1
    assert posts[0].headers["Idempotency-Key"] == idempotency_key(
        "create_storage_bucket", {"name": "team-data", "region": None, "request_id": None}
    )
    assert posts[0].headers["Authorization"] == "Bearer hp_token"
    assert posts[0].headers["X-Hyperpilot-Source"] == "mcp"
    assert json.loads(posts[0].content) == {"name": "team-data"}
    assert first["operation_id"] == again["operation_id"] == OPERATION
    assert first["created"] is True and again["created"] is False
    assert first["status_tool"] == "get_operation"


async def test_every_mutating_tool_names_its_status_tool(fake: FakeGateway) -> None:
    server = server_with(fake, allow_write=False)
    tools = {t.name: t for t in await server.list_tools()}
    for info in server.catalog.values():
        tool = tools[info.name]
        # A mutation leaves readOnlyHint at the MCP default (false).
        assert tool.annotations.read_only_hint is (None if info.mutating else True)
        assert all(p.get("description") for p in tool.input_schema["properties"].values()), (
            info.name
        )
        # Only a contract's output schema is listed (get_operation's).
        assert (tool.output_schema is not None) is info.listed_result, info.name
        if info.mutating and info.status_tool == "get_operation":
            # Its result names get_operation and the call to make: the description does not.
            assert "Completion" not in (tool.description or ""), info.name
            continue
        # Every result's `summary` is its text content: said once (the instructions), not in
        # each schema; the rest of the result is in its schema (the reference's tables).
        result = server.result_schema(info.name)
        assert result and result["properties"], info.name
        assert "summary" not in result["properties"], info.name
        if info.mutating:
            assert info.status_tool in tools and info.status_tool in tool.description


async def test_the_committed_tool_reference_is_the_generated_one() -> None:
    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    committed = (ROOT / "docs" / "mcp-tools.md").read_text()
    assert committed == await render_reference(server), (
        "regenerate it: python -m mcp_svc.reference > docs/mcp-tools.md"
    )


def test_the_service_reaches_the_backend_only_through_rest() -> None:
    """No bus, database or cloud client is even importable from the MCP service's modules."""
    import subprocess
    import sys

    probe = (
        "import sys, mcp_svc.__main__, mcp_svc.server, mcp_svc.reference;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('boto3', 'botocore', 'kubernetes', 'nats', 'asyncpg', 'gateway', 'hyperpilot')"
        " or m in ('shared.db', 'shared.bus', 'shared.outbox', 'shared.consumer'));"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


async def test_the_http_endpoint_asks_for_its_token_when_one_is_set() -> None:
    from mcp_svc.http_auth import BearerAuth

    server = build_server(McpSettings(allow_write=False, http_token="s3cret"))
    app = server.streamable_http_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            answer = await http.post("/mcp", json={}, headers=headers)
            assert answer.status_code == 401
            assert answer.json()["error"]["code"] == "unauthorized"

    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guarded = BearerAuth(inner, "s3cret")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=guarded), base_url="http://127.0.0.1"
    ) as http:
        ok = await http.post("/mcp", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 204 and seen == ["/mcp"]


# ---- errors in the tool's own terms ---------------------------------------------------------


class ErrorGateway:
    """A gateway that answers every request with one REST error."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        self.status = status
        self.error = error
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, json={"error": self.error})


def server_answering(status: int, error: dict[str, Any], allow_write: bool = True) -> Any:
    fake = ErrorGateway(status, error)
    gateway = Gateway("http://gateway.test", "hp_token", transport=httpx.MockTransport(fake))
    return build_server(McpSettings(allow_write=allow_write), gateway)


async def test_an_unknown_cluster_names_the_tool_to_call_not_the_route() -> None:
    server = server_answering(
        404,
        {
            "code": "not_found",
            "message": "cluster c9 is not known here",
            "hint": "GET /api/v1/clusters",
        },
    )
    async with Client(server) as client:
        result = await client.call_tool("list_nodes", {"cluster": "c9"})
    error = error_of(result)
    assert error["hint"] == "list_clusters"
    assert result.content[0].text.splitlines() == [  # type: ignore[union-attr]
        "not_found (HTTP 404): cluster c9 is not known here",
        "hint: list_clusters",
    ]


async def test_rest_fields_are_named_by_the_tools_arguments() -> None:
    selector = {
        "code": "validation_error",
        "message": "query.selector: unbalanced parenthesis",
        "fields": [
            {
                "field": "query.selector",
                "rule": "label_selector",
                "message": "unbalanced parenthesis",
                "hint": "see GET /api/v1/clusters/c1/pods?namespace=default",
            }
        ],
    }
    async with Client(server_answering(422, selector)) as client:
        result = await client.call_tool("list_pods", {"cluster": "c1", "selector": "app in ("})
    error = error_of(result)
    assert error["message"] == "selector: unbalanced parenthesis"
    (field,) = error["fields"]
    assert field["field"] == "selector" and field["rule"] == "label_selector"
    assert field["hint"] == "see list_pods(cluster='c1', namespace='default')"

    # cluster-svc checks a new group as a one-group cluster spec: named from the group itself.
    offered = {
        "code": "validation_error",
        "message": "instance_groups[0].instance_type: ml.p5.48xlarge is not offered in use1-az2",
        "fields": [
            {
                "field": "instance_groups[0].instance_type",
                "rule": "instance_type_offered",
                "message": "ml.p5.48xlarge is not offered in use1-az2",
                "hint": "choose another instance type (GET /api/v1/inspect/instance-types)",
            }
        ],
    }
    group = {"name": "big", "instance_type": "ml.p5.48xlarge", "count": 1}
    async with Client(server_answering(422, offered)) as client:
        result = await client.call_tool("add_instance_group", {"cluster": "c1", "group": group})
    error = error_of(result)
    assert error["message"] == "instance_type: ml.p5.48xlarge is not offered in use1-az2"
    assert error["fields"][0]["field"] == "instance_type"
    assert error["fields"][0]["hint"] == "choose another instance type (list_instance_types)"
    text = result.content[0].text  # type: ignore[union-attr]
    assert "- instance_type [instance_type_offered]" in text and "/api/v1" not in text


async def test_a_parameter_that_is_the_body_keeps_the_rest_field_names() -> None:
    bad = {
        "code": "validation_error",
        "message": "pytorch.script: ../etc/passwd leaves the shared bucket",
        "fields": [
            {
                "field": "pytorch.script",
                "rule": "value_error",
                "message": "../etc/passwd leaves the shared bucket",
                "hint": "use a path inside it",
            }
        ],
    }
    job = {"recipe": "pytorch", "name": "j", "instance_group": "g", "script": "t.py"}
    async with Client(server_answering(422, bad)) as client:
        result = await client.call_tool("submit_training_job", {"cluster": "c1", "job": job})
    assert error_of(result)["fields"][0]["field"] == "pytorch.script"


def test_field_paths_in_tool_terms() -> None:
    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    routes = server.vocabulary.by_tool
    for tool, field, body_param, expected in [
        ("add_instance_group", "instance_groups[0].instance_type", "group", "instance_type"),
        ("add_instance_group", "instance_groups.0.count", "group", "count"),
        ("add_instance_group", "body.labels", "group", "labels"),
        ("update_instance_group", "path.group", "change", "group"),
        ("create_cluster", "instance_groups[1].count", "cluster", "instance_groups[1].count"),
        (
            "create_cluster",
            "instance_groups.0.instance_type",
            "cluster",
            "instance_groups.0.instance_type",
        ),
        ("create_storage_bucket", "body.name", None, "name"),
        ("list_pods", "query.selector", None, "selector"),
        ("list_pods", "path.name", None, "cluster"),
        ("get_pod_logs", "path.pod", None, "pod"),
        ("submit_training_job", "pytorch.script", "job", "pytorch.script"),
        ("submit_training_job", "path.name", "job", "cluster"),
        ("deploy_endpoint", "body", "endpoint", "endpoint"),
        ("deploy_endpoint", "query.cluster", "endpoint", "cluster"),
        ("create_cluster", "header.Idempotency-Key", "cluster", "header.Idempotency-Key"),
        ("create_cluster", "body.region", "cluster", "region"),
        ("get_operation", "query.wait", None, "query.wait"),  # no argument of that name
    ]:
        assert field_in_tool_terms(field, routes[tool], body_param) == expected, (tool, field)


def test_routes_in_hints_become_tool_calls() -> None:
    vocabulary = build_server(McpSettings(allow_write=False, gateway_token=None)).vocabulary
    for hint, expected in [
        ("GET /api/v1/clusters", "list_clusters"),
        (
            "list buckets with GET /api/v1/storage/buckets.",
            "list buckets with list_storage_buckets.",
        ),
        ("or PUT /api/v1/clusters/active", "or set_active_cluster"),
        (
            "(GET /api/v1/clusters/{name} shows the operation)",
            "(get_cluster(name) shows the operation)",
        ),
        ("GET /api/v1/clusters/c1/jobs", "list_training_jobs(cluster='c1')"),
        (
            "wait (GET /api/v1/operations/" + OPERATION + "?wait=60), then delete",
            f"wait (get_operation(operation_id='{OPERATION}')), then delete",
        ),
        ("GET /api/v1/endpoints?cluster=c1", "list_endpoints(cluster='c1')"),
        (
            "DELETE /api/v1/clusters/c1/instance-groups/g",
            "delete_instance_group(cluster='c1', group='g')",
        ),
        # No tool wraps these: REST stays.
        ("POST /api/v1/tokens with role admin", "POST /api/v1/tokens with role admin"),
        ("POST /api/v1/clusters/c1/secrets", "POST /api/v1/clusters/c1/secrets"),
    ]:
        assert vocabulary.reword(hint) == expected


async def test_each_route_placeholder_is_a_required_argument_of_its_tool() -> None:
    """The mapping binds a route's placeholders to the tool's first parameters, in order: so
    those are the path's, which are always required."""
    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    tools = {t.name: t for t in await server.list_tools()}
    for route in server.vocabulary.routes:
        assert len(route.path_arguments) == len(route.holes), route.tool
        required = set(tools[route.tool].input_schema.get("required", []))
        assert set(route.path_arguments.values()) <= required, route.tool
        rest = server.catalog[route.tool].rest
        assert rest is not None  # the vocabulary holds only tools over a route
        method, path = rest.split(" ", 1)
        call = server.vocabulary.tool_call(method, path.split("?")[0])
        assert call is not None and call.split("(")[0] == route.tool


# ---- waiting: capped, with progress ---------------------------------------------------------


class SlowOperation:
    """An operation that stays running for `polls` answers, then succeeds."""

    def __init__(self, polls: int) -> None:
        self.polls = polls
        self.waits: list[float] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        wait = float(request.url.params["wait"])
        self.waits.append(wait)
        done = len(self.waits) > self.polls
        if not done:
            await asyncio.sleep(wait)  # a long poll: the whole wait unless it finishes
        stage = {"name": "eks_cluster", "status": "succeeded" if done else "running"}
        if not done:
            stage["progress"] = "CREATING"
        body = {
            "id": OPERATION,
            "kind": "cluster.create",
            "target_type": "cluster",
            "target_id": "c1",
            "status": "succeeded" if done else "running",
            "stages": [{"name": "preflight", "status": "succeeded"}, stage],
        }
        return httpx.Response(200, json=body)


def slow_server(fake: SlowOperation) -> Any:
    gateway = Gateway("http://gateway.test", "hp_token", transport=httpx.MockTransport(fake))
    return build_server(McpSettings(allow_write=False), gateway)


async def test_a_wait_reports_progress_with_the_running_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_svc.tools import operations

    monkeypatch.setattr(operations, "PROGRESS_EVERY_SECONDS", 0.05)
    fake = SlowOperation(polls=3)
    seen: list[tuple[float, float | None, str | None]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(slow_server(fake)) as client:
        result = await client.call_tool(
            "get_operation",
            {"operation_id": OPERATION, "wait_seconds": 60},
            progress_callback=record,
        )
    assert not result.is_error and result.structured_content["status"] == "succeeded"
    # The first look answers at once, then slices no longer than the reporting interval.
    assert fake.waits[0] == 0 and all(0 < w <= 0.05 for w in fake.waits[1:])
    assert len(seen) == 3
    values = [v for v, _, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert {total for _, total, _ in seen} == {45}  # 60 asked, 45 at most
    assert (
        seen[0][2] == "cluster.create c1 running, 1/2 stages done; running: eks_cluster (CREATING)"
    )


async def test_a_wait_without_a_progress_token_waits_at_most_45_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_svc.tools import operations

    fake = SlowOperation(polls=1000)
    server = slow_server(fake)  # described with the real limits
    monkeypatch.setattr(operations, "MAX_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(operations, "PROGRESS_EVERY_SECONDS", 0.05)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(
            "get_operation", {"operation_id": OPERATION, "wait_seconds": 60}
        )
    # Not terminal when the (capped) wait is over: the answer says so and names the next call.
    assert not result.is_error and result.structured_content["terminal"] is False
    assert 0.15 <= sum(fake.waits) <= 0.25 and max(fake.waits) <= 0.05
    schema = tools["get_operation"].input_schema["properties"]
    assert "ctx" not in schema and schema["wait_seconds"]["default"] <= 45
    assert "at most 45" in schema["wait_seconds"]["description"]


# ---- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"MCP_GATEWAY_URL": "${HYPERPILOT_URL}"}, "MCP_GATEWAY_URL holds ${HYPERPILOT_URL}"),
        ({"MCP_GATEWAY_TOKEN": "${env:HP_TOKEN}"}, "MCP_GATEWAY_TOKEN holds ${env:HP_TOKEN}"),
        ({"MCP_PORT": "${PORT}"}, "MCP_PORT (or --port) holds ${PORT}"),
        ({"MCP_SKILLS_DIR": "${HOME}/skills"}, "MCP_SKILLS_DIR holds ${HOME}"),
        ({"mcp_allow_write": "${WRITE"}, "MCP_ALLOW_WRITE (or --allow-write) holds ${WRITE"),
    ],
)
def test_an_unexpanded_placeholder_in_a_setting_stops_the_start(
    environ: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(McpConfigError) as caught:
        load_settings()
    assert str(caught.value).startswith(f"refusing to start: {named}: an unexpanded placeholder")


def test_a_placeholder_in_a_flag_stops_it_too_and_a_bad_value_names_its_setting() -> None:
    with pytest.raises(McpConfigError, match=r"MCP_HOST \(or --host\) holds \$\{HOST\}"):
        load_settings(environ={}, host="${HOST}")
    # Another program's variables are not the server's business.
    assert load_settings(environ={"MCP_OTHER_TOOL": "${X}"}).gateway_url
    with pytest.raises(McpConfigError, match=r"^MCP_PORT \(or --port\): Input should be"):
        load_settings(environ={}, port=0)


def test_the_server_process_refuses_a_placeholder_and_says_which_setting(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("MCP_")}
    env["MCP_GATEWAY_URL"] = "${HYPERPILOT_URL}"
    done = subprocess.run(
        [sys.executable, "-m", "mcp_svc"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "MCP_GATEWAY_URL holds ${HYPERPILOT_URL}" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
