"""Nodes end to end, through REST against the real stack and the simulated AWS + Kubernetes.

Must show: a node failure injected with NodeRecovery=Automatic is replaced and the replacement
is reported as events; with None, the node stays failed and a replace operation fixes it. Also:
the health view joins HyperPod and Kubernetes, dry runs answer plans, node recovery is an
explicit diff (a no-op without UpdateCluster; UpdateCluster carries NodeRecovery alone), bad
node ids are 422s with the field and the way out, deep health checks and deletes report
per-node results.

The tests run in order on one cluster (`created_cluster`, two nodes).
"""

from __future__ import annotations

import time
from typing import Any

from sim.aws import SimulatedAws
from sim.testing import inject_fault
from tests.e2e.conftest import Client, RunningStack
from tests.e2e.node_helpers import events as _events
from tests.e2e.node_helpers import fast_node_watch  # noqa: F401 (a module-wide fixture)
from tests.e2e.node_helpers import last_seq as _last_seq
from tests.e2e.node_helpers import wait_event as _wait_event


def _nodes(api: Client, name: str) -> dict[str, Any]:
    answer = api.get(f"/api/v1/clusters/{name}/nodes")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _hyperpod_arn(api: Client, name: str) -> str:
    return str(api.get(f"/api/v1/clusters/{name}").json()["hyperpod_cluster_arn"])


def _wait_healthy(api: Client, name: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        nodes: list[dict[str, Any]] = _nodes(api, name)["nodes"]
        if len(nodes) == count and all(n["health"] == "healthy" for n in nodes):
            return nodes
        assert time.monotonic() < deadline, f"nodes not all healthy: {nodes}"
        time.sleep(0.2)


def test_nodes_join_hyperpod_and_kubernetes(created_cluster: tuple[RunningStack, str]) -> None:
    stack, name = created_cluster
    api = stack.client
    nodes = _wait_healthy(api, name, 2)
    listed = _nodes(api, name)
    assert listed["node_recovery"] == "Automatic"
    assert listed["kubernetes_readable"] is True
    assert listed["summary"] == {"healthy": 2}
    for node in nodes:
        assert node["node_id"].startswith("i-")
        assert node["instance_status"] == "Running"
        assert node["instance_group"] == "gpu"
        kube = node["kubernetes"]
        assert kube["node_name"] == f"hyperpod-{node['node_id']}"
        assert kube["conditions"]["Ready"] == "True"
        assert kube["health_status"] == "Schedulable"
        assert node["next_step"] is None
    one = api.get(f"/api/v1/clusters/{name}/nodes/{nodes[0]['node_id']}")
    assert one.status_code == 200, one.text
    described = one.json()
    assert described["details"]["InstanceId"] == nodes[0]["node_id"]
    assert described["details"]["Placement"]["AvailabilityZoneId"]
    assert isinstance(described["events"], list)
    missing = api.get(f"/api/v1/clusters/{name}/nodes/i-00000000000000000")
    assert missing.status_code == 404
    assert "GET /api/v1/clusters" in missing.json()["error"]["hint"]


def test_nodes_are_listed_a_page_at_a_time_live_or_as_recorded(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, name = created_cluster
    api = stack.client
    everyone = [n["node_id"] for n in _wait_healthy(api, name, 2)]
    deadline = time.monotonic() + 30
    for source in ("live", "recorded"):
        seen: list[str] = []
        after = None
        while True:
            params: dict[str, Any] = {"source": source, "limit": 1}
            if after:
                params["after"] = after
            page = api.get(f"/api/v1/clusters/{name}/nodes", params=params)
            assert page.status_code == 200, page.text
            body = page.json()
            if source == "recorded" and body["total"] < 2:  # the watcher's first record
                assert time.monotonic() < deadline, body
                time.sleep(0.3)
                continue
            assert (body["source"], body["total"], body["summary"]) == (source, 2, {"healthy": 2})
            assert len(body["nodes"]) == 1
            seen.append(body["nodes"][0]["node_id"])
            after = body["next_after"]
            if after is None:
                break
            assert after == f"gpu/{seen[-1]}"
        assert seen == sorted(everyone), source
    refused = api.get(f"/api/v1/clusters/{name}/nodes", params={"after": "gpu/not-a-node"})
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["error"]["fields"]
    assert (error["field"], error["rule"]) == ("after", "node_cursor")
    assert "next_after" in error["hint"]
    too_many = api.get(f"/api/v1/clusters/{name}/nodes", params={"limit": 501})
    assert too_many.status_code == 422, too_many.text
    missing = api.get("/api/v1/clusters/no-such-cluster/nodes", params={"source": "recorded"})
    assert missing.status_code == 404, missing.text


def test_automatic_recovery_replaces_a_failed_node_and_reports_it(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    victim = _wait_healthy(api, name, 2)[0]["node_id"]
    time.sleep(1.0)  # the watcher has recorded the healthy baseline
    after = _last_seq(api)
    replaces_before = len(sim_aws.call_log("sagemaker", "BatchReplaceClusterNodes"))
    with inject_fault(sim_aws, "node_failure", cluster=_hyperpod_arn(api, name), node_ids=[victim]):
        pass
    replaced = _wait_event(api, after, "NodeReplaced", old_node_id=victim)
    new_id = replaced["payload"]["new_node_id"]
    assert new_id != victim and new_id.startswith("i-")
    assert replaced["payload"]["instance_group"] == "gpu"
    assert replaced["operation_id"] is None and replaced["principal"] == "cluster-svc"
    nodes = _wait_healthy(api, name, 2)
    assert new_id in {n["node_id"] for n in nodes} and victim not in {n["node_id"] for n in nodes}
    # HyperPod did it on its own: Hyperpilot sent no replace.
    assert len(sim_aws.call_log("sagemaker", "BatchReplaceClusterNodes")) == replaces_before
    deadline = time.monotonic() + 15
    while True:  # its audit row commits with the event
        audit = api.get("/api/v1/audit", params={"principal": "cluster-svc", "limit": 1000}).json()
        if any(
            a["type"] == "NodeReplaced" and a["payload"]["old_node_id"] == victim for a in audit
        ):
            break
        assert time.monotonic() < deadline, "the replacement is not in the audit log"
        time.sleep(0.2)


def test_node_recovery_is_an_explicit_diff(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    updates = len(sim_aws.call_log("sagemaker", "UpdateCluster"))
    same = api.http.put(
        f"/api/v1/clusters/{name}/node-recovery",
        params={"dry_run": "true"},
        json={"mode": "Automatic"},
    )
    assert same.status_code == 200, same.text
    assert same.json()["plan"]["noop"] is True and same.json()["plan"]["calls"] == []
    accepted = api.http.put(f"/api/v1/clusters/{name}/node-recovery", json={"mode": "Automatic"})
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["noop"] is True and accepted.json()["diff"] == {}
    assert api.wait(accepted.json()["operation_id"])["status"] == "noop"
    assert len(sim_aws.call_log("sagemaker", "UpdateCluster")) == updates

    planned = api.http.patch(
        f"/api/v1/clusters/{name}/node-recovery", params={"dry_run": "true"}, json={"mode": "None"}
    ).json()["plan"]
    assert planned["diff"] == {"node_recovery": {"actual": "Automatic", "requested": "None"}}
    assert [c["operation"] for c in planned["calls"]] == ["UpdateCluster"]
    assert len(sim_aws.call_log("sagemaker", "UpdateCluster")) == updates  # a dry run calls nothing

    bad = api.http.put(f"/api/v1/clusters/{name}/node-recovery", json={"mode": "Sometimes"})
    assert bad.status_code == 422
    assert bad.json()["error"]["fields"][0]["field"].endswith("mode")

    after = _last_seq(api)
    changed = api.http.patch(f"/api/v1/clusters/{name}/node-recovery", json={"mode": "None"})
    assert changed.status_code == 202, changed.text
    assert changed.json()["diff"]["node_recovery"]["requested"] == "None"
    op = api.wait(changed.json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    calls = sim_aws.call_log("sagemaker", "UpdateCluster")[updates:]
    assert len(calls) == 1
    assert set(calls[0]["params"]) == {"ClusterName", "NodeRecovery"}  # no instance group resent
    assert calls[0]["params"]["NodeRecovery"] == "None"
    _wait_event(api, after, "NodeRecoveryChanged", cluster=name, mode="None", previous="Automatic")
    assert _nodes(api, name)["node_recovery"] == "None"
    assert api.get(f"/api/v1/clusters/{name}").json()["spec"]["node_recovery"] == "None"


def test_without_recovery_a_failed_node_stays_failed_until_replaced(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    assert _nodes(api, name)["node_recovery"] == "None"
    victim = _wait_healthy(api, name, 2)[0]["node_id"]
    time.sleep(1.0)
    after = _last_seq(api)
    with inject_fault(sim_aws, "node_failure", cluster=_hyperpod_arn(api, name), node_ids=[victim]):
        pass
    failed = _wait_event(api, after, "NodeFailed", node_id=victim)
    assert "reboot" in failed["payload"]["next_step"]
    time.sleep(3.0)  # well past the time HyperPod's automatic recovery needs in this profile
    node = api.get(f"/api/v1/clusters/{name}/nodes/{victim}").json()
    assert node["instance_status"] == "Failure"
    assert node["health"] == "unhealthy"
    assert node["kubernetes"]["health_status"].startswith("Unschedulable")
    assert any(
        t["key"] == "sagemaker.amazonaws.com/node-health-status"
        for t in node["kubernetes"]["taints"]
    )
    assert "investigate" in node["next_step"] and "replace" in node["next_step"]
    assert any("failed health checks" in (e["description"] or "") for e in node["events"])
    assert not [e for e in _events(api, after) if e["type"] == "NodeReplaced"]

    planned = api.post(
        f"/api/v1/clusters/{name}/nodes/replace", {"node_ids": [victim]}, params={"dry_run": "true"}
    )
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert plan["calls"] == [
        {
            "service": "sagemaker",
            "operation": "BatchReplaceClusterNodes",
            "params": {"ClusterName": _hyperpod_arn(api, name), "NodeIds": [victim]},
        }
    ]
    assert plan["diff"] == {victim: {"actual": "Failure", "requested": "replaced"}}

    accepted = api.post(f"/api/v1/clusters/{name}/nodes/replace", {"node_ids": [victim]})
    assert accepted.status_code == 202, accepted.text
    op = api.wait(accepted.json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    result = op["result"]["replace_nodes"]["results"][victim]
    assert result["status"] == "replaced"
    new_id = result["replacement"]
    replaced = _wait_event(api, after, "NodeReplaced", old_node_id=victim)
    assert replaced["payload"]["new_node_id"] == new_id
    _wait_event(api, after, "NodeOperationFinished", action="replace")
    nodes = _wait_healthy(api, name, 2)
    assert new_id in {n["node_id"] for n in nodes}


def test_bad_node_ids_are_rejected_with_the_way_out(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, name = created_cluster
    api = stack.client
    unknown = api.post(
        f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": ["i-0000000000000000a"]}
    )
    assert unknown.status_code == 422, unknown.text
    field = unknown.json()["error"]["fields"][0]
    assert field["field"] == "node_ids" and field["rule"] == "node_exists"
    assert f"/api/v1/clusters/{name}/nodes" in field["hint"]
    malformed = api.post(f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": ["node-1"]})
    assert malformed.status_code == 422
    assert "GET /api/v1/clusters/{name}/nodes" in malformed.json()["error"]["fields"][0]["hint"]
    node_id = _nodes(api, name)["nodes"][0]["node_id"]
    twice = api.post(f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": [node_id, node_id]})
    assert twice.status_code == 422
    empty = api.post(f"/api/v1/clusters/{name}/nodes/delete", {"node_ids": []})
    assert empty.status_code == 422
    extra = api.post(
        f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": [node_id], "force": True}
    )
    assert extra.status_code == 422
    nowhere = api.post("/api/v1/clusters/no-such-cluster/nodes/reboot", {"node_ids": [node_id]})
    assert nowhere.status_code == 404


def test_reboot_and_deep_health_check_report_per_node_results(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    ids = [n["node_id"] for n in _wait_healthy(api, name, 2)]
    reboots = len(sim_aws.call_log("sagemaker", "BatchRebootClusterNodes"))
    accepted = api.post(f"/api/v1/clusters/{name}/nodes/reboot", {"node_ids": ids})
    assert accepted.status_code == 202, accepted.text
    assert set(accepted.json()["diff"]) == set(ids)
    op = api.wait(accepted.json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    results = op["result"]["reboot_nodes"]["results"]
    assert {k: v["status"] for k, v in results.items()} == dict.fromkeys(ids, "rebooted")
    calls = sim_aws.call_log("sagemaker", "BatchRebootClusterNodes")[reboots:]
    assert len(calls) == 1 and sorted(calls[0]["params"]["NodeIds"]) == sorted(ids)

    _wait_healthy(api, name, 2)
    checked = api.post(
        f"/api/v1/clusters/{name}/nodes/health-checks", {"checks": ["InstanceStress"]}
    )
    assert checked.status_code == 202, checked.text
    op = api.wait(checked.json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    results = op["result"]["health_check"]["results"]
    assert {k: v["status"] for k, v in results.items()} == dict.fromkeys(ids, "passed")
    started = sim_aws.call_log("sagemaker", "StartClusterHealthCheck")[-1]["params"]
    assert started["DeepHealthCheckConfigurations"] == [
        {"InstanceGroupName": "gpu", "DeepHealthChecks": ["InstanceStress"]}
    ]
    bad_group = api.post(
        f"/api/v1/clusters/{name}/nodes/health-checks", {"instance_groups": ["cpu"]}
    )
    assert bad_group.status_code == 422
    assert bad_group.json()["error"]["fields"][0]["field"] == "instance_groups"


def test_delete_a_node_lowers_its_group(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, name = created_cluster
    api = stack.client
    ids = [n["node_id"] for n in _wait_healthy(api, name, 2)]
    time.sleep(1.0)
    after = _last_seq(api)
    accepted = api.post(f"/api/v1/clusters/{name}/nodes/delete", {"node_ids": [ids[0]]})
    assert accepted.status_code == 202, accepted.text
    op = api.wait(accepted.json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    assert op["result"]["delete_nodes"]["results"] == {ids[0]: {"status": "deleted"}}
    _wait_event(api, after, "NodeRemoved", node_id=ids[0])
    assert [n["node_id"] for n in _wait_healthy(api, name, 1)] == [ids[1]]
    again = api.post(f"/api/v1/clusters/{name}/nodes/delete", {"node_ids": [ids[0]]})
    assert again.status_code == 422  # it is gone: the field names it and where to look


def test_roles_viewers_read_operators_reboot_admins_replace_and_delete(
    created_cluster: tuple[RunningStack, str],
) -> None:
    stack, name = created_cluster
    api = stack.client
    tokens = {
        role: api.post("/api/v1/tokens", {"name": f"nodes-{role}", "role": role}).json()["token"]
        for role in ("viewer", "operator")
    }
    node_id = _nodes(api, name)["nodes"][0]["node_id"]
    body = {"node_ids": [node_id]}
    viewer = Client(stack.stack.url, tokens["viewer"])
    operator = Client(stack.stack.url, tokens["operator"])
    assert viewer.get(f"/api/v1/clusters/{name}/nodes").status_code == 200
    assert viewer.post(f"/api/v1/clusters/{name}/nodes/reboot", body).status_code == 403
    for verb in ("replace", "delete"):
        refused = operator.post(f"/api/v1/clusters/{name}/nodes/{verb}", body)
        assert refused.status_code == 403, refused.text
    planned = operator.post(
        f"/api/v1/clusters/{name}/nodes/reboot", body, params={"dry_run": "true"}
    )
    assert planned.status_code == 200
    assert planned.json()["plan"]["calls"][0]["operation"] == "BatchRebootClusterNodes"
