"""MCP fixtures: the real stack (tests/e2e fixtures) and the MCP service as a process beside it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hyperpilot.infra import free_port, wait_for_port
from tests.e2e.conftest import RunningStack, module_stack, sim_aws  # noqa: F401

MCP_TOKEN_NAME = "mcp-agent"


@dataclass
class McpProcess:
    url: str
    token: str
    process: subprocess.Popen[bytes]


def mcp_env(stack: RunningStack, token: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "MCP_GATEWAY_URL": stack.stack.url,
        "MCP_GATEWAY_TOKEN": token,
        "MCP_ALLOW_WRITE": "false",
    }
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def mcp_token(module_stack: RunningStack) -> str:  # noqa: F811
    """An operator token for the MCP service, created by the admin through REST."""
    answer = module_stack.client.post(
        "/api/v1/tokens", {"name": MCP_TOKEN_NAME, "role": "operator"}
    )
    assert answer.status_code == 201, answer.text
    token: str = answer.json()["token"]
    return token


@contextmanager
def http_server(
    args: list[str], env: dict[str, str], workdir: Path, host: str = "127.0.0.1"
) -> Iterator[tuple[str, int, subprocess.Popen[bytes], Path]]:
    """`python -m mcp_svc --transport streamable-http` on a free port, its output in
    `workdir/mcp-svc.log` (printed if it does not come up); stopped on exit. Yields the /mcp
    URL, the port, the process and the log."""
    port = free_port()
    log = workdir / "mcp-svc.log"
    where = ["--transport", "streamable-http", "--host", host, "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_svc", *where, *args],
            env=env,
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port("127.0.0.1", port, timeout=30)
        yield f"http://127.0.0.1:{port}/mcp", port, process, log
    except Exception:
        print(log.read_text())
        raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def mcp_server(
    module_stack: RunningStack,  # noqa: F811
    mcp_token: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[McpProcess]:
    """`python -m mcp_svc --transport streamable-http --allow-write` on a free port."""
    workdir = Path(tmp_path_factory.mktemp("mcp"))
    with http_server(["--allow-write"], mcp_env(module_stack, mcp_token), workdir) as served:
        yield McpProcess(served[0], mcp_token, served[2])
