"""The MCP service's own logic, with the gateway replaced by an httpx mock transport."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from pydantic import ValidationError

from gateway.app import create_app
from mcp_svc.client import Gateway, canonical_json, idempotency_key
from mcp_svc.config import McpSettings
from mcp_svc.errors import from_response, from_validation, render
from mcp_svc.reference import render as render_reference
from mcp_svc.results import COMPLETION
from mcp_svc.server import build_server
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
        assert result.is_error
        assert result.structured_content["error"]["code"] == "writes_disabled"
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
        listed = await client.call_tool("list_storage_buckets", {"cluster": "c1"})
    assert refused.is_error and listed.is_error
    error = refused.structured_content["error"]
    assert error["code"] == "validation_error"
    assert [f["field"] for f in error["fields"]] == ["dryrun", "regoin"]
    assert {f["rule"] for f in error["fields"]} == {"extra_forbidden"}
    assert error["hint"] == "create_storage_bucket takes: name, region, dry_run, request_id"
    assert "nothing was sent" in error["message"]
    assert listed.structured_content["error"]["hint"] == "list_storage_buckets takes no arguments"
    assert fake.requests == []


async def test_every_tool_over_a_route_with_dry_run_offers_it(fake: FakeGateway) -> None:
    def shape(path: str) -> str:  # parameter names differ between the two: {id}, {name}
        return re.sub(r"\{[^}]*\}", "{}", path.split("?")[0])

    paths = {shape(path): ops for path, ops in create_app(Settings()).openapi()["paths"].items()}
    server = server_with(fake, allow_write=False)
    previewable = 0
    for info in server.catalog.values():
        method, path = info.rest.split(" ", 1)
        operation = paths[shape(path)][method.lower()]
        offers = any(p["name"] == "dry_run" for p in operation.get("parameters", []))
        assert info.previewable == offers, info.name
        previewable += offers
    assert previewable == 27  # the 28 accepting routes; PUT and PATCH node-recovery: one tool
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
        assert tool.annotations.read_only_hint is (not info.mutating)
        assert all(p.get("description") for p in tool.input_schema["properties"].values()), (
            info.name
        )
        assert tool.output_schema and "summary" in tool.output_schema["properties"]
        if info.mutating and info.status_tool == "get_operation":
            assert tool.description.endswith(COMPLETION), info.name
            assert "operation_id" in tool.output_schema["properties"]
            assert "status_tool" in tool.output_schema["properties"]
        elif info.mutating:
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
