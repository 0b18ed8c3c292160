"""Observability end to end on one cluster: the feature toggled on (dry run first: the AMP and
Grafana workspaces, then the HyperPod observability add-on, each a call in the plan; its stage in
the operation), its workspaces recorded and linked (checked with boto3), the exporters running
(kubectl); GPU metrics queried through REST while a training job runs (its GPUs busy, the idle
GPUs idle), an injected XID found; a viewer's query that reaches for another cluster refused;
then observability and Container Insights toggled off and their add-ons and workspaces gone."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import ClientError
from mcp import Client as McpClient

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.test_features import _apply, _features, _kubectl_items, _patch
from tests.e2e.test_features import kubeconfig as kubeconfig
from tests.mcp.conftest import McpProcess, mcp_server, mcp_token  # noqa: F401

OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"


def _query(api: Client, cluster: str, **params: Any) -> Any:
    return api.get(f"/api/v1/clusters/{cluster}/metrics/query", params=params)


def _values(answer: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {
        (row["metric"].get("Hostname", ""), row["metric"].get("gpu", "")): float(row["value"][1])
        for row in answer["data"]["result"]
    }


def _addon(sim: SimulatedAws, cluster: str, addon: str) -> str | None:
    try:
        found = aws_client(sim, "eks").describe_addon(clusterName=cluster, addonName=addon)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ResourceNotFoundException"
        return None
    return str(found["addon"]["status"])


def _eventually(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.5)


def train(api: Client, cluster: str, job: str, steps: int) -> None:
    """A one-GPU PyTorch job of `steps` steps (the emulator logs one every 0.05 s), submitted."""
    submitted = api.post(
        f"/api/v1/clusters/{cluster}/jobs",
        {
            "recipe": "pytorch",
            "name": job,
            "instance_group": "gpu",
            "script": "code/train.py",
            "args": ["--max_steps", str(steps)],
            "resources": {"gpus": 1},
        },
    )
    assert submitted.status_code == 202, submitted.text
    assert api.wait(submitted.json()["operation_id"], timeout=90)["status"] == "succeeded"


@pytest.fixture(scope="module")
def observed(created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws) -> dict[str, Any]:
    """Observability enabled through REST (dry run first); the accepted answer and its state."""
    stack, name = created_cluster
    before = len(sim_aws.changes())
    dry = _patch(stack, name, {"observability": True}, dry_run="true")
    assert dry.status_code == 200, dry.text
    plan = dry.json()["plan"]
    assert plan["diff"] == {"observability": {"actual": False, "requested": True}}
    assert [(c["service"], c["operation"]) for c in plan["calls"]] == [
        ("amp", "CreateWorkspace"),
        ("grafana", "CreateWorkspace"),
        ("eks", "CreateAddon"),
    ]
    assert len(sim_aws.changes()) == before, sim_aws.changes()[
        before:
    ]  # the dry run changed nothing
    accepted = _apply(stack, name, {"observability": True})
    return accepted


def test_observability_on_records_and_links_its_workspaces(
    observed: dict[str, Any],
    created_cluster: tuple[RunningStack, str],
    sim_aws: SimulatedAws,
    kubeconfig: Path,
) -> None:
    stack, name = created_cluster
    stages = {s["name"]: s["status"] for s in observed["final"]["stages"]}
    assert stages["observability"] == "succeeded", observed["final"]["stages"]
    assert stages["training_operator"] == "noop"  # not part of the change
    state = _features(stack, name)["observability"]
    assert state["enabled"] is True and state["status"] == "ACTIVE"
    amp, grafana = state["prometheus_workspace"], state["grafana_workspace"]
    assert amp["status"] == "ACTIVE" and amp["made_by_hyperpilot"] is True
    assert amp["query_url"].endswith(f"/workspaces/{amp['id']}/api/v1/query")
    assert grafana["status"] == "ACTIVE" and grafana["url"].startswith("https://g-")
    # the same, read with boto3
    described = aws_client(sim_aws, "amp").describe_workspace(workspaceId=amp["id"])
    assert described["workspace"]["alias"] == f"hyperpilot-{name}"
    board = aws_client(sim_aws, "grafana").describe_workspace(workspaceId=grafana["id"])
    assert board["workspace"]["dataSources"] == ["PROMETHEUS"]
    assert _addon(sim_aws, name, OBSERVABILITY_ADDON) == "ACTIVE"
    exporters = {
        d["metadata"]["name"]
        for d in _kubectl_items(kubeconfig, "daemonsets", "-n", "hyperpod-observability")
    }
    assert {"dcgm-exporter", "efa-exporter"} <= exporters


def test_gpu_metrics_follow_a_training_job_and_show_an_injected_xid(
    observed: dict[str, Any], created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    idle = _eventually(
        lambda: (
            (a := _query(api, name, query="DCGM_FI_DEV_GPU_UTIL")).status_code == 200
            and a.json()["data"]["result"]
            and a.json()
        )
    )
    assert set(_values(idle).values()) == {0.0}, idle  # nothing runs: every GPU idle
    # this stack starts no Prometheus server: workload-svc answers, and says so
    assert idle["source"] == "promql-lite" and "no Prometheus server" in idle["note"], idle
    nodes = sorted({host for host, _ in _values(idle)})
    train(api, name, "obs-train", steps=3000)

    def busy() -> dict[str, Any] | None:
        answer = _query(api, name, query='DCGM_FI_DEV_GPU_UTIL{pod=~"obs-train.*"}').json()
        values = _values(answer)
        return answer if values and all(v >= 92 for v in values.values()) else None

    running = _eventually(busy)
    [(busy_node, busy_gpu)] = list(_values(running))
    # a range query over the last minute: the busy GPU's series, per node average by Hostname
    ranged = _query(
        api, name, query="avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", window="1m", step="5s"
    )
    assert ranged.status_code == 200, ranged.text
    assert ranged.json()["data"]["resultType"] == "matrix"
    assert {r["metric"]["Hostname"] for r in ranged.json()["data"]["result"]} == set(nodes)
    others = [n for n in nodes if n != busy_node]
    still = _values(_query(api, name, query="DCGM_FI_DEV_GPU_UTIL").json())
    assert all(v == 0 for (host, _), v in still.items() if host in others)  # idle nodes idle

    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    kube.api_server(name).telemetry.inject_xid(busy_node, int(busy_gpu), 79)
    xid = _eventually(lambda: _values(_query(api, name, query="DCGM_FI_DEV_XID_ERRORS > 0").json()))
    assert xid == {(busy_node, busy_gpu): 79.0}
    observed["xid_node"] = busy_node
    api.delete(f"/api/v1/clusters/{name}/jobs/obs-train")


async def _skill_reads(mcp: McpProcess, cluster: str) -> tuple[list[str], dict[str, Any]]:
    """The node-health skill's read tools, as its playbook orders them: the nodes, then the
    devices (query_metrics), then the node named by the metrics."""
    async with McpClient(mcp.url) as client:
        listed = await client.call_tool("list_nodes", {"cluster": cluster})
        assert not listed.is_error, listed.content
        found = await client.call_tool(
            "query_metrics", {"cluster": cluster, "query": "DCGM_FI_DEV_XID_ERRORS > 0"}
        )
        assert not found.is_error, found.content
    nodes = listed.structured_content
    metrics = found.structured_content
    assert isinstance(nodes, dict) and isinstance(metrics, dict)
    return [str(n["node_id"]) for n in nodes["nodes"]], metrics


def test_the_node_health_skill_read_tools_find_the_xid(
    observed: dict[str, Any],
    created_cluster: tuple[RunningStack, str],
    mcp_server: McpProcess,  # noqa: F811
) -> None:
    _, name = created_cluster
    skill = (Path(__file__).parents[2] / "skills/diagnose-node-health/SKILL.md").read_text()
    tools = yaml.safe_load(skill.split("---")[1])
    assert "query_metrics" in tools["tools"] and "query_metrics" not in tools["mutating_tools"]
    node_ids, metrics = asyncio.run(_skill_reads(mcp_server, name))
    [series] = metrics["series"]
    assert series["labels"]["Hostname"] == observed["xid_node"] and series["value"] == 79
    assert series["labels"]["Hostname"].removeprefix("hyperpod-") in node_ids
    assert "1 series" in metrics["summary"]


def test_queries_are_checked_and_stay_within_their_cluster(
    observed: dict[str, Any], created_cluster: tuple[RunningStack, str]
) -> None:
    stack, name = created_cluster
    admin = stack.client
    token = admin.post("/api/v1/tokens", {"name": "obs-viewer", "role": "viewer"}).json()["token"]
    viewer = Client(str(admin.http.base_url), token)
    assert _query(viewer, name, query="DCGM_FI_DEV_FB_USED").status_code == 200
    for query in ('DCGM_FI_DEV_GPU_UTIL{cluster="other"}', 'DCGM_FI_DEV_GPU_UTIL{cluster=~".+"}'):
        refused = _query(viewer, name, query=query)
        assert refused.status_code == 403, refused.text
        assert "other than" in refused.json()["error"]["message"]
    assert _query(viewer, name, query=f'DCGM_FI_DEV_GPU_UTIL{{cluster="{name}"}}').status_code == (
        200
    )
    assert _query(viewer, "no-such-cluster", query="DCGM_FI_DEV_GPU_UTIL").status_code == 404
    bad = _query(viewer, name, query="rate(DCGM_FI_DEV_GPU_UTIL)")
    assert bad.status_code == 422, bad.text
    assert bad.json()["error"]["fields"][0]["field"] == "query.query"
    both = _query(viewer, name, query="DCGM_FI_DEV_GPU_UTIL", window="5m", time=1)
    assert both.status_code == 422, both.text


def test_observability_and_container_insights_off(
    observed: dict[str, Any], created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    state = _features(stack, name)
    amp_id = state["observability"]["prometheus_workspace"]["id"]
    assert state["container_insights"]["enabled"] is True  # the dependency set installs it
    accepted = _apply(stack, name, {"observability": False, "container_insights": False})
    stages = {s["name"]: s["status"] for s in accepted["final"]["stages"]}
    assert stages["observability"] == "succeeded" and stages["container_insights"] == "succeeded"
    assert _addon(sim_aws, name, OBSERVABILITY_ADDON) is None
    assert _addon(sim_aws, name, CLOUDWATCH_ADDON) is None
    with pytest.raises(ClientError):
        aws_client(sim_aws, "amp").describe_workspace(workspaceId=amp_id)
    after = _features(stack, name)
    assert after["observability"]["enabled"] is False
    assert after["observability"]["prometheus_workspace"] is None
    assert after["container_insights"]["enabled"] is False
    again = _apply(stack, name, {"container_insights": True})
    assert {s["name"]: s["status"] for s in again["final"]["stages"]}["container_insights"] == (
        "succeeded"
    )
