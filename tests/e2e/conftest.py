"""End-to-end fixtures: the real services as processes, against the simulated AWS."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hyperpilot.infra import NatsServer, Postgres, free_port, start_nats
from hyperpilot.stack import Stack
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import simulated_aws
from tests.conftest import TEMPLATE

TOKEN = "hp_e2e_admin_token"

# The simulated AWS with the Kubernetes emulator behind it: every EKS cluster gets an API server.
sim_aws = simulated_aws(profile="fast", kube=KubeWorld(get_profile("fast")))


class Client:
    """A REST client of the gateway with the admin token."""

    def __init__(self, base_url: str, token: str = TOKEN) -> None:
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        return self.http.post(path, json=body, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.delete(path, **kwargs)

    def wait(self, operation_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            op: dict[str, Any] = self.get(
                f"/api/v1/operations/{operation_id}", params={"wait": 5}
            ).json()
            if op["status"] in ("succeeded", "failed", "cancelled", "noop"):
                return op
            assert time.monotonic() < deadline, f"operation {operation_id} still {op['status']}"


class RunningStack:
    def __init__(self, stack: Stack, nats: NatsServer) -> None:
        self.stack = stack
        self.nats = nats
        self.client = Client(stack.url)


@contextlib.contextmanager
def _stack(
    state_dir: Path,
    database_url: str,
    sim: SimulatedAws,
    env: dict[str, str] | None = None,
    prometheus: bool = False,
) -> Iterator[RunningStack]:
    nats = start_nats(state_dir / "nats")
    stack = Stack(
        state_dir=state_dir / "stack",
        gateway_port=free_port(),
        database_url=database_url,
        nats_url=nats.url,
        aws_endpoint_url=sim.endpoint_url,
        admin_token=TOKEN,
        extra_env={
            "ACK_WAIT_SECONDS": "2",
            "LOG_FORMAT": "console",
            "POLL_MAX_SECONDS": "0.5",
            # a HyperPod creation's wait ends on its event; a lost one costs 5 s here, not 60
            "POLL_MAX_EVENTED_SECONDS": "5",
            **(env or {}),
        },
        prometheus=prometheus,
    )
    stack.start_infra()
    stack.start_services()
    try:
        yield RunningStack(stack, nats)
    finally:
        stack.stop()
        nats.stop()


@pytest.fixture
def running_stack(
    tmp_path: Path, database_url: str, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    """gateway + cluster-svc as processes, a fresh database and NATS, the shared simulated AWS."""
    with _stack(tmp_path, database_url, sim_aws) as running:
        yield running


@pytest.fixture(scope="module")
def module_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: Postgres, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    """One stack for a module whose tests leave nothing behind (or don't mind each other)."""
    database_url = postgres.create_database(f"m{time.time_ns()}", template=TEMPLATE)
    with _stack(tmp_path_factory.mktemp("stack"), database_url, sim_aws) as running:
        yield running


def unique(prefix: str) -> str:
    return f"{prefix}-{time.time_ns() % 10**12}"


def cluster_spec(api: Client, name: str, count: int = 2) -> dict[str, Any]:
    """A decision-grade spec for `name`: the first zone and an instance type offered there."""
    deadline = time.monotonic() + 30
    while (answer := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
        # cluster-svc answers inspect queries once it has connected to NATS
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)
    zone = answer.json()[0]["zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
    ).json()
    types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
    instance_type = "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0]
    return {
        "name": name,
        "availability_zone_id": zone,
        "instance_groups": [{"name": "gpu", "instance_type": instance_type, "count": count}],
    }


@pytest.fixture(scope="module")
def created_cluster(module_stack: RunningStack) -> Iterator[tuple[RunningStack, str]]:
    """A cluster built through REST once per module (deleted afterwards): (stack, cluster name)."""
    api = module_stack.client
    name = unique("mod")
    op = api.post("/api/v1/clusters", cluster_spec(api, name)).json()["operation_id"]
    done = api.wait(op, timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield module_stack, name
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)
