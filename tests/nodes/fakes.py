"""A fake NodesPort: nodes in memory, every call recorded, HyperPod's behaviour scripted."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from cluster_svc.domain.nodes.health import BatchResult, ClusterRecovery, NodeInstance
from shared.contracts.nodes import BATCH_LIMIT, NodeAction
from shared.stages import StageContext
from tests.cluster_network.helpers import parsed


def nid(i: int) -> str:
    return f"i-{i:017x}"


class FakeNodes:
    def __init__(self, count: int, mode: str = "Automatic") -> None:
        self.nodes = {
            nid(i): NodeInstance(nid(i), "gpu", "ml.g5.8xlarge", "Running", logical_id=f"gpu-{i}")
            for i in range(count)
        }
        self.mode = mode
        self.status = "InService"
        self.calls: list[tuple[str, Any]] = []
        self.refuse: dict[str, str] = {}  # node id -> error code the batch call answers
        self._next = 1000

    async def list_nodes(self, cluster: str) -> list[NodeInstance]:
        return list(self.nodes.values())

    async def describe_node(self, cluster: str, node_id: str) -> dict[str, Any] | None:
        return None

    async def batch(self, action: NodeAction, cluster: str, node_ids: list[str]) -> BatchResult:
        assert len(node_ids) <= BATCH_LIMIT
        self.calls.append((action, list(node_ids)))
        failed = {
            i: {"code": self.refuse[i], "message": "no"} for i in node_ids if i in self.refuse
        }
        ok = [i for i in node_ids if i not in failed]
        for node_id in ok:
            node = self.nodes[node_id]
            if action == "reboot":
                self.nodes[node_id] = replace(node, status="Pending", message="Rebooting")
            elif action == "replace":
                self.nodes[node_id] = replace(node, status="Pending", message="Replacing")
            else:
                self.nodes[node_id] = replace(node, status="ShuttingDown")
        return BatchResult(successful=ok, failed=failed)

    def settle(self, status: str = "Running") -> None:
        """HyperPod finishes: reboots end in `status`, replacements get new ids, deletes go."""
        for node_id, node in list(self.nodes.items()):
            if node.status == "ShuttingDown":
                del self.nodes[node_id]
            elif node.message == "Replacing":
                del self.nodes[node_id]
                self._next += 1
                new = nid(self._next)
                self.nodes[new] = replace(node, node_id=new, status=status, message=None)
            elif node.status in ("Pending", "DeepHealthCheckInProgress"):
                self.nodes[node_id] = replace(node, status=status, message=None)

    async def start_health_check(self, cluster: str, configurations: list[dict[str, Any]]) -> None:
        self.calls.append(("health_check", configurations))
        for config in configurations:
            for node_id, node in list(self.nodes.items()):
                wanted = config.get("InstanceIds")
                if node.instance_group == config["InstanceGroupName"] and (
                    wanted is None or node_id in wanted
                ):
                    self.nodes[node_id] = replace(node, status="DeepHealthCheckInProgress")

    async def node_recovery(self, cluster: str) -> ClusterRecovery | None:
        return ClusterRecovery(self.status, self.mode)

    async def set_node_recovery(self, cluster: str, mode: str) -> None:
        self.calls.append(("update_cluster", {"NodeRecovery": mode}))
        self.mode = mode

    async def node_events(self, cluster: str, node_id: str) -> list[dict[str, Any]]:
        return []


def context(
    command: dict[str, Any],
    outputs: dict[str, dict[str, Any]] | None = None,
    own: dict[str, Any] | None = None,
    stage: str = "s",
) -> StageContext[Any]:
    async def report(message: str) -> None:
        return None

    return StageContext(
        operation_id=uuid.uuid4(),
        stage=stage,
        command=command,
        outputs=outputs or {},
        external_id=None,
        own_outputs=own or {},
        _report=report,
        _parsed=parsed(command),
    )
