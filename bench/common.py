"""What every benchmark shares: a running stack in the simulated world, and recording results."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
TOKEN = "hp_bench_admin_token"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def record(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    result = {
        **result,
        "machine": machine(),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@contextlib.contextmanager
def simulated_stack(
    extra_env: dict[str, str] | None = None, instrument: Callable[[Any], None] | None = None
) -> Iterator[Any]:
    """PostgreSQL, NATS, the simulated AWS + Kubernetes and the services, as for `make up`.

    `instrument` gets the simulated AWS before it starts serving (to observe it in-process)."""
    from hyperpilot.infra import free_port
    from hyperpilot.stack import Stack
    from sim.aws import SimulatedAws
    from sim.k8s import KubeWorld
    from sim.profile import get_profile

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    profile = get_profile("fast")
    sim = SimulatedAws(profile, kube=KubeWorld(profile))
    if instrument is not None:
        instrument(sim)
    sim.start()
    state = Path(tempfile.mkdtemp(prefix="hp-bench-"))
    stack = Stack(
        state_dir=state,
        gateway_port=free_port(),
        aws_endpoint_url=sim.endpoint_url,
        admin_token=TOKEN,
        extra_env={"LOG_LEVEL": "WARNING", **(extra_env or {})},
    )
    try:
        stack.start()
        yield stack, sim
    finally:
        stack.stop()
        sim.stop()


def stage_seconds(start: str | None, end: str | None) -> float:
    """Seconds between two ISO timestamps of the operation store."""
    from datetime import datetime

    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def rss_mb(pid: int) -> float:
    """VmRSS of a process in MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pss_mb(pid: int) -> float:
    """Proportional set size in MB: shared pages split between the processes sharing them."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """Every descendant of `pid` (e.g. PostgreSQL's backends under its postmaster)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            child = int(entry.name)
            found.extend([child, *children(child)])
    return found


def postgres_pids(stack: Any) -> list[int]:
    """The postmaster of the stack's private PostgreSQL and its backends."""
    if stack.postgres is None:
        return []
    pidfile = Path(stack.postgres.data_dir) / "postmaster.pid"
    try:
        postmaster = int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return []
    return [postmaster, *children(postmaster)]


@contextlib.contextmanager
def embedded_stack(
    services: tuple[tuple[str, str], ...] | None = None,
    *,
    with_sim: bool = True,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Any]:
    """The stack exactly as `make up` runs it (the simulated world in its own process), or the
    gateway alone with no AWS endpoint behind it (`with_sim=False`)."""
    from hyperpilot.infra import free_port
    from hyperpilot.stack import SERVICES, Stack

    state = Path(tempfile.mkdtemp(prefix="hp-bench-"))
    stack = Stack(
        state_dir=state,
        gateway_port=free_port(),
        aws_endpoint_url=None if with_sim else "http://127.0.0.1:9",
        admin_token=TOKEN,
        services=services or SERVICES,
        extra_env={
            "LOG_LEVEL": "WARNING",
            # One principal drives the whole load: lift its mutation rate limit.
            "MUTATIONS_PER_MINUTE": "100000000",
            "MUTATION_BURST": "100000",
            **(extra_env or {}),
        },
    )
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
