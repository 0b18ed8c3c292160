"""The MCP service as an agent uses it: a real MCP client over streamable HTTP (and stdio) to
`python -m mcp_svc` as a process, in front of the real gateway and services, against the
simulated AWS."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from mcp import Client, StdioServerParameters

from mcp_svc.registry import ERROR_META
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from tests.e2e.conftest import RunningStack, unique
from tests.mcp.conftest import MCP_TOKEN_NAME, McpProcess, mcp_env

CREATE_STAGES = {
    "preflight",
    "network",
    "security_group",
    "compute_subnet",
    "eks_role",
    "execution_role",
    "bucket",
    "eks_cluster",
    "oidc_provider",
    "access_entries",
    "dependencies",
    "hyperpod_cluster",
    "storage",
    "fsx",
}


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} failed: {text}"
    data = result.structured_content
    assert isinstance(data, dict)
    assert text == data["summary"]  # the human line comes first
    return data


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool error: `isError`, the error in the text, no structured content (which would not
    match the tool's output schema); the error body is in `_meta` for programs."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was expected to fail"
    assert result.structured_content is None, result.structured_content
    assert result.meta is not None and ERROR_META in result.meta, result.meta
    error: dict[str, Any] = result.meta[ERROR_META]["error"]
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(error["code"]) and error["message"] in text
    assert not error.get("hint") or f"hint: {error['hint']}" in text
    return error


async def until_terminal(client: Client, operation_id: str, timeout: float = 240) -> dict[str, Any]:
    """Poll the status tool the way the playbooks do: no sleep, the tool waits."""
    deadline = time.monotonic() + timeout
    while True:
        op = await ok(client, "get_operation", {"operation_id": operation_id, "wait_seconds": 45})
        if op["terminal"]:
            return op
        assert op["next_step"].startswith("get_operation(")
        assert time.monotonic() < deadline, op["summary"]


async def zones_when_ready(client: Client) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        result = await client.call_tool("list_availability_zones", {})
        if not result.is_error:
            zones: list[dict[str, Any]] = result.structured_content["zones"]
            return zones
        # cluster-svc answers inspect queries once it has connected to NATS
        assert time.monotonic() < deadline, result.content
        await asyncio.sleep(0.2)


class Recorder:
    """An MCP client that remembers the tools it called, in order."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[str] = []

    async def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(tool)
        return await ok(self.client, tool, arguments)


@pytest.fixture(scope="module")
async def playbook_cluster(
    mcp_server: McpProcess, module_stack: RunningStack
) -> AsyncIterator[dict[str, Any]]:
    """The create-cluster skill's tool sequence, through a real MCP client over streamable HTTP:
    inspect, decide, create, poll to terminal. Deleted afterwards by the admin through REST."""
    name = unique("mcp")
    async with Client(mcp_server.url) as client:
        agent = Recorder(client)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listed = await agent.ok("list_clusters", {})
        agent.calls.append("list_availability_zones")
        zones = await zones_when_ready(client)
        zone = zones[0]["zone_id"]
        types: list[str] = []
        page: str | None = None
        while True:  # a page at a time, as the tool answers
            offered = await agent.ok(
                "list_instance_types", {"availability_zone_id": zone, "page_token": page}
            )
            types += [t["instance_type"] for t in offered["instance_types"]]
            page = offered["next_page_token"]
            if page is None:
                break
        assert len(types) == offered["total"]
        instance_type = "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0]
        started = await agent.ok(
            "create_cluster",
            {
                "cluster": {
                    "name": name,
                    "availability_zone_id": zone,
                    "instance_groups": [
                        {"name": "gpu", "instance_type": instance_type, "count": 2}
                    ],
                }
            },
        )
        polls = 0
        while True:
            op = await agent.ok(
                "get_operation", {"operation_id": started["operation_id"], "wait_seconds": 45}
            )
            polls += 1
            if op["terminal"]:
                break
            assert op["next_step"].startswith("get_operation(")
            assert polls < 10, op["summary"]
        described = await agent.ok("get_cluster", {"name": name})
        denied = await refused(client, "delete_cluster", {"name": name})
    yield {
        "name": name,
        "zone": zone,
        "types": types,
        "offered": offered,
        "listed": listed,
        "tools": tools,
        "started": started,
        "operation": op,
        "described": described,
        "denied": denied,
        "calls": agent.calls,
    }
    api = module_stack.client
    deleted = api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)
    assert deleted["status"] == "succeeded", deleted.get("error")


async def test_create_cluster_playbook_builds_a_cluster_and_polls_it_to_completion(
    playbook_cluster: dict[str, Any], module_stack: RunningStack
) -> None:
    run = playbook_cluster
    # The list outlines the body by its field names; the playbook's call fills them in.
    body = run["tools"]["create_cluster"].input_schema["properties"]["cluster"]
    assert "Fields: name, availability_zone_id, instance_groups (required)" in body["description"]
    # Inspect before creating: the playbook's order.
    calls = [c for i, c in enumerate(run["calls"]) if i == 0 or c != run["calls"][i - 1]]
    assert calls == [
        "list_clusters",
        "list_availability_zones",
        "list_instance_types",
        "create_cluster",
        "get_operation",
        "get_cluster",
    ]
    assert run["name"] not in {c["name"] for c in run["listed"]["clusters"]}
    assert all(run["zone"] in t["availability_zone_ids"] for t in run["offered"]["instance_types"])

    started = run["started"]
    assert started["status_tool"] == "get_operation" and started["created"] is True
    assert started["operation_id"] in started["summary"]
    op = run["operation"]
    assert op["status"] == "succeeded", op["summary"]
    assert {s["name"] for s in op["stages"]} == CREATE_STAGES
    assert all(s["status"] in ("succeeded", "noop") for s in op["stages"])

    described = run["described"]["cluster"]
    assert described["status"] == "active"
    assert described["instance_groups"][0]["count"] == 2

    # The agent's token is an operator's: deleting needs an admin, and the REST answer says so.
    assert run["denied"]["code"] == "forbidden"
    # The gateway recorded who asked and through which face.
    rest = module_stack.client.get(f"/api/v1/operations/{started['operation_id']}").json()
    assert rest["source"] == "mcp" and rest["principal"] == MCP_TOKEN_NAME


async def test_add_instance_group_and_enable_features_playbooks(
    playbook_cluster: dict[str, Any], mcp_server: McpProcess
) -> None:
    name = playbook_cluster["name"]
    instance_type = playbook_cluster["types"][0]
    async with Client(mcp_server.url) as client:
        groups = await ok(client, "list_instance_groups", {"cluster": name})
        assert [g["name"] for g in groups["instance_groups"]] == ["gpu"]
        quota = await ok(client, "get_instance_type_quota", {"instance_type": instance_type})
        assert quota["quota"]["available"] >= 1

        group = {"name": "extra", "instance_type": instance_type, "count": 1}
        add = {"cluster": name, "group": group}
        preview = await ok(client, "add_instance_group", {**add, "dry_run": True})
        assert preview["dry_run"] is True and preview["operation_id"] is None
        started = await ok(client, "add_instance_group", add)
        op = await until_terminal(client, started["operation_id"], timeout=120)
        assert op["status"] == "succeeded", op["summary"]
        groups = await ok(client, "list_instance_groups", {"cluster": name})
        assert {g["name"] for g in groups["instance_groups"]} == {"gpu", "extra"}

        before = await ok(client, "get_features", {"cluster": name})
        change = {"cluster": name, "change": {"training_operator": True}}
        first = await ok(client, "update_features", change)
        again = await ok(client, "update_features", change)
        assert again["operation_id"] == first["operation_id"] and again["created"] is False
        op = await until_terminal(client, first["operation_id"], timeout=120)
        assert op["status"] in ("succeeded", "noop"), op["summary"]
        after = await ok(client, "get_features", {"cluster": name})
        assert after["training_operator"]["enabled"] is True
        assert "training_operator on" in after["summary"], (before["summary"], after["summary"])

        deps = await ok(client, "list_dependencies", {"cluster": name})
        assert deps["components"] and "not ready" not in deps["summary"], deps["summary"]

        nodes = await ok(client, "list_nodes", {"cluster": name})
        assert nodes["nodes"] and all(n["node_id"].startswith("i-") for n in nodes["nodes"])
        one = await ok(
            client, "get_node", {"cluster": name, "node_id": nodes["nodes"][0]["node_id"]}
        )
        assert one["node"]["node_id"] == nodes["nodes"][0]["node_id"]


async def test_training_and_inference_tools_share_the_rest_rules(
    playbook_cluster: dict[str, Any], mcp_server: McpProcess, module_stack: RunningStack
) -> None:
    """Reads, dry runs and refusals of the training and inference tools on the playbook's
    cluster: the plan comes from the same planner, a bad spec from the same rule, as REST."""
    api = module_stack.client
    name = playbook_cluster["name"]
    instance_type = playbook_cluster["described"]["cluster"]["instance_groups"][0]["instance_type"]
    job = {
        "recipe": "pytorch",
        "name": "mcp-train",
        "instance_group": "gpu",
        "script": "code/train.py",
        "resources": {"gpus": 1},
    }
    endpoint = {
        "name": "mcp-chat",
        "instance_type": instance_type,
        "gpus": 1,
        "service": "internal",
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    async with Client(mcp_server.url) as client:
        jobs = await ok(client, "list_training_jobs", {"cluster": name})
        assert jobs["jobs"] == []
        plan = await ok(
            client, "submit_training_job", {"cluster": name, "job": job, "dry_run": True}
        )
        assert plan["dry_run"] is True and plan["operation_id"] is None and plan["plan"]

        bad_job = {**job, "script": "../etc/passwd"}
        rest = api.post(f"/api/v1/clusters/{name}/jobs", bad_job)
        assert rest.status_code == 422, rest.text
        error = await refused(client, "submit_training_job", {"cluster": name, "job": bad_job})
        assert error["message"] == rest.json()["error"]["message"]
        assert error["fields"][0]["field"] == "pytorch.script"

        await ok(client, "list_endpoints", {"cluster": name})
        plan = await ok(
            client, "deploy_endpoint", {"endpoint": endpoint, "cluster": name, "dry_run": True}
        )
        assert plan["dry_run"] is True and plan["plan"]

        no_gpus = {k: v for k, v in endpoint.items() if k != "gpus"}
        rest = api.post("/api/v1/endpoints", no_gpus, params={"cluster": name})
        assert rest.status_code == 422, rest.text
        error = await refused(client, "deploy_endpoint", {"endpoint": no_gpus, "cluster": name})
        assert error["message"] == rest.json()["error"]["message"]
        assert error["fields"][0]["field"] == "gpus"


async def test_the_diagnostics_tools_read_a_crash_looping_pod(
    playbook_cluster: dict[str, Any],
    mcp_server: McpProcess,
    module_stack: RunningStack,
    sim_aws: SimulatedAws,
) -> None:
    """list_pods, list_kubernetes_events and get_pod_logs(previous=true) over streamable HTTP
    on a pod that crashes in a loop: its status and exit code, its Warning events, the line it
    wrote before the restart; bad arguments and unknown pods answer as REST does."""
    api = module_stack.client
    name = playbook_cluster["name"]
    world = sim_aws.ctx.kube
    assert isinstance(world, KubeWorld)
    core = k8s.CoreV1Api(
        k8s_config.new_client_from_config_dict(world.api_server(name).kubeconfig())
    )
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "mcp-looper", "labels": {"app": "mcp-diag"}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1",
                        "command": ["sh", "-c", "echo before-the-crash; exit 2"],
                    }
                ]
            },
        },
    )
    try:
        async with Client(mcp_server.url) as client:
            deadline = time.monotonic() + 60
            while True:
                pods = await ok(client, "list_pods", {"cluster": name, "selector": "app=mcp-diag"})
                (pod,) = pods["pods"]
                if pod["restarts"] >= 1 and pod["status"] == "CrashLoopBackOff":
                    break
                assert time.monotonic() < deadline, pods["summary"]
                await asyncio.sleep(0.2)
            assert "mcp-looper (CrashLoopBackOff" in pods["summary"]
            assert pod["containers"][0]["last_termination"]["exit_code"] == 2

            events = await ok(
                client,
                "list_kubernetes_events",
                {
                    "cluster": name,
                    "namespace": "default",
                    "kind": "Pod",
                    "object_name": "mcp-looper",
                    "event_type": "Warning",
                },
            )
            assert events["events"] and all(e["type"] == "Warning" for e in events["events"])
            assert any(
                e["reason"] == "BackOff" and "exited with code 2" in e["message"]
                for e in events["events"]
            )

            log = await ok(
                client,
                "get_pod_logs",
                {"cluster": name, "namespace": "default", "pod": "mcp-looper", "previous": True},
            )
            assert log["lines"] == ["before-the-crash"] and log["previous"] is True
            assert log["container"] == "main" and log["restart_count"] >= 1

            missing = await refused(
                client,
                "get_pod_logs",
                {"cluster": name, "namespace": "default", "pod": "no-such-pod"},
            )
            # The hint names the tool that lists the pods, not the REST route.
            assert missing["code"] == "not_found"
            assert f"list_pods(cluster='{name}', namespace='default')" in missing["hint"]
            assert "/api/v1" not in missing["hint"]
            rest = api.get(f"/api/v1/clusters/{name}/pods", params={"selector": "app in ("})
            assert rest.status_code == 422, rest.text
            error = await refused(client, "list_pods", {"cluster": name, "selector": "app in ("})
            # REST's `query.selector` is the tool's argument `selector`.
            expected = rest.json()["error"]
            assert expected["fields"][0]["field"] == "query.selector"
            assert error["message"] == expected["message"].replace("query.selector: ", "selector: ")
            assert error["fields"][0]["field"] == "selector"
    finally:
        core.delete_namespaced_pod("mcp-looper", "default", grace_period_seconds=0)


async def test_the_same_mutating_call_twice_is_one_mutation(
    mcp_server: McpProcess, sim_aws: SimulatedAws
) -> None:
    name = unique("mcp-idem")
    async with Client(mcp_server.url) as client:
        first = await ok(client, "create_storage_bucket", {"name": name})
        second = await ok(client, "create_storage_bucket", {"name": name})
        assert second["operation_id"] == first["operation_id"]
        assert second["idempotency_key"] == first["idempotency_key"]
        assert first["created"] is True and second["created"] is False
        op = await until_terminal(client, first["operation_id"], timeout=60)
        assert op["status"] == "succeeded", op["summary"]
        # A retry after completion still maps to the same operation and changes nothing.
        third = await ok(client, "create_storage_bucket", {"name": name, "region": None})
        assert third["operation_id"] == first["operation_id"]

    creates = [
        c for c in sim_aws.call_log("s3", "CreateBucket") if c["params"].get("Bucket") == name
    ]
    assert len(creates) == 1


async def test_a_bad_argument_returns_the_rest_validation_message(
    mcp_server: McpProcess, module_stack: RunningStack
) -> None:
    api = module_stack.client
    async with Client(mcp_server.url) as client:
        zone = (await zones_when_ready(client))[0]["zone_id"]
        bad_type = {
            "name": unique("mcp-bad"),
            "availability_zone_id": zone,
            "instance_groups": [{"name": "gpu", "instance_type": "p5.48xlarge", "count": 1}],
        }
        unknown_zone = {
            **bad_type,
            "availability_zone_id": "use1-az9",
            "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 1}],
        }
        # Rejected by the schema (the same model as the REST body) and by the live account check.
        for arguments in (bad_type, unknown_zone):
            rest = api.post("/api/v1/clusters", arguments)
            assert rest.status_code == 422, rest.text
            expected = rest.json()["error"]
            error = await refused(client, "create_cluster", {"cluster": arguments})
            assert error["code"] == "validation_error"
            assert error["message"] == expected["message"]
            assert [(f["field"], f["rule"]) for f in error["fields"]] == [
                (f["field"], f["rule"]) for f in expected["fields"]
            ]

        listed = await ok(client, "list_clusters", {})
        assert bad_type["name"] not in {c["name"] for c in listed["clusters"]}


async def test_with_writes_off_every_mutating_tool_refuses_and_reads_work_over_stdio(
    module_stack: RunningStack, mcp_token: str
) -> None:
    """The default server (no --allow-write) over stdio: mutating tools are listed but refuse."""
    api = module_stack.client
    before = api.get("/api/v1/operations", params={"limit": 500}).json()["items"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_svc"], env=mcp_env(module_stack, mcp_token)
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        # A mutation leaves readOnlyHint at the MCP default (false): only reads set it.
        mutating = [t for t in tools if t.annotations and t.annotations.read_only_hint is None]
        reads = [t for t in tools if t.annotations and t.annotations.read_only_hint is True]
        assert len(mutating) >= 8 and len(reads) >= 14
        for tool in mutating:
            # Even well-formed arguments are refused before anything is sent.
            error = await refused(client, tool.name, {"name": "anything"})
            assert error["code"] == "writes_disabled", (tool.name, error)
            assert "--allow-write" in error["hint"] and "MCP_ALLOW_WRITE=true" in error["hint"]

        listed = await ok(client, "list_clusters", {})
        assert isinstance(listed["clusters"], list)
        await ok(client, "list_storage_buckets", {})
        await ok(client, "list_operations", {"limit": 5})
        page = await ok(client, "list_events", {"limit": 5})
        assert len(page["events"]) <= 5
    after = api.get("/api/v1/operations", params={"limit": 500}).json()["items"]
    assert len(after) == len(before)
    print(json.dumps([t.name for t in mutating]))


# ---- results under 16 KB or paged, on the playbook's cluster ----------------------------------

RESULT_BYTES = 16_000
# The cursor a list tool hands back when there is more: passed as page_token or after.
NEXT_TOKENS = ("next_page_token", "next_after")


def list_calls(cluster: str) -> dict[str, dict[str, Any]]:
    """Every read tool that answers a list, with the arguments that ask for all of it."""
    on = {"cluster": cluster}
    return {
        "list_clusters": {},
        "list_availability_zones": {},
        "list_instance_types": {},
        "list_training_plans": {},
        "list_account_clusters": {},
        "list_storage_buckets": {},
        "list_endpoints": {},
        "list_operations": {},
        "list_events": {},
        "list_audit_log": {},
        "list_dependencies": on,
        "list_instance_groups": on,
        "list_nodes": on,
        "list_training_jobs": on,
        "list_pods": {**on, "namespace": "*"},
        "list_kubernetes_events": on,
        "list_teams": on,  # a cluster's teams are its compute quotas, one per team
        "list_cluster_storage": on,
        "list_spaces": on,
        "list_space_templates": on,
    }


async def test_every_list_result_is_under_16_kb_or_carries_a_next_page_token(
    playbook_cluster: dict[str, Any], mcp_server: McpProcess
) -> None:
    calls = list_calls(playbook_cluster["name"])
    async with Client(mcp_server.url) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert {n for n in listed if n.startswith("list_")} == set(calls)
        sizes: dict[str, int] = {}
        for tool, arguments in calls.items():
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content)
            data = result.structured_content
            assert isinstance(data, dict), tool
            size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
            sizes[tool] = size
            assert size <= RESULT_BYTES or any(data.get(t) for t in NEXT_TOKENS), (tool, size)
    # The longest list of the account (every HyperPod type) comes in pages.
    assert sizes["list_instance_types"] <= RESULT_BYTES, sizes


async def test_instance_types_carry_vcpus_memory_gpus_and_efa(
    mcp_server: McpProcess, module_stack: RunningStack
) -> None:
    """From EC2 DescribeInstanceTypes, through REST and the tool alike."""
    rest = {
        t["instance_type"]: t
        for t in module_stack.client.get("/api/v1/inspect/instance-types").json()
    }
    p5, cpu = rest["ml.p5.48xlarge"], rest["ml.c5.12xlarge"]
    assert p5["vcpus"] == 192 and p5["memory_gib"] == 2048.0
    assert p5["gpu_count"] == 8 and p5["gpu_model"] == "NVIDIA H100"
    assert p5["gpu_memory_gib"] == 80.0
    assert p5["efa_supported"] is True and p5["max_efa_interfaces"] == 32
    assert cpu["vcpus"] == 48 and cpu["gpu_count"] == 0 and cpu["gpu_model"] is None
    assert cpu["gpu_memory_gib"] is None and cpu["efa_supported"] is False
    async with Client(mcp_server.url) as client:
        seen: dict[str, dict[str, Any]] = {}
        page: str | None = None
        while True:
            data = await ok(client, "list_instance_types", {"page_token": page, "limit": 40})
            seen |= {t["instance_type"]: t for t in data["instance_types"]}
            page = data["next_page_token"]
            if page is None:
                break
    assert seen == rest
