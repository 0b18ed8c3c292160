"""The metrics route with a real Prometheus server (Debian's `prometheus`, started by the stack
as `hyperpilot up` starts it): two clusters with observability on, both scraped by the one
server through their API servers' pod proxy; a DCGM query through REST answers the emulator's
own values (read with kubectl from the exporter), named `source: prometheus`; the server holds
both clusters' series (asked directly), yet a viewer's query on one cluster's route answers that
cluster's only, and one that names the other cluster is refused."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hyperpilot.infra import prometheus_binary
from sim.aws import SimulatedAws
from tests.conftest import TEMPLATE
from tests.e2e.conftest import Client, RunningStack, _stack, cluster_spec, unique
from tests.e2e.test_cluster_lifecycle import _kubeconfig
from tests.e2e.test_features import _apply, _kubectl_items

# Two clusters scraped by a real Prometheus: in `make reliability`, so that `make test` stays
# under 30 minutes on 2 cores.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        prometheus_binary() is None,
        reason="no prometheus binary on PATH (`make prometheus` installs Debian's package)",
    ),
]

METRIC = "DCGM_FI_DEV_FB_FREE"  # constant while a GPU is idle: comparable across reads


@pytest.fixture(scope="module")
def module_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: Any, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    """The module's stack, with the Prometheus server `hyperpilot up` starts."""
    database_url = postgres.create_database(f"m{time.time_ns()}", template=TEMPLATE)
    with _stack(
        tmp_path_factory.mktemp("stack"), database_url, sim_aws, prometheus=True
    ) as running:
        assert running.stack.prometheus_server is not None
        yield running


@pytest.fixture(scope="module")
def observed(module_stack: RunningStack) -> Iterator[tuple[RunningStack, str, str]]:
    """Two clusters made through REST, observability on for both: (stack, one, other)."""
    api = module_stack.client
    names = [unique("prom"), unique("prom")]
    ops = [api.post("/api/v1/clusters", cluster_spec(api, n)).json()["operation_id"] for n in names]
    for op in ops:
        done = api.wait(op, timeout=240)
        assert done["status"] == "succeeded", done.get("error")
    for name in names:
        _apply(module_stack, name, {"observability": True})
    yield module_stack, names[0], names[1]
    for name in names:
        api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def _query(api: Client, cluster: str, **params: Any) -> Any:
    return api.get(f"/api/v1/clusters/{cluster}/metrics/query", params=params)


def _eventually(check: Any, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.5)


def _by_gpu(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(r["metric"]["Hostname"], r["metric"]["gpu"]): float(r["value"][1]) for r in rows}


def _exporter_values(kubeconfig: Path) -> dict[tuple[str, str], float]:
    """The dcgm-exporter pods' own answer, through kubectl's raw pod proxy GET."""
    kubectl = Path(sys.executable).parent / "kubectl"
    values: dict[tuple[str, str], float] = {}
    pods = _kubectl_items(
        kubeconfig,
        "pods",
        "-n",
        "hyperpod-observability",
        "-l",
        "app.kubernetes.io/name=dcgm-exporter",
    )
    for pod in pods:
        path = (
            f"/api/v1/namespaces/hyperpod-observability/pods/{pod['metadata']['name']}:9400"
            "/proxy/metrics"
        )
        out = subprocess.run(
            [str(kubectl), "--kubeconfig", str(kubeconfig), "get", "--raw", path],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        for family in text_string_to_metric_families(out.stdout):
            for sample in family.samples:
                if sample.name == METRIC:
                    values[(sample.labels["Hostname"], sample.labels["gpu"])] = sample.value
    return values


def test_a_dcgm_query_answers_the_emulators_values_from_prometheus(
    observed: tuple[RunningStack, str, str], sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    stack, name, _ = observed
    answer = _eventually(
        lambda: (
            (a := _query(stack.client, name, query=METRIC)).status_code == 200
            and len(a.json()["data"]["result"]) > 0
            and a.json()
        )
    )
    assert answer["source"] == "prometheus", answer
    assert answer["engine"] == f"prometheus at {stack.stack.prometheus_server.url}"  # type: ignore[union-attr]
    assert answer["evaluated"] == f'{METRIC}{{cluster="{name}"}}'
    emulated = _exporter_values(_kubeconfig(sim_aws, name, tmp_path / "config"))
    assert emulated and _by_gpu(answer["data"]["result"]) == emulated
    assert {r["metric"]["cluster"] for r in answer["data"]["result"]} == {name}
    assert {r["metric"]["job"] for r in answer["data"]["result"]} == {"dcgm-exporter"}
    # a range over the last minute, evaluated by Prometheus too
    ranged = _query(stack.client, name, query=f"max({METRIC})", window="1m", step="10s").json()
    assert ranged["source"] == "prometheus" and ranged["data"]["resultType"] == "matrix"
    assert float(ranged["data"]["result"][0]["values"][-1][1]) == max(emulated.values())


def test_a_viewer_reads_only_the_routes_cluster_though_prometheus_holds_both(
    observed: tuple[RunningStack, str, str],
) -> None:
    stack, name, other = observed
    server = stack.stack.prometheus_server
    assert server is not None
    both = _eventually(
        lambda: (
            (
                found := {
                    r["metric"]["cluster"]
                    for r in httpx.get(
                        f"{server.url}/api/v1/query", params={"query": METRIC}
                    ).json()["data"]["result"]
                }
            )
            >= {name, other}
            and found
        )
    )
    assert {name, other} <= both  # the server itself has both clusters' series
    admin = stack.client
    token = admin.post("/api/v1/tokens", {"name": "prom-viewer", "role": "viewer"}).json()["token"]
    viewer = Client(str(admin.http.base_url), token)
    for query in (METRIC, f"sum by (cluster) ({METRIC})", f"count({METRIC}) > 0"):
        answer = _query(viewer, name, query=query)
        assert answer.status_code == 200, answer.text
        rows = answer.json()["data"]["result"]
        assert rows and answer.json()["source"] == "prometheus"
        if "by (cluster)" in query or query == METRIC:
            assert {r["metric"]["cluster"] for r in rows} == {name}, rows
    # count() drops labels: the scope is in the evaluated query, so it counts one cluster's GPUs
    alone = _query(viewer, name, query=f"count({METRIC})").json()["data"]["result"]
    every = httpx.get(f"{server.url}/api/v1/query", params={"query": f"count({METRIC})"}).json()
    assert float(alone[0]["value"][1]) < float(every["data"]["result"][0]["value"][1])
    for query in (f'{METRIC}{{cluster="{other}"}}', f'{METRIC}{{cluster=~".+"}}'):
        refused = _query(viewer, name, query=query)
        assert refused.status_code == 403, refused.text
        assert "other than" in refused.json()["error"]["message"]
