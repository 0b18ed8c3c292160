"""A node whose reboot does not heal, end to end: the simulated HyperPod keeps failing it after
a reboot, and the product escalates to a replacement, every step in the events; the
diagnose-node-health skill's read-only MCP tools find the injected cause.

Two ways, in order on one cluster (`created_cluster`, two nodes, NodeRecovery=Automatic):
- Automatic: HyperPod reboots the node, it fails again, HyperPod replaces it; the watcher
  reports the failure, the reboot and the replacement.
- None: the operator follows the product's next step (reboot through REST); the reboot
  operation fails with "replace it" as its hint; the replace operation then fixes the node.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from mcp import Client as McpClient

from sim.aws import SimulatedAws
from sim.testing import aws_client, inject_fault
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.node_helpers import events as _events
from tests.e2e.node_helpers import fast_node_watch  # noqa: F401 (a module-wide fixture)
from tests.e2e.node_helpers import last_seq as _last_seq
from tests.e2e.node_helpers import wait_event as _wait_event
from tests.mcp.conftest import McpProcess, mcp_server, mcp_token  # noqa: F401


def _wait_healthy(api: Client, name: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        nodes: list[dict[str, Any]] = api.get(f"/api/v1/clusters/{name}/nodes").json()["nodes"]
        if len(nodes) == count and all(n["health"] == "healthy" for n in nodes):
            return nodes
        assert time.monotonic() < deadline, f"nodes not all healthy: {nodes}"
        time.sleep(0.2)


def _hyperpod_arn(api: Client, name: str) -> str:
    return str(api.get(f"/api/v1/clusters/{name}").json()["hyperpod_cluster_arn"])


async def _read(client: McpClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {result.content}"
    data = result.structured_content
    assert isinstance(data, dict)
    return data


async def _diagnose(mcp: McpProcess, cluster: str, node_id: str) -> list[str]:
    """The skill's investigation, read-only: list_nodes, get_node, list_kubernetes_events on
    the node. Returns every piece of evidence that names the cause."""
    async with McpClient(mcp.url) as client:
        listed = await _read(client, "list_nodes", {"cluster": cluster})
        [node] = [n for n in listed["nodes"] if n["node_id"] == node_id]
        assert node["health"] == "unhealthy", node
        described = await _read(client, "get_node", {"cluster": cluster, "node_id": node_id})
        kube_name = described["node"]["kubernetes"]["node_name"]
        kube_events = await _read(
            client,
            "list_kubernetes_events",
            {"cluster": cluster, "kind": "Node", "object_name": kube_name, "event_type": "Warning"},
        )
    evidence = [str(r) for r in node["reasons"]]
    evidence += [str(e.get("description")) for e in described["events"] or []]
    evidence += [
        f"{e['reason']}: {e['message']}"
        for e in kube_events["events"]
        if e["source"] == "sagemaker-health-monitoring-agent"
    ]
    return evidence


def test_automatic_recovery_escalates_from_a_reboot_that_does_not_heal_to_a_replace(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    assert api.get(f"/api/v1/clusters/{name}/nodes").json()["node_recovery"] == "Automatic"
    victim = _wait_healthy(api, name, 2)[0]["node_id"]
    time.sleep(1.0)  # the watcher has recorded the healthy baseline
    after = _last_seq(api)
    replaces = len(sim_aws.call_log("sagemaker", "BatchReplaceClusterNodes"))
    arn = _hyperpod_arn(api, name)
    with inject_fault(sim_aws, "reboot_does_not_heal", cluster=arn, node_ids=[victim]):
        pass
    replaced = _wait_event(api, after, "NodeReplaced", old_node_id=victim)
    new_id = replaced["payload"]["new_node_id"]
    assert new_id in {n["node_id"] for n in _wait_healthy(api, name, 2)}
    # HyperPod did it on its own: the product sent no replace, and reported it
    assert len(sim_aws.call_log("sagemaker", "BatchReplaceClusterNodes")) == replaces
    seen = [e["type"] for e in _events(api, after) if e["payload"].get("node_id") == victim]
    assert seen, "the watcher reported nothing about the node before its replacement"
    # what HyperPod did, in order: fail, reboot, fail again, replace
    history = aws_client(sim_aws, "sagemaker").list_cluster_events(
        ClusterName=arn, NodeId=victim, SortOrder="Ascending", MaxResults=100
    )["Events"]
    texts = [str(e["Description"]) for e in history]
    order = ["failed health checks", "reboot started", "the reboot did not clear it", "replacement"]
    positions = [next(i for i, t in enumerate(texts) if step in t) for step in order]
    assert positions == sorted(positions), texts


def test_operator_reboot_does_not_heal_and_the_product_escalates_to_replace(
    created_cluster: tuple[RunningStack, str],
    sim_aws: SimulatedAws,
    mcp_server: McpProcess,  # noqa: F811
) -> None:
    stack, name = created_cluster
    api = stack.client
    recovery = api.http.patch(f"/api/v1/clusters/{name}/node-recovery", json={"mode": "None"})
    assert recovery.status_code == 202, recovery.text
    assert api.wait(recovery.json()["operation_id"])["status"] == "succeeded"
    victim = _wait_healthy(api, name, 2)[0]["node_id"]
    time.sleep(1.0)
    after = _last_seq(api)
    with inject_fault(
        sim_aws, "reboot_does_not_heal", cluster=_hyperpod_arn(api, name), node_ids=[victim]
    ):
        pass
    failed = _wait_event(api, after, "NodeFailed", node_id=victim)
    assert "reboot" in failed["payload"]["next_step"]

    # the diagnosis finds the cause with read-only tools
    evidence = asyncio.run(_diagnose(mcp_server, name, victim))
    xid = [e for e in evidence if "Xid" in e and ": 48," in e]
    assert any(e.startswith("GpuXidError: NVRM: Xid") for e in xid), evidence
    assert any("HyperPod reports the instance as Failure" in e for e in xid), evidence
    assert any("failed health checks" in e for e in xid), evidence

    # step 1: reboot (operator); the node comes back failing, the operation says replace it
    rebooted = api.post(f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": [victim]})
    assert rebooted.status_code == 202, rebooted.text
    op = api.wait(rebooted.json()["operation_id"], timeout=120)
    assert op["status"] == "failed", op
    assert op["error"]["code"] == "NodesFailed"
    assert "replace" in op["error"]["hint"] and victim in op["error"]["hint"]
    finished = _wait_event(api, after, "NodeOperationFinished", action="reboot")
    result = finished["payload"]["results"][victim]
    assert result["status"] == "failed" and "the reboot did not clear it" in result["message"]
    node = api.get(f"/api/v1/clusters/{name}/nodes/{victim}").json()
    assert node["instance_status"] == "Failure"
    assert node["kubernetes"]["health_status"] == "UnschedulablePendingReplacement"
    assert "replace" in node["next_step"]

    # step 2: replace, as the reboot's result says
    accepted = api.post(f"/api/v1/clusters/{name}/nodes/replace", {"node_ids": [victim]})
    assert accepted.status_code == 202, accepted.text
    op = api.wait(accepted.json()["operation_id"], timeout=120)
    assert op["status"] == "succeeded", op.get("error")
    new_id = op["result"]["replace_nodes"]["results"][victim]["replacement"]
    replaced = _wait_event(api, after, "NodeReplaced", old_node_id=victim)
    assert replaced["payload"]["new_node_id"] == new_id
    assert new_id in {n["node_id"] for n in _wait_healthy(api, name, 2)}

    # every step, in order, in the event stream
    steps = [
        (e["type"], e["payload"].get("action"))
        for e in _events(api, after)
        if e["type"] in ("NodeFailed", "NodeOperationFinished", "NodeReplaced")
    ]
    assert steps.index(("NodeFailed", None)) < steps.index(("NodeOperationFinished", "reboot"))
    assert steps.index(("NodeOperationFinished", "reboot")) < steps.index(("NodeReplaced", None))
