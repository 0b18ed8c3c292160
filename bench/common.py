"""What every benchmark shares: a running stack in the simulated world, and recording results."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
TOKEN = "hp_bench_admin_token"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
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
def simulated_stack(extra_env: dict[str, str] | None = None) -> Iterator[Any]:
    """PostgreSQL, NATS, the simulated AWS + Kubernetes and the services, as for `make up`."""
    from hyperpilot.infra import free_port
    from hyperpilot.stack import Stack
    from sim.aws import SimulatedAws
    from sim.k8s import KubeWorld
    from sim.profile import get_profile

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    profile = get_profile("fast")
    sim = SimulatedAws(profile, kube=KubeWorld(profile)).start()
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
