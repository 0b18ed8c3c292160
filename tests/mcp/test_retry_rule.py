"""The MCP's derived key against the real stack (docs/operations.md, "Retries and
idempotency"): a call without a request_id is a retry only while the latest operation on its
target is the one it started; after another change there the same arguments are a new request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, cluster_spec, unique
from tests.mcp.conftest import McpProcess
from tests.mcp.test_e2e import ok, until_terminal


def _updates(sim: SimulatedAws, cluster: str) -> list[dict[str, Any]]:
    return [
        c
        for c in sim.call_log("sagemaker", "UpdateCluster")
        if c["params"].get("ClusterName") == cluster
    ]


@pytest.fixture(scope="module")
def rest_cluster(module_stack: RunningStack) -> Iterator[str]:
    api = module_stack.client
    name = unique("mcp-retry")
    op = api.post("/api/v1/clusters", cluster_spec(api, name)).json()["operation_id"]
    done = api.wait(op, timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    yield name
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


async def _scale(client: Client, cluster: str, count: int, **extra: Any) -> dict[str, Any]:
    return await ok(
        client,
        "update_instance_group",
        {"cluster": cluster, "group": "gpu", "change": {"count": count}, **extra},
    )


async def test_a_change_repeated_after_another_change_is_a_new_request(
    rest_cluster: str, mcp_server: McpProcess, module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    name = rest_cluster
    async with Client(mcp_server.url) as client:
        to3 = await _scale(client, name, 3)
        assert to3["created"] is True
        # An identical immediate retry: the same operation, no second change.
        retry = await _scale(client, name, 3)
        assert retry["operation_id"] == to3["operation_id"] and retry["created"] is False
        assert retry["idempotency_key"] == to3["idempotency_key"]
        assert (await until_terminal(client, to3["operation_id"], 120))["status"] == "succeeded"
        calls = len(_updates(sim_aws, name))

        # Still nothing else on the cluster: a retry after completion changes nothing.
        late = await _scale(client, name, 3)
        assert late["operation_id"] == to3["operation_id"] and late["created"] is False
        assert len(_updates(sim_aws, name)) == calls

        to2 = await _scale(client, name, 2)
        assert to2["created"] is True
        assert (await until_terminal(client, to2["operation_id"], 120))["status"] == "succeeded"

        # 3 again after the change to 2: a new operation, and the group ends at 3.
        again = await _scale(client, name, 3)
        assert again["created"] is True, again["summary"]
        assert again["operation_id"] not in (to3["operation_id"], to2["operation_id"])
        replayed = await _scale(client, name, 3)
        assert replayed["operation_id"] == again["operation_id"]
        assert replayed["created"] is False
        assert (await until_terminal(client, again["operation_id"], 120))["status"] == "succeeded"
        groups = await ok(client, "list_instance_groups", {"cluster": name})
        assert {g["name"]: g["count"] for g in groups["instance_groups"]}["gpu"] == 3

        # An explicit request_id names its request for good, whatever happened since.
        keyed = await _scale(client, name, 2, request_id="down-to-2")
        assert keyed["created"] is True
        assert (await until_terminal(client, keyed["operation_id"], 120))["status"] == "succeeded"
        up = await _scale(client, name, 3)
        assert up["created"] is True
        assert (await until_terminal(client, up["operation_id"], 120))["status"] == "succeeded"
        calls = len(_updates(sim_aws, name))
        same = await _scale(client, name, 2, request_id="down-to-2")
        assert same["operation_id"] == keyed["operation_id"] and same["created"] is False
        assert len(_updates(sim_aws, name)) == calls

    # Each scale reached SageMaker once: to 3, to 2, to 3, to 2, to 3.
    counts = [
        g["InstanceCount"]
        for c in _updates(sim_aws, name)
        for g in c["params"].get("InstanceGroups", [])
        if g.get("InstanceGroupName") == "gpu"
    ]
    assert counts[-5:] == [3, 2, 3, 2, 3], counts


def test_the_derived_key_is_scoped_to_the_target_unless_a_request_id_names_the_request() -> None:
    from gateway.accept import check_idempotency_key
    from mcp_svc.client import idempotency_key
    from shared.operations import TARGET_SCOPED

    derived = idempotency_key("update_instance_group", {"cluster": "c", "count": 3})
    assert derived.startswith("mcp:update_instance_group:") and derived.endswith(TARGET_SCOPED)
    assert check_idempotency_key(derived) == derived
    named = idempotency_key("update_instance_group", {"count": 3, "request_id": "r1"})
    assert not named.endswith(TARGET_SCOPED) and check_idempotency_key(named) == named
    # A request_id left unset (None, as the tools pass it) derives a target-scoped key.
    unset = idempotency_key("update_instance_group", {"count": 3, "request_id": None})
    assert unset.endswith(TARGET_SCOPED)
