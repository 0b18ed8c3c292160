"""The streamable-HTTP transport is closed by default: `python -m mcp_svc` as a process, reached
over TCP by the MCP SDK's streamable-HTTP client and by raw httpx.

- Beyond loopback it needs a bearer token (MCP_HTTP_TOKEN_FILE, or MCP_HTTP_TOKEN) or it does
  not start; the scheme of `Authorization: Bearer` is matched in any case (RFC 7235 2.1).
- Host and Origin are allow-listed (the MCP specification's DNS-rebinding guidance): a foreign
  one is 403 naming the header, before the token is looked at.

No gateway is needed: initialize and tools/list never call it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hyperpilot.infra import free_port, wait_for_port
from mcp_svc.config import McpConfigError, McpSettings, is_loopback, require_http_token
from mcp_svc.http_auth import bearer_credentials
from mcp_svc.http_guard import transport_security
from mcp_svc.server import build_server
from tests.mcp.conftest import http_server

TOKEN = "hp-mcp-Zq3v9LrT0kXy7wPa2sDf"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "http-security-test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@dataclass
class Served:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


def server_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_") or k == "MCP_SKILLS_DIR"}
    # Never called by these tests; a port nothing listens on.
    env.update({"MCP_GATEWAY_URL": "http://127.0.0.1:9", "MCP_ALLOW_WRITE": "false"})
    env.update(settings)
    return env


def run_server(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    # cwd: a directory without a `.env`, so only `env` configures the server.
    log = (cwd / "mcp-svc.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_svc", "--transport", "streamable-http", *args],
        env=env,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def serve(tmp: Path, host: str, **settings: str) -> Iterator[Served]:
    # cwd: a directory without a `.env`, so only the settings given configure the server.
    with http_server([], server_env(**settings), tmp, host=host) as (url, port, process, log):
        yield Served(url, port, process, log)


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The token as a secret mount gives it: a file, here with a trailing newline."""
    path = tmp_path_factory.mktemp("secrets") / "mcp_http_token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="module")
def exposed(token_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The container's shape: every interface (0.0.0.0), the token from a file, default
    allow-lists (the loopback names; a wildcard bind adds none)."""
    yield from serve(
        tmp_path_factory.mktemp("exposed"), "0.0.0.0", MCP_HTTP_TOKEN_FILE=str(token_file)
    )


def post_initialize(served: Served, **headers: str) -> httpx.Response:
    with httpx.Client(timeout=10) as http:
        return http.post(served.url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})


def sdk_client(url: str, **headers: str) -> Client:
    """The MCP SDK's own streamable-HTTP client, sending `headers` on every request."""
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=30))
    return Client(streamable_http_client(url, http_client=http))


# ---- refusing to start --------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "mcp.example.internal"])
def test_a_non_loopback_bind_without_a_token_refuses_to_start(host: str, workdir: Path) -> None:
    port = free_port()
    process = run_server(["--host", host, "--port", str(port)], server_env(), workdir)
    assert process.wait(timeout=30) == 2
    message = (workdir / "mcp-svc.log").read_text()
    assert f"refusing to serve streamable HTTP on {host} without a bearer token" in message
    assert "MCP_HTTP_TOKEN_FILE" in message and "MCP_HTTP_TOKEN" in message
    assert "Traceback" not in message
    with pytest.raises(TimeoutError):
        wait_for_port("127.0.0.1", port, timeout=0.3)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"MCP_HTTP_TOKEN_FILE": "{dir}/missing"},
            "MCP_HTTP_TOKEN_FILE={dir}/missing cannot be read",
        ),
        ({"MCP_HTTP_TOKEN_FILE": "{dir}/empty"}, "MCP_HTTP_TOKEN_FILE={dir}/empty is empty"),
        (
            {"MCP_HTTP_TOKEN_FILE": "{dir}/token", "MCP_HTTP_TOKEN": TOKEN},
            "both MCP_HTTP_TOKEN_FILE and MCP_HTTP_TOKEN are set",
        ),
        ({"MCP_HTTP_TOKEN": "   "}, "without a bearer token"),
    ],
)
def test_a_token_setting_it_cannot_use_stops_the_start(
    settings: dict[str, str], expected: str, workdir: Path
) -> None:
    (workdir / "empty").write_text("\n")
    (workdir / "token").write_text(TOKEN)
    env = server_env(**{k: v.format(dir=workdir) for k, v in settings.items()})
    process = run_server(["--host", "0.0.0.0", "--port", str(free_port())], env, workdir)
    assert process.wait(timeout=30) == 2
    assert expected.format(dir=workdir) in (workdir / "mcp-svc.log").read_text()


def test_the_app_itself_refuses_a_non_loopback_bind_without_a_token() -> None:
    """Whoever embeds the server (run_streamable_http_async) meets the same rule."""
    server = build_server(McpSettings(gateway_token=None))
    with pytest.raises(McpConfigError, match="MCP_HTTP_TOKEN_FILE"):
        server.streamable_http_app(host="0.0.0.0")
    server.streamable_http_app(host="127.0.0.1")  # loopback: no token needed


# ---- the bearer token -----------------------------------------------------------------------


def test_without_the_token_a_request_is_401(exposed: Served) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer{TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
    ):
        answer = post_initialize(exposed, **headers)
        assert answer.status_code == 401, headers
        # A bare challenge: no resource_metadata, which would send an MCP client looking for an
        # OAuth authorization server this server does not have.
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        error = answer.json()["error"]
        assert error["code"] == "unauthorized"
        assert error["hint"].startswith("set the MCP HTTP token: Authorization: Bearer <token>")
        assert TOKEN not in answer.text


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ],
)
def test_oauth_discovery_finds_nothing_and_is_told_what_to_send(exposed: Served, path: str) -> None:
    with httpx.Client(timeout=10) as http:
        answer = http.get(f"http://127.0.0.1:{exposed.port}{path}")
    assert answer.status_code == 404, answer.text
    error = answer.json()["error"]
    assert "static bearer token" in error["message"]
    assert error["hint"].startswith("set the MCP HTTP token: Authorization: Bearer <token>")


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_scheme_is_case_insensitive(exposed: Served, scheme: str) -> None:
    assert post_initialize(exposed).status_code == 401  # the token is asked for
    answer = post_initialize(exposed, Authorization=f"{scheme} {TOKEN}")
    assert answer.status_code == 200, answer.text


async def test_the_sdk_client_with_a_lowercase_bearer_lists_the_tools(exposed: Served) -> None:
    async with sdk_client(exposed.url, Authorization=f"bearer {TOKEN}") as client:
        tools = (await client.list_tools()).tools
    assert {"list_clusters", "get_operation"} <= {t.name for t in tools}


# ---- Host and Origin -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "localhost.evil.example:{port}", "localhost:1.evil"],
)
def test_a_foreign_host_is_403_even_with_the_token(exposed: Served, host: str) -> None:
    answer = post_initialize(
        exposed, Host=host.format(port=exposed.port), Authorization=f"Bearer {TOKEN}"
    )
    assert answer.status_code == 403, answer.text
    error = answer.json()["error"]
    assert error["code"] == "forbidden" and error["header"] == "Host"
    assert "Host" in error["message"] and "MCP_HTTP_ALLOWED_HOSTS" in error["hint"]


def test_the_host_is_checked_before_the_token(exposed: Served) -> None:
    answer = post_initialize(exposed, Host="evil.example")
    assert answer.status_code == 403 and answer.json()["error"]["header"] == "Host"


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://evil.example:{port}", "null", "http://localhost.evil"]
)
def test_a_foreign_origin_is_403(exposed: Served, origin: str) -> None:
    answer = post_initialize(
        exposed, Origin=origin.format(port=exposed.port), Authorization=f"Bearer {TOKEN}"
    )
    assert answer.status_code == 403, answer.text
    error = answer.json()["error"]
    assert error["code"] == "forbidden" and error["header"] == "Origin"
    assert "MCP_HTTP_ALLOWED_ORIGINS" in error["hint"]


async def test_a_foreign_origin_is_refused_to_the_sdk_client_too(exposed: Served) -> None:
    client = sdk_client(exposed.url, Authorization=f"Bearer {TOKEN}", Origin="http://evil.example")
    with pytest.raises(Exception):  # noqa: B017 - whatever the SDK raises for an HTTP 403
        async with client:
            await client.list_tools()


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:{port}", "http://localhost:5173"),
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}"),
        ("[::1]:{port}", "https://[::1]:8443"),
        ("LOCALHOST:{port}", "HTTP://LocalHost:3000"),
    ],
)
def test_an_allowed_host_and_origin_work(exposed: Served, host: str, origin: str) -> None:
    answer = post_initialize(
        exposed,
        Host=host.format(port=exposed.port),
        Origin=origin.format(port=exposed.port),
        Authorization=f"Bearer {TOKEN}",
    )
    assert answer.status_code == 200, answer.text


async def test_the_sdk_client_from_an_allowed_origin_works(exposed: Served) -> None:
    headers = {"Authorization": f"bearer {TOKEN}", "Origin": "http://localhost:6274"}
    async with sdk_client(exposed.url, **headers) as client:
        tools = (await client.list_tools()).tools
    assert tools


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Loopback with explicit allow-lists and the token by value: the lists replace the
    defaults, in the SDK's transport as in front of it."""
    yield from serve(
        tmp_path_factory.mktemp("named"),
        "127.0.0.1",
        MCP_HTTP_TOKEN=TOKEN,
        MCP_HTTP_ALLOWED_HOSTS="mcp.internal, localhost",
        MCP_HTTP_ALLOWED_ORIGINS="https://console.example.com",
    )


def test_configured_allow_lists_replace_the_defaults(named: Served) -> None:
    auth = f"Bearer {TOKEN}"
    for host, origin, status in [
        ("mcp.internal:{port}", None, 200),
        ("mcp.internal", "https://console.example.com", 200),
        ("localhost:{port}", "https://console.example.com", 200),
        ("127.0.0.1:{port}", None, 403),  # not listed any more
        ("mcp.internal:{port}", "http://localhost:5173", 403),  # origins listed: only those
        ("mcp.internal:{port}", "https://console.example.com:8443", 403),  # an origin is whole
    ]:
        headers = {"Host": host.format(port=named.port), "Authorization": auth}
        if origin:
            headers["Origin"] = origin
        answer = post_initialize(named, **headers)
        assert answer.status_code == status, (host, origin, answer.text)


async def test_the_token_by_value_takes_a_lowercase_scheme(named: Served) -> None:
    host = f"localhost:{named.port}"
    assert post_initialize(named, Host=host).status_code == 401
    assert post_initialize(named, Host=host, Authorization=f"bearer {TOKEN}").status_code == 200
    headers = {"Authorization": f"bearer {TOKEN}", "Host": host}
    async with sdk_client(named.url, **headers) as client:
        assert (await client.list_tools()).tools


async def test_the_sdk_client_by_a_listed_name_works(named: Served) -> None:
    # The client connects to 127.0.0.1 but names the server mcp.internal, as a proxy would.
    headers = {"Authorization": f"BEARER {TOKEN}", "Host": f"mcp.internal:{named.port}"}
    async with sdk_client(named.url, **headers) as client:
        assert (await client.list_tools()).tools


# ---- the pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    if loopback:
        require_http_token(host, None)
    else:
        with pytest.raises(McpConfigError):
            require_http_token(host, None)
    require_http_token(host, TOKEN)


@pytest.mark.parametrize(
    ("value", "credentials"),
    [
        (b"Bearer abc", b"abc"),
        (b"bearer abc", b"abc"),
        (b"BEARER   abc", b"abc"),
        (b"Bearer abc ", b"abc"),
        (b"Bearer", None),
        (b"Bearer ", None),
        (b"Bearerabc", None),
        (b"Basic abc", None),
        (b"Bearer a b", None),
        (b"Bearer \xff", None),
    ],
)
def test_bearer_credentials(value: bytes, credentials: bytes | None) -> None:
    assert bearer_credentials(value) == credentials


def test_the_default_allow_lists() -> None:
    wildcard = transport_security("0.0.0.0")
    assert wildcard.enable_dns_rebinding_protection
    assert set(wildcard.allowed_hosts) == {
        "localhost",
        "localhost:*",
        "127.0.0.1",
        "127.0.0.1:*",
        "[::1]",
        "[::1]:*",
    }
    assert "http://localhost:*" in wildcard.allowed_origins
    assert "https://[::1]" in wildcard.allowed_origins
    one = transport_security("10.0.0.5")
    assert {"10.0.0.5", "10.0.0.5:*"} <= set(one.allowed_hosts)
    assert "http://10.0.0.5:*" in one.allowed_origins
    assert "[fe80::1]:*" in transport_security("fe80::1").allowed_hosts
    listed = transport_security("0.0.0.0", ["mcp.internal:8443"], ["https://ui.example/"])
    assert listed.allowed_hosts == ["mcp.internal:8443"]
    assert listed.allowed_origins == ["https://ui.example"]


def test_the_token_settings(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(f"  {TOKEN}\n")
    assert McpSettings(http_token_file=secret).resolved_http_token() == TOKEN
    assert McpSettings(http_token=TOKEN).resolved_http_token() == TOKEN
    assert McpSettings(http_token="").resolved_http_token() is None
    assert McpSettings().resolved_http_token() is None
    secret.write_text("two words")
    with pytest.raises(McpConfigError, match="space"):
        McpSettings(http_token_file=secret).resolved_http_token()
    listed: Any = "a.example, B.example:8443,,"
    settings = McpSettings(http_allowed_hosts=listed)
    assert settings.http_allowed_hosts == ["a.example", "b.example:8443"]
