"""Fractional GPUs end to end: a cluster with a whole-GPU group, a MIG group (its mig_profile
becomes HyperPod's nvidia.com/mig.config label, its nodes advertise nvidia.com/mig-<profile>)
and a HAMi group (gpu=on, HAMi's device plugin running); jobs asking for partitions, shares and
whole GPUs through REST, MCP and the CLI run where they fit, checked against the emulator's node
allocations, and the requests that cannot fit are refused naming the field."""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from shared.contracts.gpu import MIG_PROFILES
from sim.aws import SimulatedAws
from sim.k8s import ApiServer, KubeWorld
from tests.e2e.conftest import TOKEN, Client, RunningStack, cluster_spec, unique

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

GROUP = "sagemaker.amazonaws.com/instance-group-name"


def _poll(check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not met within {timeout}s"
        time.sleep(0.2)
    return found


@pytest.fixture(scope="module")
def fractional_cluster(module_stack: RunningStack) -> Iterator[tuple[RunningStack, str, str]]:
    """A cluster with groups gpu (whole GPUs), mig (a MIG type split into its smallest
    profile) and shared (labelled gpu=on for HAMi): (stack, cluster, the mig group's type)."""
    api = module_stack.client
    name = unique("frac")
    spec = cluster_spec(api, name, count=1)
    zone = spec["availability_zone_id"]
    offered = {
        t["instance_type"]
        for t in api.get(
            "/api/v1/inspect/instance-types", params={"availability_zone_id": zone}
        ).json()
    }
    mig_type = next(t for t in MIG_PROFILES if t in offered)  # the account offers one
    spec["instance_groups"] += [
        {
            "name": "mig",
            "instance_type": mig_type,
            "count": 1,
            "mig_profile": MIG_PROFILES[mig_type][0],
        },
        {"name": "shared", "instance_type": mig_type, "count": 1, "labels": {"gpu": "on"}},
    ]
    op = api.post("/api/v1/clusters", spec).json()["operation_id"]
    done = api.wait(op, timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield module_stack, name, mig_type
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def _server(sim_aws: SimulatedAws, cluster: str) -> ApiServer:
    kube = sim_aws.ctx.kube
    assert isinstance(kube, KubeWorld)
    return kube.api_server(cluster)


def _node_of(server: ApiServer, group: str) -> dict[str, Any] | None:
    return next(
        (
            n
            for n in server.list_objects("v1", "Node")
            if (n["metadata"].get("labels") or {}).get(GROUP) == group
        ),
        None,
    )


def _job(name: str, group: str, resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "recipe": "pytorch",
        "name": name,
        "instance_group": group,
        "script": "code/train.py",
        "args": ["--max_steps", "100000"],
        "resources": resources,
    }


def _submit(api: Client, cluster: str, spec: dict[str, Any]) -> None:
    answer = api.post(f"/api/v1/clusters/{cluster}/jobs", spec)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=60)
    assert op["status"] == "succeeded", json.dumps(op.get("error"))


def _running_pods(server: ApiServer, job: str) -> list[dict[str, Any]]:
    return [
        p
        for p in server.list_objects("v1", "Pod", "default")
        if (p["metadata"].get("labels") or {}).get("hyperpilot.dev/job") == job
        and (p.get("status") or {}).get("phase") == "Running"
    ]


def _requested(server: ApiServer, node: str) -> dict[str, int]:
    used: dict[str, int] = defaultdict(int)
    for pod in server.list_objects("v1", "Pod"):
        if pod["spec"].get("nodeName") != node or pod["status"].get("phase") in (
            "Succeeded",
            "Failed",
        ):
            continue
        for container in pod["spec"]["containers"]:
            for key, value in ((container.get("resources") or {}).get("limits") or {}).items():
                if key.startswith("nvidia.com/"):
                    used[key] += int(value)
    return dict(used)


def test_mig_group_partitions_and_jobs_run_on_them_on_every_face(
    fractional_cluster: tuple[RunningStack, str, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster, mig_type = fractional_cluster
    api = stack.client
    server = _server(sim_aws, cluster)
    profile = MIG_PROFILES[mig_type][0]  # the smallest: seven per GPU
    resource = f"nvidia.com/{profile}"
    node = _poll(lambda: _node_of(server, "mig"))
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-" + profile.removeprefix("mig-")
    assert labels["nvidia.com/mig.config.state"] == "success"
    assert node["status"]["allocatable"][resource] == "56"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "0"

    # a MIG profile on a type without MIG is refused at the edge, naming the rule
    bad = api.post(
        f"/api/v1/clusters/{cluster}/instance-groups",
        {"name": "nomig", "instance_type": "ml.g5.8xlarge", "count": 1, "mig_profile": profile},
    )
    assert bad.status_code == 422 and "does not support MIG partitions" in bad.text

    # REST: 40 partitions of one node run; whole GPUs and a profile the node lacks are refused
    _submit(api, cluster, _job("parts", "mig", {"gpus": 40, "mig_profile": profile}))
    pods = _poll(lambda: _running_pods(server, "parts"))
    assert pods[0]["spec"]["nodeName"] == node["metadata"]["name"]
    limits = pods[0]["spec"]["containers"][0]["resources"]["limits"]
    assert limits[resource] == "40" and "nvidia.com/gpu" not in limits
    whole = api.post(f"/api/v1/clusters/{cluster}/jobs", _job("whole", "mig", {"gpus": 1}))
    assert whole.status_code == 422 and "no whole GPU is left" in whole.text
    other = MIG_PROFILES[mig_type][2]
    wrong = api.post(
        f"/api/v1/clusters/{cluster}/jobs", _job("wrong", "mig", {"gpus": 1, "mig_profile": other})
    )
    assert wrong.status_code == 422 and f"advertise no nvidia.com/{other}" in wrong.text

    # MCP: the same job shape, previewed by the tool; then submitted: 16 more partitions fit
    async def through_mcp() -> tuple[Any, Any]:
        mcp = build_server(
            McpSettings(allow_write=True, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(mcp) as client:
            too_many = await client.call_tool(
                "submit_training_job",
                {
                    "cluster": cluster,
                    "job": _job("mcp-parts", "mig", {"gpus": 57, "mig_profile": profile}),
                    "dry_run": True,
                },
            )
            fits = await client.call_tool(
                "submit_training_job",
                {
                    "cluster": cluster,
                    "job": _job("mcp-parts", "mig", {"gpus": 16, "mig_profile": profile}),
                },
            )
        return too_many, fits

    too_many, fits = asyncio.run(through_mcp())
    assert too_many.is_error and "57 nvidia.com/" in json.dumps(too_many.content[0].model_dump())
    assert not fits.is_error and fits.structured_content is not None
    done = api.wait(fits.structured_content["operation_id"], timeout=60)
    assert done["status"] == "succeeded", done.get("error")
    _poll(lambda: _running_pods(server, "mcp-parts"))

    # CLI: the node is full now; one more partition stays pending, whole GPUs go to group gpu
    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN}
    runner = CliRunner()
    cli = runner.invoke(
        cli_app,
        [
            *("jobs", "submit", "-c", cluster, "--recipe", "pytorch", "--name", "cli-part"),
            *("--instance-group", "mig", "--script", "code/train.py", "--gpus", "1"),
            *("--mig-profile", profile, "--wait", "-o", "json"),
        ],
        env=env,
    )
    assert cli.exit_code == 0, cli.output
    _submit(api, cluster, _job("gpu-whole", "gpu", {"gpus": 1}))
    _poll(lambda: _running_pods(server, "gpu-whole"))

    def pending_reason() -> str:
        for pod in server.list_objects("v1", "Pod", "default"):
            if (pod["metadata"].get("labels") or {}).get("hyperpilot.dev/job") != "cli-part":
                continue
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("reason") == "Unschedulable":
                    return str(cond.get("message"))
        return ""

    assert f"Insufficient {resource}" in _poll(pending_reason)
    # the emulator's allocations: the MIG node exactly full, nothing over any node
    assert _requested(server, node["metadata"]["name"]) == {resource: 56}
    for each in server.list_objects("v1", "Node"):
        alloc = each["status"].get("allocatable") or {}
        for key, amount in _requested(server, each["metadata"]["name"]).items():
            assert amount <= int(alloc.get(key, "0")), (each["metadata"]["name"], key)
    for job in ("parts", "mcp-parts", "cli-part", "gpu-whole"):
        api.wait(api.delete(f"/api/v1/clusters/{cluster}/jobs/{job}").json()["operation_id"])


def test_hami_shares_are_refused_until_hami_runs_then_placed_per_device(
    fractional_cluster: tuple[RunningStack, str, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster, _ = fractional_cluster
    api = stack.client
    server = _server(sim_aws, cluster)
    _poll(lambda: _node_of(server, "shared"))
    share = {"gpus": 1, "gpu_memory_mib": 20000, "gpu_cores": 40}
    refused = api.post(f"/api/v1/clusters/{cluster}/jobs", _job("share-a", "shared", share))
    assert refused.status_code == 422, refused.text
    assert "HAMi is not installed" in refused.text and "features set --hami" in refused.text
    # HAMi installed as a managed feature: the dry run lists its chart's objects, then the
    # operation applies them (the webhook once the scheduler is available)
    features = f"/api/v1/clusters/{cluster}/features"
    dry = api.http.patch(features, json={"hami": True}, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    planned = {(o["kind"], o["name"]) for o in dry.json()["plan"]["objects"]}
    assert ("DaemonSet", "hami-device-plugin") in planned
    assert ("Deployment", "hami-scheduler") in planned
    accepted = api.http.patch(features, json={"hami": True})
    assert accepted.status_code == 202, accepted.text
    assert api.wait(accepted.json()["operation_id"], timeout=120)["status"] == "succeeded"
    hami = api.get(features).json()["hami"]
    assert hami["enabled"] and hami["installed_by_hyperpilot"] and hami["scheduler_available"]
    assert (
        server.store.get(
            "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", "hami-webhook"
        )
        is not None
    )
    node = _poll(
        lambda: (
            (n := _node_of(server, "shared"))
            and "hami.io/node-nvidia-register" in (n["metadata"].get("annotations") or {})
            and n
        )
    )
    devices = json.loads(node["metadata"]["annotations"]["hami.io/node-nvidia-register"])
    _submit(api, cluster, _job("share-a", "shared", share))
    _submit(api, cluster, _job("share-b", "shared", share))
    a = _poll(lambda: _running_pods(server, "share-a"))[0]
    b = _poll(lambda: _running_pods(server, "share-b"))[0]
    placed = [
        json.loads(p["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"]) for p in (a, b)
    ]
    # two 40%-of-a-GPU shares of 20000 MiB binpack onto one device
    assert placed[0][0]["id"] == placed[1][0]["id"]
    assert placed[0][0] == {"id": placed[0][0]["id"], "mem": 20000, "cores": 40}
    too_big = api.post(
        f"/api/v1/clusters/{cluster}/jobs",
        _job("too-big", "shared", {"gpus": 1, "gpu_memory_mib": devices[0]["devmem"] + 1}),
    )
    assert too_big.status_code == 422 and "MiB per virtual GPU" in too_big.text
    for job in ("share-a", "share-b"):
        api.wait(api.delete(f"/api/v1/clusters/{cluster}/jobs/{job}").json()["operation_id"])
