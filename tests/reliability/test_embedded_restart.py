"""The embedded stack (`hyperpilot up`) supervises its infrastructure too: kill -9 of its NATS
server and of its PostgreSQL postmaster, and both come back (same port, same socket, same data),
`hyperpilot status` shows the new live PIDs, and an operation submitted afterwards completes.

Only the processes this test's stack started are killed: each PID is checked to be a nats-server
on the stack's own store directory and a postgres on its own data directory, never the machine's
services on 4222/5432. Slow: run with `make reliability`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import psutil
import pytest

from hyperpilot.infra import free_port

TOKEN = "hp_reliability_admin_token"


def _hyperpilot(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPERPILOT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "hyperpilot", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _state(home: Path) -> dict[str, Any]:
    path = home / "stack.json"
    if not path.exists():
        return {}
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError:  # being rewritten
        return {}
    return state


class EmbeddedStack:
    def __init__(self, home: Path, port: int, process: subprocess.Popen[bytes]) -> None:
        self.home = home
        self.url = f"http://127.0.0.1:{port}"
        self.process = process
        self.http = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )

    def processes(self) -> dict[str, int | None]:
        processes: dict[str, int | None] = _state(self.home).get("processes", {})
        return processes


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedStack]:
    # A short home: PostgreSQL's socket path must fit in 107 bytes.
    home = Path(f"/tmp/hp-rel-{uuid.uuid4().hex[:8]}")
    port = free_port()
    log = open(tmp_path / "up.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "hyperpilot", "up", "--port", str(port)],
        env={
            **os.environ,
            "HYPERPILOT_HOME": str(home),
            "HYPERPILOT_ADMIN_TOKEN": TOKEN,
            "POLL_MAX_SECONDS": "0.5",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    stack = EmbeddedStack(home, port, process)
    try:
        deadline = time.monotonic() + 180
        while "nats" not in stack.processes() or "gateway" not in stack.processes():
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "up.log").read_text()
            time.sleep(0.2)
        yield stack
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
        print((tmp_path / "up.log").read_text()[-4000:])
        subprocess.run(["rm", "-rf", str(home)], check=False)


def _ours(pid: int, what: str, directory: Path) -> None:
    """The process is the stack's own `what` (its cmdline names the stack's directory)."""
    cmdline = " ".join(psutil.Process(pid).cmdline())
    assert what in cmdline and str(directory) in cmdline, (pid, cmdline)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _status_pids(home: Path) -> dict[str, tuple[int, str]]:
    """`hyperpilot status`'s rows: name -> (pid, alive|DEAD)."""
    result = _hyperpilot(home, "status")
    assert result.returncode == 0, result.stdout + result.stderr
    rows: dict[str, tuple[int, str]] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] == "pid" and parts[2].isdigit():
            rows[parts[0]] = (int(parts[2]), parts[3])
    return rows


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_of_the_stacks_nats_and_postgres_both_come_back(embedded: EmbeddedStack) -> None:
    home = embedded.home
    before = embedded.processes()
    nats_pid, pg_pid = before["nats"], before["postgres"]
    assert nats_pid and pg_pid
    _ours(nats_pid, "nats-server", home / "nats")
    _ours(pg_pid, "postgres", home / "postgres")

    # status lists every process, infrastructure included, each with its live PID
    rows = _status_pids(home)
    expected = {"postgres", "nats", "sim", "gateway", "cluster-svc", "workload-svc"}
    assert expected <= set(rows), rows
    assert rows["nats"] == (nats_pid, "alive") and rows["postgres"] == (pg_pid, "alive")

    os.kill(nats_pid, signal.SIGKILL)
    os.kill(pg_pid, signal.SIGKILL)
    killed = time.monotonic()

    deadline = time.monotonic() + 120
    while True:
        now = embedded.processes()
        if (
            now.get("nats") not in (None, nats_pid)
            and now.get("postgres") not in (None, pg_pid)
            and _alive(now["nats"])
            and _alive(now["postgres"])
        ):
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.2)
    restarted = time.monotonic() - killed
    _ours(now["nats"], "nats-server", home / "nats")  # type: ignore[arg-type]
    _ours(now["postgres"], "postgres", home / "postgres")  # type: ignore[arg-type]

    rows = _status_pids(home)
    assert rows["nats"] == (now["nats"], "alive"), rows
    assert rows["postgres"] == (now["postgres"], "alive"), rows
    assert all(state == "alive" for _, state in rows.values()), rows

    # an operation submitted after the restart completes (503 + Retry-After while reconnecting)
    name = f"rel-{uuid.uuid4().hex[:12]}"
    key = str(uuid.uuid4())
    deadline = time.monotonic() + 120
    while True:
        answer = embedded.http.post(
            "/api/v1/storage/buckets", json={"name": name}, headers={"Idempotency-Key": key}
        )
        if answer.status_code == 202:
            break
        assert answer.status_code == 503 and "Retry-After" in answer.headers, answer.text
        assert time.monotonic() < deadline, answer.text
        time.sleep(float(answer.headers["Retry-After"]))
    operation_id = answer.json()["operation_id"]
    deadline = time.monotonic() + 120
    while (
        op := embedded.http.get(f"/api/v1/operations/{operation_id}", params={"wait": 5}).json()
    )["status"] not in ("succeeded", "failed", "cancelled", "noop"):
        assert time.monotonic() < deadline, op
    assert op["status"] == "succeeded", op
    state = _state(home)
    s3 = boto3.client("s3", endpoint_url=state["aws_endpoint_url"], region_name="us-east-1")
    s3.head_bucket(Bucket=name)  # the bucket exists in the simulated AWS
    print(f"nats and postgres back in {restarted:.1f}s after kill -9")
