"""Fixtures: one emulated cluster per test module, reached over HTTPS by unmodified clients."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from sim.k8s import ApiServer, KubeWorld
from sim.profile import get_profile

KUBECTL = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kubectl")


@pytest.fixture(scope="session")
def world() -> Iterator[KubeWorld]:
    w = KubeWorld(get_profile("fast"))
    yield w
    w.close()


@pytest.fixture(scope="module")
def cluster(world: KubeWorld, request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    name = "t-" + request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")
    world.start_cluster(name)
    server = world.api_server(name)
    yield server
    assert not server.internal_errors, server.internal_errors
    world.stop_cluster(name)


@pytest.fixture(scope="module")
def kubeconfig(cluster: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(yaml.safe_dump(cluster.kubeconfig()))
    return path


@pytest.fixture(scope="module")
def api_client(cluster: ApiServer) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config_dict(cluster.kubeconfig())
    yield api
    api.close()


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def apps(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture(scope="module")
def kubectl(kubeconfig: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(
        *args: str, timeout: float = 30, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result

    return run


def eventually(check: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy (and return that) or fail."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except AssertionError:
            last = None
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


def deployment(
    name: str, replicas: int = 1, image: str = "nginx:1.27", **pod: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}], **pod},
            },
        },
    }
