"""Capacity now, end to end: a cluster with a GPU instance group, pods running, finished and
pending in the Kubernetes emulator; GET /api/v1/clusters/{name}/capacity and GET
/api/v1/capacity answer figures that match the emulator's Nodes and Pods exactly (also with a
few hundred pods), for a viewer too, and the MCP tools and the CLI answer the same."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.e2e.conftest import TOKEN, Client, RunningStack, cluster_spec, unique

GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
GI = 2**30


@pytest.fixture(scope="module")
def gpu_cluster(module_stack: RunningStack) -> Iterator[tuple[RunningStack, str]]:
    """A cluster whose group "gpu" has two 4-GPU nodes (ml.g5.12xlarge) when the zone offers
    them, else the fixture's default GPU type."""
    api = module_stack.client
    name = unique("cap")
    spec = cluster_spec(api, name, count=2)
    zone = spec["availability_zone_id"]
    offered = api.get(
        "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
    ).json()
    if any(t["instance_type"] == "ml.g5.12xlarge" for t in offered):
        spec["instance_groups"][0]["instance_type"] = "ml.g5.12xlarge"
    spec["storage"] = {"fsx_capacity_gib": 1200}  # priced with the NAT gateway the create makes
    op = api.post("/api/v1/clusters", spec).json()["operation_id"]
    done = api.wait(op, timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield module_stack, name
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def _core(sim_aws: SimulatedAws, cluster: str) -> Any:
    """The emulator's core API (untyped here: bodies are plain manifests)."""
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    server = kube.api_server(cluster)
    return k8s.CoreV1Api(k8s_config.new_client_from_config_dict(server.kubeconfig()))  # type: ignore[no-untyped-call]


def _pod(
    name: str, gpus: int, memory: str = "1Gi", efa: int = 0, command: str = "sleep infinity"
) -> dict[str, Any]:
    wanted = {GPU: str(gpus), "memory": memory, **({EFA: str(efa)} if efa else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {GROUP_LABEL: "gpu"},
            "containers": [
                {
                    "name": "main",
                    "image": "public.ecr.aws/docker/library/busybox:latest",
                    "command": ["sh", "-c", command],
                    "resources": {"requests": wanted, "limits": wanted},
                }
            ],
        },
    }


def _settled(core: Any, namespace: str, timeout: float = 60) -> None:
    """Every pod of `namespace` is running, finished or refused by the scheduler."""
    deadline = time.monotonic() + timeout
    while True:
        pods = core.list_namespaced_pod(namespace).items
        waiting = [
            p.metadata.name
            for p in pods
            if not (
                p.status.phase in ("Running", "Succeeded", "Failed")
                or any(
                    c.type == "PodScheduled" and c.status == "False"
                    for c in p.status.conditions or []
                )
            )
        ]
        if not waiting:
            return
        assert time.monotonic() < deadline, f"pods not settled: {waiting[:5]}"
        time.sleep(0.2)


def _quantity(value: str) -> int:
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40)):
        if value.endswith(suffix):
            return int(value[: -len(suffix)]) * factor
    return int(value)


def _expected(core: Any) -> dict[str, Any]:
    """Per node (total, allocated) GPUs / EFA / memory and the pending pods, counted here from
    the emulator's own objects."""
    nodes = core.list_node(label_selector="sagemaker.amazonaws.com/compute-type=hyperpod").items
    pods = [p for p in core.list_pod_for_all_namespaces().items]
    per_node: dict[str, dict[str, tuple[int, int]]] = {}
    for node in nodes:
        allocatable = node.status.allocatable
        used = {GPU: 0, EFA: 0, "memory": 0}
        for pod in pods:
            if pod.spec.node_name != node.metadata.name or pod.status.phase in (
                "Succeeded",
                "Failed",
            ):
                continue
            for container in pod.spec.containers:
                requests = (container.resources and container.resources.requests) or {}
                for name in used:
                    used[name] += _quantity(requests.get(name, "0"))
        per_node[node.metadata.name] = {
            name: (_quantity(allocatable.get(name, "0")), used[name]) for name in used
        }
    pending = sorted(
        (p.metadata.namespace, p.metadata.name)
        for p in pods
        if not p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")
    )
    return {"nodes": per_node, "pending": pending}


def _matches(answer: dict[str, Any], expected: dict[str, Any]) -> None:
    nodes = {n["name"]: n for n in answer["nodes"]}
    assert set(nodes) == set(expected["nodes"])
    for name, wanted in expected["nodes"].items():
        resources = nodes[name]["resources"]
        for key, field in ((GPU, "gpus"), (EFA, "efa"), ("memory", "memory_bytes")):
            total, allocated = wanted[key]
            assert resources[field] == {
                "total": total,
                "allocated": allocated,
                "free": total - allocated,
            }, (name, field)
    assert sorted((p["namespace"], p["name"]) for p in answer["pending"]) == expected["pending"]
    gpus = answer["resources"]["gpus"]
    assert gpus["total"] == sum(w[GPU][0] for w in expected["nodes"].values())
    assert gpus["allocated"] == sum(w[GPU][1] for w in expected["nodes"].values())
    assert sum(g["resources"]["gpus"]["total"] for g in answer["groups"]) == gpus["total"]


def _read_matching(api: Client, cluster: str, core: Any, timeout: float = 10) -> dict[str, Any]:
    """The capacity answer once it matches the emulator: cluster-svc answers from its watch of
    the cluster, which sees a change some milliseconds after the API server made it."""
    deadline = time.monotonic() + timeout
    while True:
        answer: dict[str, Any] = api.get(f"/api/v1/clusters/{cluster}/capacity").json()
        try:
            _matches(answer, _expected(core))
            return answer
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_capacity_matches_the_emulator_and_every_face_agrees(
    gpu_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = gpu_cluster
    api = stack.client
    core = _core(sim_aws, cluster)
    before = api.get(f"/api/v1/clusters/{cluster}/capacity")
    assert before.status_code == 200, before.text
    per_node = before.json()["nodes"][0]["resources"]["gpus"]["total"]
    assert per_node >= 1
    ns = "team-a"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # One node full, the other with one GPU in use; a finished pod's GPUs are free again; two
    # pods wait: one for more GPUs than a node has, one for the last GPUs.
    pods = [
        _pod("full", per_node, memory="20Gi", efa=1),
        _pod("one", 1, memory="3Gi"),
        _pod("done", 1, command="true"),
        _pod("too-big", per_node + 1),
    ]
    for body in pods:
        core.create_namespaced_pod(ns, body)
    _settled(core, ns)
    if per_node > 1:
        core.create_namespaced_pod(ns, _pod("rest", per_node))  # more than the free ones
        _settled(core, ns)
    deadline = time.monotonic() + 30
    while core.read_namespaced_pod("done", ns).status.phase != "Succeeded":
        assert time.monotonic() < deadline
        time.sleep(0.2)

    answer = _read_matching(api, cluster, core)
    waiting = {p["name"]: p for p in answer["pending"]}
    assert waiting["too-big"]["gpus"] == per_node + 1
    assert waiting["too-big"]["instance_group"] == "gpu"
    assert waiting["too-big"]["reason"]  # the scheduler's message
    assert answer["resources"]["gpus"]["allocated"] == per_node + 1
    (group,) = answer["groups"]
    assert group["name"] == "gpu" and group["nodes"] == 2
    assert group["price_per_node_hour"] > 0
    # The cluster's cost: its nodes, the NAT gateway and the FSx for Lustre its create made,
    # each at the price table's list price (PERSISTENT_2, 250 MB/s/TiB, 1200 GiB = 1200/730 x
    # the GB-month price per hour).
    prices = api.get("/api/v1/prices").json()
    infra = {i["kind"]: i for i in answer["infrastructure"]}
    assert set(infra) == {"nat_gateway", "fsx_file_system"}, answer["infrastructure"]
    assert infra["nat_gateway"]["per_hour"] == round(prices["nat_gateway_per_hour"], 4)
    lustre = next(
        p
        for p in prices["fsx_lustre_per_gb_month"]
        if p["deployment_type"] == "PERSISTENT_2" and p["throughput_per_tib"] == 250
    )
    assert infra["fsx_file_system"]["per_hour"] == round(lustre["price"] * 1200 / 730, 4)
    assert "1200 GiB PERSISTENT_2 250 MB/s/TiB" in infra["fsx_file_system"]["description"]
    nodes = round(2 * group["price_per_node_hour"], 4)
    assert group["cost_per_hour"] == nodes
    assert answer["cost_per_hour"] == round(nodes + sum(i["per_hour"] for i in infra.values()), 4)
    assert answer["prices"]["source"].startswith("AWS Price List API")
    assert answer["prices"]["as_of"]

    # One node a page: the pages cover the nodes in order; totals count every node.
    path = f"/api/v1/clusters/{cluster}/capacity"
    first = api.get(path, params={"limit": 1}).json()
    assert len(first["nodes"]) == 1 and first["node_total"] == 2 and first["next_after"]
    assert first["groups"] == answer["groups"] and first["resources"] == answer["resources"]
    second = api.get(path, params={"limit": 1, "after": first["next_after"]}).json()
    assert second["next_after"] is None
    assert first["nodes"] + second["nodes"] == answer["nodes"]
    bad = api.get(path, params={"after": "not a cursor"})
    assert bad.status_code == 422, bad.text
    assert [f["field"] for f in bad.json()["error"].get("fields", [])] == ["after"], bad.text

    # A viewer may read capacity.
    viewer_token = api.post("/api/v1/tokens", {"name": "cap-viewer", "role": "viewer"}).json()
    viewer = Client(stack.stack.url, viewer_token["token"])
    assert viewer.get(f"/api/v1/clusters/{cluster}/capacity").json() == answer
    fleet = viewer.get("/api/v1/capacity")
    assert fleet.status_code == 200, fleet.text
    mine = next(c for c in fleet.json()["clusters"] if c["cluster"] == cluster)
    assert mine["readable"] and mine["resources"] == answer["resources"]
    assert mine["pending_pods"] == len(answer["pending"])
    assert mine["cost_per_hour"] == answer["cost_per_hour"]

    # MCP: the same figures.
    async def through_mcp() -> tuple[dict[str, Any], dict[str, Any]]:
        server = build_server(
            McpSettings(allow_write=False, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(server) as client:
            one = await client.call_tool("get_capacity", {"cluster": cluster})
            every = await client.call_tool("get_fleet_capacity", {})
        assert not one.is_error and not every.is_error
        assert one.structured_content is not None and every.structured_content is not None
        return one.structured_content, every.structured_content

    one, every = asyncio.run(through_mcp())
    assert one["capacity"] == answer
    assert f"{answer['resources']['gpus']['free']} of " in one["summary"]
    assert "pending" in one["summary"] and "/h list price" in one["summary"]
    assert every["capacity"] == fleet.json()

    # CLI: the same answer as JSON; the table names the groups, nodes and pending pods.
    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN, "COLUMNS": "200"}
    runner = CliRunner()
    as_json = runner.invoke(cli_app, ["capacity", cluster, "-o", "json"], env=env)
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == answer
    shown = runner.invoke(cli_app, ["capacity", cluster], env=env)
    assert shown.exit_code == 0, shown.output
    assert "GPUs free" in shown.stdout and "too-big" in shown.stdout and "$/H" in shown.stdout
    fleet_shown = runner.invoke(cli_app, ["capacity", "--fleet", "-o", "json"], env=env)
    assert fleet_shown.exit_code == 0, fleet_shown.output
    assert json.loads(fleet_shown.stdout) == fleet.json()


def test_a_few_hundred_pods_add_up_exactly(
    gpu_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = gpu_cluster
    core = _core(sim_aws, cluster)
    ns = "bulk"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for i in range(300):
        core.create_namespaced_pod(ns, _pod(f"p{i:03d}", 1, memory=f"{1 + i % 4}Gi"))
    _settled(core, ns, timeout=120)
    answer = _read_matching(stack.client, cluster, core)
    waiting = [p for p in answer["pending"] if p["namespace"] == ns]
    running = [p for p in core.list_namespaced_pod(ns).items if p.status.phase == "Running"]
    assert len(running) == 300 - len(waiting) > 0
    free = answer["resources"]["gpus"]["free"]
    assert free == 0 or not waiting  # the scheduler packs GPUs while pods wait for them
    assert len(answer["pending"]) >= len(waiting) > 0
