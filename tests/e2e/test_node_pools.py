"""Karpenter node pools end to end: autoscaling enabled with two declared pools through REST
(dry run first: the diff names autoscaling.node_pools), a pool's weight changed through the MCP
tool's dry run, the list cut to one pool through the CLI (the other removed), everything gone
on disable; each state read with kubectl from the emulator."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import TOKEN, RunningStack
from tests.e2e.test_cluster_lifecycle import _kubeconfig
from tests.e2e.test_features import _apply, _features, _kubectl_items, _patch

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

POOLS = [
    {"name": "gpus", "instance_groups": ["gpu"], "weight": 50, "gpu_limit": 16},
    {"name": "spares", "instance_groups": ["spare"], "consolidation": "WhenEmptyOrUnderutilized"},
]


@pytest.fixture(scope="module")
def kubeconfig(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, tmp_path_factory: Any
) -> Path:
    _, name = created_cluster
    return _kubeconfig(sim_aws, name, tmp_path_factory.mktemp("kube") / "config")


def _pools(kubeconfig: Path) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in _kubectl_items(kubeconfig, "nodepools")}


def test_node_pools_through_rest_mcp_and_the_cli(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws, kubeconfig: Path
) -> None:
    stack, name = created_cluster
    sagemaker = aws_client(sim_aws, "sagemaker")
    gpu = sagemaker.describe_cluster(ClusterName=name)["InstanceGroups"][0]
    sagemaker.update_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceGroupName": "spare",
                "InstanceType": gpu["InstanceType"],
                "InstanceCount": 0,
                "ExecutionRole": gpu["ExecutionRole"],
                "LifeCycleConfig": gpu["LifeCycleConfig"],
            }
        ],
    )
    body = {"autoscaling": {"enabled": True, "node_pools": POOLS}}
    # REST: the dry run names the pools in the diff and changes nothing
    dry = _patch(stack, name, body, dry_run="true")
    assert dry.status_code == 200, dry.text
    assert dry.json()["plan"]["diff"]["autoscaling.node_pools"]["actual"] == []
    assert _features(stack, name)["autoscaling"]["enabled"] is False  # nothing changed
    wrong = _patch(
        stack,
        name,
        {
            "autoscaling": {
                "enabled": True,
                "node_pools": [{"name": "x", "instance_groups": ["no"]}],
            }
        },
    )
    assert wrong.status_code == 422 and "autoscaling.node_pools.0.instance_groups" in wrong.text

    _apply(stack, name, body)
    pools = _pools(kubeconfig)
    assert set(pools) == {"gpus", "spares"}  # no default hyperpilot pool
    assert pools["gpus"]["spec"]["weight"] == 50
    assert pools["gpus"]["spec"]["limits"] == {"nvidia.com/gpu": "16"}
    assert pools["spares"]["spec"]["disruption"]["consolidationPolicy"] == (
        "WhenEmptyOrUnderutilized"
    )
    classes = {c["metadata"]["name"]: c for c in _kubectl_items(kubeconfig, "hyperpodnodeclasses")}
    assert classes["gpus"]["spec"]["instanceGroups"] == ["gpu"]
    assert classes["spares"]["spec"]["instanceGroups"] == ["spare"]
    shown = _features(stack, name)["autoscaling"]["node_pools"]
    assert [p["name"] for p in shown] == ["gpus", "spares"]
    again = _patch(stack, name, body, dry_run="true").json()["plan"]
    assert again["noop"] and "autoscaling.node_pools" not in again["diff"]

    # MCP: a heavier pool, previewed: one NodePool to apply, the weight in the diff
    heavier = {
        "autoscaling": {"enabled": True, "node_pools": [{**POOLS[0], "weight": 90}, POOLS[1]]}
    }

    async def through_mcp() -> dict[str, Any]:
        mcp = build_server(
            McpSettings(allow_write=True, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(mcp) as client:
            answer = await client.call_tool(
                "update_features", {"cluster": name, "change": heavier, "dry_run": True}
            )
        assert not answer.is_error, answer.content
        assert answer.structured_content is not None
        return dict(answer.structured_content)

    preview = json.dumps(asyncio.run(through_mcp()))
    assert "autoscaling.node_pools" in preview and '"weight": 90' in preview
    assert _pools(kubeconfig)["gpus"]["spec"]["weight"] == 50  # a dry run changes nothing

    # CLI: the list cut to one pool; the other pool and its node class are removed
    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN}
    cli = CliRunner().invoke(
        cli_app,
        [
            *("features", "set", "-c", name, "--autoscaling"),
            *("--node-pool", "gpus=gpu+spare,weight=90", "--wait", "-o", "json"),
        ],
        env=env,
    )
    assert cli.exit_code == 0, cli.output
    pools = _pools(kubeconfig)
    assert set(pools) == {"gpus"} and pools["gpus"]["spec"]["weight"] == 90
    assert "limits" not in pools["gpus"]["spec"]
    classes = {c["metadata"]["name"]: c for c in _kubectl_items(kubeconfig, "hyperpodnodeclasses")}
    assert set(classes) == {"gpus"} and classes["gpus"]["spec"]["instanceGroups"] == [
        "gpu",
        "spare",
    ]

    _apply(stack, name, {"autoscaling": {"enabled": False}})
    assert _kubectl_items(kubeconfig, "nodepools") == []
    assert _kubectl_items(kubeconfig, "hyperpodnodeclasses") == []
