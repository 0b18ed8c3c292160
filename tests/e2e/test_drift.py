"""Drift: a change made behind Hyperpilot's back (an instance group scaled directly in the
simulated AWS, a dependency's Deployment deleted with kubectl) becomes a DriftDetected event
within the watcher's interval, the cluster's record shows it, and both ways out work: restore
the recorded value (a normal operation, dry run first) and accept the actual value."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from cluster_svc.domain.components.keda import NAMESPACE as KEDA_NAMESPACE
from cluster_svc.domain.dependencies import dependency_set
from cluster_svc.domain.instance_groups.described import group_request
from hyperpilot.cli import app as cli_app
from hyperpilot.infra import Postgres
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.conftest import TEMPLATE
from tests.e2e.conftest import TOKEN, Client, RunningStack, _stack, cluster_spec, unique

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

WATCH_SECONDS = 1.0


@pytest.fixture(scope="module")
def drift_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: Postgres, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    """A stack whose drift watcher looks every second, with a budget that allows it."""
    database_url = postgres.create_database(f"d{time.time_ns()}", template=TEMPLATE)
    env = {"DRIFT_WATCH_SECONDS": str(WATCH_SECONDS), "DRIFT_AWS_CALLS_PER_CLUSTER_HOUR": "100000"}
    with _stack(tmp_path_factory.mktemp("stack"), database_url, sim_aws, env=env) as running:
        yield running


def _all_events(api: Client, after: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while rows := api.get("/api/v1/events", params={"after": after, "limit": 1000}).json():
        found += rows
        after = int(rows[-1]["seq"])
    return found


def _events(api: Client, after: int, kind: str) -> list[dict[str, Any]]:
    return [e for e in _all_events(api, after) if e["type"] == kind]


def _last_seq(api: Client) -> int:
    return max((int(e["seq"]) for e in _all_events(api, 0)), default=0)


def _wait_event(api: Client, after: int, kind: str, field: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = [e for e in _events(api, after, kind) if e["payload"]["field"] == field]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"no {kind} for {field} within {timeout} s"
        time.sleep(0.2)


def _scale(sim_aws: SimulatedAws, hyperpod: str, group: str, count: int) -> None:
    sagemaker = aws_client(sim_aws, "sagemaker")
    described = sagemaker.describe_cluster(ClusterName=hyperpod)
    details = next(g for g in described["InstanceGroups"] if g["InstanceGroupName"] == group)
    request = {
        **group_request(json.loads(json.dumps(details, default=str))),
        "InstanceCount": count,
    }
    sagemaker.update_cluster(ClusterName=hyperpod, InstanceGroups=[request])


def _kubeconfig(sim_aws: SimulatedAws, cluster: str, path: Path) -> Path:
    import boto3

    from cluster_svc.adapters.k8s import eks_token

    described = aws_client(sim_aws, "eks").describe_cluster(name=cluster)["cluster"]
    token = eks_token(boto3.session.Session(region_name="us-east-1"), cluster, "us-east-1")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": described["endpoint"],
                    "certificate-authority-data": described["certificateAuthority"]["data"],
                },
            }
        ],
        "users": [{"name": "me", "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "me"}}],
        "current-context": cluster,
    }
    path.write_text(json.dumps(config))
    return path


def _kubectl(config: Path, *args: str) -> str:
    kubectl = Path(sys.executable).parent / "kubectl"
    binary = str(kubectl) if kubectl.exists() else "kubectl"
    out = subprocess.run(
        [binary, "--kubeconfig", str(config), *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_drift_is_detected_shown_restored_and_accepted(
    drift_stack: RunningStack, sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    api = drift_stack.client
    name = unique("drift")
    spec = cluster_spec(api, name, count=1)
    op = api.post("/api/v1/clusters", spec).json()["operation_id"]
    assert api.wait(op, timeout=240)["status"] == "succeeded"
    group = spec["instance_groups"][0]["name"]

    # Idle: the watcher observes, finds nothing, and says what an observation costs in AWS.
    deadline = time.monotonic() + 30
    while (drift := api.get(f"/api/v1/clusters/{name}/drift").json())["observations"] < 2:
        assert time.monotonic() < deadline, drift
        time.sleep(0.2)
    assert drift["drifted"] is False and drift["differences"] == []
    addons = [c for c in dependency_set(name, "us-east-1") if c.kind == "eks-addon"]
    # DescribeCluster, one DescribeAddon per add-on, one HeadBucket for the storage claim s3-claim
    assert drift["aws_calls_last_observation"] == 1 + len(addons) + 1

    # 1. A group scaled directly in AWS: detected within the interval, shown on the cluster.
    seq = _last_seq(api)
    _scale(sim_aws, name, group, 3)
    started = time.monotonic()
    event = _wait_event(api, seq, "DriftDetected", f"instance_groups.{group}.count", 10)
    assert time.monotonic() - started < 10 * WATCH_SECONDS
    assert event["payload"]["recorded"] == 1 and event["payload"]["actual"] == 3
    described = api.get(f"/api/v1/clusters/{name}").json()
    assert described["drifted"] is True
    assert [d["field"] for d in described["drift"]] == [f"instance_groups.{group}.count"]
    assert described["instance_groups"][0]["count"] == 1  # the record is not rewritten by itself

    # Restore the recorded value: dry run first (the plan from actual state), then the operation.
    field = f"instance_groups.{group}.count"
    planned = api.post(
        f"/api/v1/clusters/{name}/drift/restore", {"field": field}, params={"dry_run": "true"}
    )
    assert planned.status_code == 200, planned.text
    assert planned.json()["plan"]["diff"]["count"] == {"actual": 3, "requested": 1}
    restored = api.post(f"/api/v1/clusters/{name}/drift/restore", {"field": field})
    assert restored.status_code == 202, restored.text
    assert api.wait(restored.json()["operation_id"], timeout=120)["status"] == "succeeded"
    _wait_event(api, seq, "DriftResolved", field, 20)
    count = aws_client(sim_aws, "sagemaker").describe_cluster(ClusterName=name)["InstanceGroups"]
    assert count[0]["TargetCount"] == 1

    # 2. Scaled again, and this time the actual value is accepted into the record.
    seq = _last_seq(api)
    _scale(sim_aws, name, group, 2)
    _wait_event(api, seq, "DriftDetected", field, 10)
    refused = api.post(f"/api/v1/clusters/{name}/drift/accept", {"fields": ["components.nope"]})
    assert refused.status_code == 422 and "not drifted" in refused.text
    accepted = api.post(f"/api/v1/clusters/{name}/drift/accept", {"fields": [field]})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["accepted"][field] == {"recorded": 1, "actual": 2}
    groups = api.get(f"/api/v1/clusters/{name}/instance-groups").json()
    assert groups[0]["count"] == 2
    assert _events(api, seq, "DriftAccepted")[0]["payload"]["fields"][field]["actual"] == 2
    time.sleep(3 * WATCH_SECONDS)
    assert api.get(f"/api/v1/clusters/{name}/drift").json()["drifted"] is False

    # 3. A dependency deleted with kubectl: refresh sees it at once; restore reinstalls it.
    config = _kubeconfig(sim_aws, name, tmp_path / "kubeconfig")
    seq = _last_seq(api)
    _kubectl(config, "delete", "deployment", "keda-operator", "-n", KEDA_NAMESPACE)
    refreshed = api.post(f"/api/v1/clusters/{name}/refresh")
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["refreshed"] is True
    drifted = {d["field"]: d for d in refreshed.json()["differences"]}
    assert drifted["components.keda"]["actual"] == {"status": "absent"}
    event = _wait_event(api, seq, "DriftDetected", "components.keda", 5)
    assert event["payload"]["recorded"]["status"] in ("installed", "upgraded", "unchanged")
    # The same drift through the CLI and MCP (read, and a restore's dry run).
    env = {"HYPERPILOT_URL": drift_stack.stack.url, "HYPERPILOT_TOKEN": TOKEN, "COLUMNS": "200"}
    shown = CliRunner().invoke(cli_app, ["clusters", "drift", name, "-o", "json"], env=env)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["differences"] == refreshed.json()["differences"]

    async def through_mcp() -> tuple[dict[str, Any], dict[str, Any]]:
        server = build_server(
            McpSettings(allow_write=False, gateway_token=None),
            Gateway(drift_stack.stack.url, TOKEN),
        )
        async with McpClient(server) as client:
            read = await client.call_tool("get_cluster_drift", {"name": name})
            plan = await client.call_tool(
                "restore_cluster_drift", {"name": name, "field": "components.keda", "dry_run": True}
            )
        assert not read.is_error and not plan.is_error, (read, plan)
        assert read.structured_content is not None and plan.structured_content is not None
        return read.structured_content, plan.structured_content

    read, plan = asyncio.run(through_mcp())
    assert read["drifted"] and "components.keda" in read["summary"]
    assert plan["dry_run"] and plan["plan"]["command"] == "ReconcileDependencies"

    restored = api.post(f"/api/v1/clusters/{name}/drift/restore", {"field": "components.keda"})
    assert restored.status_code == 202, restored.text
    assert api.wait(restored.json()["operation_id"], timeout=120)["status"] in ("succeeded",)
    _wait_event(api, seq, "DriftResolved", "components.keda", 20)
    assert "keda-operator" in _kubectl(config, "get", "deployment", "-n", KEDA_NAMESPACE)

    # A field that is not drifted is refused on its field, with the way to see what is.
    missing = api.post(f"/api/v1/clusters/{name}/drift/restore", {"field": "components.keda"})
    assert missing.status_code == 422 and "not drifted" in missing.text

    op = api.delete(f"/api/v1/clusters/{name}").json()["operation_id"]
    assert api.wait(op, timeout=240)["status"] == "succeeded"
