"""The pure node functions: the health verdict, batching, progress, plans and the watcher's diff."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.domain.nodes.actions import (
    SETTLE_SECONDS,
    action_plan,
    action_progress,
    decide_action,
    failures_error,
)
from cluster_svc.domain.nodes.health import (
    ClusterRecovery,
    KubeNode,
    NodeInstance,
    health_view,
    join_nodes,
)
from cluster_svc.domain.nodes.health_checks import decide_health_check, health_check_progress
from cluster_svc.domain.nodes.recovery import decide_recovery, recovery_plan
from cluster_svc.domain.nodes.watch import NodeRecord, diff_nodes
from shared.contracts.cluster import NodeRecovery
from shared.contracts.nodes import (
    DeleteNodes,
    NodeFailed,
    NodeRecovered,
    NodeReplaced,
    RebootNodes,
    ReplaceNodes,
    SetNodeRecovery,
    StartDeepHealthCheck,
)
from shared.errors import PermanentError

REFS = {"cluster": "c1", "region": "us-east-1", "hyperpod_cluster": "arn:hp/c1"}


def nid(i: int) -> str:
    return f"i-{i:017x}"


def instance(i: int, status: str = "Running", group: str = "gpu", **kw: Any) -> NodeInstance:
    return NodeInstance(
        node_id=nid(i),
        instance_group=group,
        instance_type="ml.g5.8xlarge",
        status=status,
        logical_id=kw.pop("logical_id", f"{group}-{i}"),
        **kw,
    )


def kube(i: int, ready: str = "True", label: str = "Schedulable", **conditions: str) -> KubeNode:
    taints = (
        []
        if label == "Schedulable"
        else [
            {
                "key": "sagemaker.amazonaws.com/node-health-status",
                "value": "Unschedulable",
                "effect": "NoSchedule",
            }
        ]
    )
    return KubeNode(
        name=f"hyperpod-{nid(i)}",
        instance_id=nid(i),
        conditions={"Ready": ready, **conditions},
        condition_messages={"Ready": "kubelet says so"},
        labels={"sagemaker.amazonaws.com/node-health-status": label},
        taints=taints,
    )


# ---- health view ---------------------------------------------------------------------------


def test_a_running_ready_schedulable_node_is_healthy() -> None:
    view = health_view(instance(1), kube(1), "Automatic")
    assert view["health"] == "healthy"
    assert view["next_step"] is None and view["reasons"] == []
    assert view["kubernetes"]["conditions"]["Ready"] == "True"
    assert view["kubernetes"]["health_status"] == "Schedulable"


def test_a_failed_instance_names_the_escalation_that_fits_the_recovery_mode() -> None:
    failed = instance(1, "Failure", message="Node failed health checks")
    automatic = health_view(
        failed, kube(1, "Unknown", "UnschedulablePendingReplacement"), "Automatic"
    )
    manual = health_view(failed, kube(1, "Unknown", "Unschedulable"), "None")
    assert automatic["health"] == manual["health"] == "unhealthy"
    assert "HyperPod replaces it" in automatic["next_step"]
    assert manual["next_step"].index("investigate") < manual["next_step"].index("reboot")
    assert manual["next_step"].index("reboot") < manual["next_step"].index("replace")
    assert "Node failed health checks" in manual["reasons"][0]
    marked = health_view(failed, kube(1, "Unknown", "UnschedulablePendingReplacement"), "None")
    assert marked["next_step"].startswith("replace it (POST .../nodes/replace)")


def test_kubernetes_and_hyperpod_labels_decide_for_a_running_instance() -> None:
    not_ready = health_view(instance(1), kube(1, ready="Unknown"), "None")
    assert not_ready["health"] == "unhealthy"
    assert any("Ready is Unknown" in r for r in not_ready["reasons"])
    pending_reboot = health_view(
        instance(1), kube(1, label="UnschedulablePendingReboot"), "Automatic"
    )
    assert pending_reboot["health"] == "unhealthy"
    assert "HyperPod reboots it" in pending_reboot["next_step"]
    pressure = health_view(instance(1), kube(1, MemoryPressure="True"), "None")
    assert pressure["health"] == "degraded" and "MemoryPressure is True" in pressure["reasons"]
    assert health_view(instance(1), None, "None")["health"] == "unregistered"
    busy = health_view(
        instance(1, "DeepHealthCheckInProgress"), kube(1, label="Unschedulable"), "None"
    )
    assert busy["health"] == "busy" and busy["next_step"].startswith("wait")


def test_join_matches_kubernetes_nodes_by_instance_and_survives_an_unreadable_api() -> None:
    views = join_nodes([instance(2), instance(1)], [kube(1), kube(2, ready="False")], "None")
    assert [v["node_id"] for v in views] == [nid(1), nid(2)]
    assert [v["health"] for v in views] == ["healthy", "unhealthy"]
    blind = join_nodes([instance(1)], None, "None")
    assert blind[0]["health"] == "healthy" and blind[0]["kubernetes"] is None
    assert "Kubernetes was not readable" in blind[0]["reasons"][0]


# ---- batch actions -------------------------------------------------------------------------


def test_sixty_nodes_are_three_calls_of_at_most_25() -> None:
    nodes = [instance(i) for i in range(60)]
    decision = decide_action("reboot", [n.node_id for n in nodes], nodes)
    assert [len(b) for b in decision.batches] == [25, 25, 10]
    assert [i for b in decision.batches for i in b] == [n.node_id for n in nodes]
    plan = action_plan(RebootNodes(**REFS, node_ids=[n.node_id for n in nodes]), nodes)
    assert [c.operation for c in plan.calls] == ["BatchRebootClusterNodes"] * 3
    assert all(len(c.params["NodeIds"]) <= 25 for c in plan.calls)
    assert plan.calls[0].params["ClusterName"] == "arn:hp/c1"


def test_nodes_in_no_state_for_the_action_are_skipped_and_unknown_ones_refused() -> None:
    nodes = [instance(1), instance(2, "Pending", message="Rebooting"), instance(3, "ShuttingDown")]
    reboot = decide_action("reboot", [nid(1), nid(2), nid(9)], nodes)
    assert reboot.batches == [[nid(1)]]
    assert "Pending (Rebooting)" in reboot.skipped[nid(2)]
    assert reboot.unknown == [nid(9)]
    delete = decide_action("delete", [nid(2), nid(3)], nodes)
    assert delete.batches == [[nid(2)]] and nid(3) in delete.skipped
    already = action_plan(DeleteNodes(**REFS, node_ids=[nid(3)]), nodes)
    assert already.noop and already.calls == []
    with pytest.raises(PermanentError) as raised:
        action_plan(ReplaceNodes(**REFS, node_ids=[nid(9)]), nodes)
    assert raised.value.code == "NodeNotFound"
    assert "GET /api/v1/clusters/c1/nodes" in str(raised.value.hint)


def test_reboot_progress_waits_and_a_node_still_failing_is_sent_on_to_replace() -> None:
    submitted = {nid(1): {"logical_id": "gpu-1", "instance_group": "gpu"}}
    done, results = action_progress("reboot", submitted, [instance(1, "Pending")], 1.0)
    assert not done and results[nid(1)]["status"] == "in_progress"
    done, results = action_progress("reboot", submitted, [instance(1)], 1.0)
    assert done and results == {nid(1): {"status": "rebooted"}}
    done, results = action_progress("reboot", submitted, [instance(1, "Failure")], 1.0)
    assert not done
    done, results = action_progress("reboot", submitted, [instance(1, "Failure")], SETTLE_SECONDS)
    assert done and results[nid(1)]["status"] == "failed"
    assert "replace it" in results[nid(1)]["hint"]
    error = failures_error("reboot", "c1", results)
    assert error is not None and error.code == "NodesFailed" and "replace" in str(error.hint)


def test_replace_progress_follows_the_logical_id_or_a_newcomer_of_the_group() -> None:
    submitted = {
        nid(1): {"logical_id": "gpu-1", "instance_group": "gpu", "group_members": [nid(1), nid(2)]}
    }
    done, _ = action_progress("replace", submitted, [instance(1, "Pending"), instance(2)], 1.0)
    assert not done
    new = instance(7, logical_id="gpu-1")
    done, results = action_progress("replace", submitted, [new, instance(2)], 1.0)
    assert done and results[nid(1)] == {"status": "replaced", "replacement": nid(7)}
    anonymous = {
        nid(1): {"logical_id": None, "instance_group": "gpu", "group_members": [nid(1), nid(2)]}
    }
    newcomer = instance(8, "Pending", logical_id=None)
    done, results = action_progress("replace", anonymous, [newcomer, instance(2)], 1.0)
    assert not done and results[nid(1)]["replacement"] == nid(8)
    failed_again = instance(8, "Failure", logical_id=None)
    done, results = action_progress("replace", anonymous, [failed_again, instance(2)], 1.0)
    assert done and results[nid(1)]["status"] == "failed"


def test_delete_progress_ends_when_the_node_is_gone() -> None:
    submitted = {nid(1): {"logical_id": "gpu-1", "instance_group": "gpu"}}
    assert not action_progress("delete", submitted, [instance(1, "ShuttingDown")], 1.0)[0]
    assert action_progress("delete", submitted, [], 1.0) == (True, {nid(1): {"status": "deleted"}})


# ---- deep health checks --------------------------------------------------------------------


def test_health_check_targets_running_nodes_by_group_or_id() -> None:
    nodes = [instance(1), instance(2, "Failure"), instance(3, group="cpu")]
    whole = decide_health_check(StartDeepHealthCheck(**REFS), nodes)
    assert [c["InstanceGroupName"] for c in whole.configurations] == ["cpu", "gpu"]
    assert "InstanceIds" not in whole.configurations[0]
    assert nid(2) in whole.skipped
    by_id = decide_health_check(StartDeepHealthCheck(**REFS, node_ids=[nid(1)]), nodes)
    assert by_id.configurations == [
        {
            "InstanceGroupName": "gpu",
            "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
            "InstanceIds": [nid(1)],
        }
    ]
    unknown = decide_health_check(StartDeepHealthCheck(**REFS, instance_groups=["tpu"]), nodes)
    assert unknown.unknown_groups == ["tpu"]
    done, results = health_check_progress({nid(1): "gpu"}, [instance(1, "Failure")])
    assert done and "reboot it" in results[nid(1)]["hint"]
    assert not health_check_progress({nid(1): "gpu"}, [instance(1, "DeepHealthCheckInProgress")])[0]


# ---- node recovery -------------------------------------------------------------------------


def test_node_recovery_diff_is_empty_when_the_mode_already_matches() -> None:
    assert decide_recovery("Automatic", "Automatic") == {}
    command = SetNodeRecovery(**REFS, mode=NodeRecovery.NONE)
    same = recovery_plan(
        SetNodeRecovery(**REFS, mode=NodeRecovery.AUTOMATIC),
        ClusterRecovery("InService", "Automatic"),
    )
    assert same.noop and same.calls == [] and same.diff == {}
    change = recovery_plan(command, ClusterRecovery("InService", "Automatic"))
    assert not change.noop
    assert change.calls[0].params == {"ClusterName": "arn:hp/c1", "NodeRecovery": "None"}
    assert change.diff["node_recovery"].actual == "Automatic"


# ---- the watcher's diff --------------------------------------------------------------------


def rec(
    i: int, status: str = "Running", health: str = "healthy", logical: str | None = "x"
) -> NodeRecord:
    return NodeRecord(
        nid(i),
        "gpu",
        status,
        health,
        f"gpu-{i}" if logical == "x" else logical,
        {"next_step": "reboot it", "reasons": ["r"]},
    )


def test_diff_reports_a_replacement_by_logical_id_and_failures_and_recoveries() -> None:
    before = {nid(1): rec(1), nid(2): rec(2)}
    failed = {nid(1): rec(1, "Failure", "unhealthy"), nid(2): rec(2)}
    events = diff_nodes("c1", before, failed)
    assert [type(e).__name__ for e in events] == ["NodeStatusChanged", "NodeFailed"]
    assert isinstance(events[1], NodeFailed) and events[1].next_step == "reboot it"
    successor = NodeRecord(nid(9), "gpu", "Running", "healthy", "gpu-1")
    events = diff_nodes("c1", failed, {nid(9): successor, nid(2): rec(2)})
    assert events == [
        NodeReplaced(
            cluster="c1",
            old_node_id=nid(1),
            new_node_id=nid(9),
            instance_group="gpu",
            logical_id="gpu-1",
        )
    ]
    events = diff_nodes("c1", failed, before)
    assert any(isinstance(e, NodeRecovered) for e in events)
    assert diff_nodes("c1", before, before) == []


def test_diff_without_logical_ids_pairs_a_failed_node_with_a_newcomer_of_its_group() -> None:
    before = {nid(1): rec(1, "Failure", "unhealthy", None), nid(2): rec(2, logical=None)}
    after = {nid(2): rec(2, logical=None), nid(5): rec(5, "Pending", "busy", None)}
    events = diff_nodes("c1", before, after)
    assert [type(e).__name__ for e in events] == ["NodeReplaced"]
    removed = diff_nodes("c1", {nid(2): rec(2, logical=None)}, {})
    assert [type(e).__name__ for e in removed] == ["NodeRemoved"]
    added = diff_nodes("c1", {}, {nid(3): rec(3)})
    assert [type(e).__name__ for e in added] == ["NodeAdded"]
