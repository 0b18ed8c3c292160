"""The official TypeScript MCP SDK's client (`@modelcontextprotocol/sdk`, pinned by
tests/mcp/ts/package-lock.json, installed by `make install`) against `python -m mcp_svc` in front
of the real stack, over stdio and over streamable HTTP.

tests/mcp/ts/conformance.mjs drives the client and prints what it saw as JSON; these tests assert
on it. The client validates a result's structured content against the tool's output schema, so
an error result must carry none: the error (code, field, rule, hint) is in its text. Without
node, or without the installed SDK, the tests are skipped, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import RunningStack, created_cluster  # noqa: F401
from tests.mcp.conftest import McpProcess, http_server, mcp_env

TS = Path(__file__).resolve().parent / "ts"
SCRIPT = TS / "conformance.mjs"
SDK = TS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
HTTP_TOKEN = "hp-mcp-ts-Zq3v9LrT0kXy7wPa2sDf"
TRANSPORTS = ("stdio", "http")
UNKNOWN_CLUSTER = "no-such-cluster-ts"
SCHEMA_MISMATCH = "Structured content does not match the tool's output schema"


NODE = shutil.which("node")
MISSING = (
    "node is not installed: the TypeScript SDK conformance test needs Node 20+"
    if NODE is None
    else "the TypeScript MCP SDK is not installed (tests/mcp/ts/node_modules): run `make install`"
    " (npm ci --prefix tests/mcp/ts)"
    if not SDK.is_file()
    else None
)
# Decided before any fixture starts a stack.
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@pytest.fixture(scope="module")
def read_only_http(
    module_stack: RunningStack,
    mcp_token: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[McpProcess]:
    """The default server (writes off) over streamable HTTP, with a bearer token."""
    workdir = Path(tmp_path_factory.mktemp("mcp-ro"))
    env = mcp_env(module_stack, mcp_token, MCP_HTTP_TOKEN=HTTP_TOKEN)
    with http_server([], env, workdir) as served:
        yield McpProcess(served[0], mcp_token, served[2])


@pytest.fixture(scope="module")
def seen(
    created_cluster: tuple[RunningStack, str],  # noqa: F811
    mcp_token: str,
    mcp_server: McpProcess,
    read_only_http: McpProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """What the TypeScript client saw, per transport."""
    assert NODE is not None
    stack, cluster = created_cluster
    described = stack.client.get(f"/api/v1/clusters/{cluster}").json()
    instance_type = described["instance_groups"][0]["instance_type"]
    workdir = tmp_path_factory.mktemp("ts")  # no `.env` there: only `env` configures a server
    config = {
        "python": sys.executable,
        "cwd": str(workdir),
        "env": {k: v for k, v in mcp_env(stack, mcp_token).items() if v is not None},
        "cluster": cluster,
        "instance_type": instance_type,
        "unknown_cluster": UNKNOWN_CLUSTER,
        "http": {
            "read_only": {"url": read_only_http.url, "token": HTTP_TOKEN},
            "writable": {"url": mcp_server.url, "token": None},
        },
    }
    path = workdir / "config.json"
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [NODE, str(SCRIPT), str(path)],
        cwd=TS,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NODE_NO_WARNINGS": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, Any] = json.loads(done.stdout)
    (workdir / "results.json").write_text(done.stdout)
    print(f"what the TypeScript client saw: {workdir / 'results.json'}")
    return results


def tool_error(result: dict[str, Any]) -> str:
    """The text of a visible tool error: not thrown by the SDK, `isError`, no structured content."""
    assert "thrown" not in result, f"the TypeScript SDK threw: {result['thrown']}"
    assert result["isError"] is True, result
    assert result["structuredContent"] is None, result
    text: str = result["text"]
    return text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_it_lists_the_tools_and_the_status_contract(seen: dict[str, Any], transport: str) -> None:
    run = seen[transport]["read_only"]
    assert "thrown" not in run, run
    tools = {t["name"]: t for t in run["tools"]}
    assert {"list_clusters", "get_cluster", "create_cluster", "get_operation"} <= set(tools)
    assert "get_tool_schema" in tools
    # Only get_operation's result is listed as a schema (the SDK then checks every poll's
    # structured content against it); the other results are structured content all the same.
    assert [n for n, t in tools.items() if t["hasOutputSchema"]] == ["get_operation"]
    assert tools["list_clusters"]["readOnly"] is True
    # A mutation leaves readOnlyHint at the MCP default (false).
    assert tools["create_cluster"]["readOnly"] is None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_read_tool_answers_structured_content_the_sdk_accepts(
    seen: dict[str, Any],
    transport: str,
    created_cluster: tuple[RunningStack, str],  # noqa: F811
) -> None:
    read = seen[transport]["read_only"]["read"]
    assert "thrown" not in read, read
    assert read["isError"] is False
    names = {c["name"] for c in read["structuredContent"]["clusters"]}
    assert created_cluster[1] in names
    assert read["text"].startswith(read["structuredContent"]["summary"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_write_with_writes_off_is_a_visible_error_with_its_hint(
    seen: dict[str, Any], transport: str
) -> None:
    result = seen[transport]["read_only"]["write_refused"]
    assert SCHEMA_MISMATCH not in result.get("thrown", "")
    text = tool_error(result)
    assert text.startswith("writes_disabled: create_storage_bucket changes state")
    assert "hint: restart the server with --allow-write (or MCP_ALLOW_WRITE=true)" in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_cluster_is_a_visible_error_naming_the_tool_to_call(
    seen: dict[str, Any], transport: str
) -> None:
    text = tool_error(seen[transport]["read_only"]["unknown_cluster"])
    assert text.splitlines()[0] == (
        f"not_found (HTTP 404): cluster {UNKNOWN_CLUSTER} is not known here"
    )
    assert "hint: list_clusters" in text and "/api/v1" not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_bad_argument_is_a_visible_validation_error(seen: dict[str, Any], transport: str) -> None:
    text = tool_error(seen[transport]["read_only"]["bad_argument"])
    assert text.startswith("validation_error: availability_zone_id:")
    assert "- availability_zone_id [string_pattern_mismatch]" in text
    assert "is not in the form this field takes (hint: use an Availability Zone ID such as" in text

    # The gateway's refusal, worded with the tool's argument (REST says query.selector).
    text = tool_error(seen[transport]["read_only"]["bad_selector"])
    assert text.startswith("validation_error (HTTP 422): selector:")
    assert "- selector [" in text and "query.selector" not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_allowed_write_starts_an_operation_and_the_wait_reports_progress(
    seen: dict[str, Any],
    transport: str,
    created_cluster: tuple[RunningStack, str],  # noqa: F811
) -> None:
    cluster = created_cluster[1]
    run = seen[transport]["writable"]
    assert "thrown" not in run, run
    write = run["write"]
    assert "thrown" not in write and write["isError"] is False, write
    started = write["structuredContent"]
    assert started["operation_id"] and started["status_tool"] == "get_operation"
    assert "wait_seconds=45" in started["next_step"]

    polls = run["polls"]
    assert polls and all(p["thrown"] is None and p["isError"] is False for p in polls), polls
    assert polls[-1]["terminal"] is True and polls[-1]["status"] == "succeeded", polls
    # At least one notifications/progress during the wait, naming the operation and its stage.
    progress = run["progress"]
    assert progress, polls
    assert all(p["total"] == 45 for p in progress)
    values = [p["progress"] for p in progress]
    assert values == sorted(values) and len(set(values)) == len(values)
    for p in progress:
        assert p["message"].startswith(f"cluster.add_instance_group {cluster} "), p
        # before its first stage starts an operation is pending with no stage to name
        assert (
            "running: " in p["message"]
            or "next: " in p["message"]
            or "pending, no stages yet" in p["message"]
        ), p


def test_without_the_http_token_the_client_is_told_what_to_set(seen: dict[str, Any]) -> None:
    probe = seen["http"]["unauthorized"]
    assert probe["connected"] is False
    assert "set the MCP HTTP token: Authorization: Bearer <token>" in probe["thrown"]
    assert probe["status"] == 401
    # No resource_metadata: nothing sends the client after an OAuth authorization server.
    assert probe["wwwAuthenticate"] == "Bearer"
    assert "set the MCP HTTP token: Authorization: Bearer <token>" in probe["body"]
