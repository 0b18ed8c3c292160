"""The real stack against the simulated AWS, outside pytest: for screenshots and local runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from hyperpilot.infra import start_postgres
from shared.migrate import migrate
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import aws_env
from tests.e2e.conftest import RunningStack, _stack


@contextlib.contextmanager
def simulated_stack(profile: str = "fast") -> Iterator[tuple[RunningStack, SimulatedAws]]:
    """PostgreSQL, NATS, the simulated AWS (with its Kubernetes) and the services, torn down after:
    (the stack, the simulated AWS)."""
    root = Path(tempfile.mkdtemp(prefix="hp-ui-"))
    postgres = start_postgres(root / "pg")
    sim = SimulatedAws(get_profile(profile), kube=KubeWorld(get_profile(profile))).start()
    saved = {key: os.environ.get(key) for key in aws_env(sim)}
    os.environ.update(aws_env(sim))
    try:
        dsn = postgres.create_database(f"ui{time.time_ns()}")
        asyncio.run(migrate(dsn))
        with _stack(root / "stack", dsn, sim) as running:
            yield running, sim
    finally:
        sim.stop()
        postgres.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)
