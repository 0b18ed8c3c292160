"""Service processes keep aiohttp and rich out (shared/slim.py) and still work without them.

The end-to-end tests run every service as `python -m <service>`, so the bus and the logging
there run with both kept out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from shared.config import Settings

ROOT = Path(__file__).resolve().parents[2]
BUS_SERVICES = ("gateway", "cluster_svc", "workload_svc", "inference_svc")


def _first_import(path: Path) -> str:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Import):
            return node.names[0].name
        if isinstance(node, ast.ImportFrom):
            return node.module or ""
    return ""


@pytest.mark.parametrize("package", BUS_SERVICES)
def test_every_service_imports_slim_first(package: str) -> None:
    (main,) = ROOT.glob(f"services/*/{package}/__main__.py")
    assert _first_import(main) == "shared.slim"


PROBE = """
import sys
import shared.slim
import structlog, nats
from nats.aio.transport import WebSocketTransport
import gateway.app, cluster_svc.bootstrap, workload_svc.bootstrap, inference_svc.bootstrap
from shared.logging import configure_logging, get_logger

loaded = sorted(m for m in ("aiohttp", "rich", "httpx", "joserfc") if sys.modules.get(m))
print("loaded", loaded)

configure_logging("INFO", "console")
try:
    raise RuntimeError("boom")
except RuntimeError:
    get_logger("probe").exception("caught")

"""


def test_services_run_without_aiohttp_and_rich() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "loaded []" in done.stdout
    # structlog's console renderer falls back to a plain traceback without rich.
    assert "RuntimeError: boom" in done.stdout + done.stderr


@pytest.mark.parametrize("url", ["nats://127.0.0.1:4222", "tls://nats.internal:4222"])
def test_nats_url_over_tcp_is_accepted(url: str) -> None:
    assert Settings(nats_url=url).nats_url == url


def test_nats_websocket_url_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(nats_url="ws://127.0.0.1:8080")
    message = str(raised.value)
    assert "nats_url" in message
    assert "must start with nats:// or tls://" in message
    assert "client port" in message
