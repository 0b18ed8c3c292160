"""Hardware faults of HyperPod nodes as Kubernetes shows them: the Warning events HyperPod's
health-monitoring agent records on the instance's Node (the simulated AWS decides the fault,
its labels and the instance status; this only writes what a diagnosis reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

AGENT = "sagemaker-health-monitoring-agent"


def record_node_fault(server: ApiServer, instance_id: str, reason: str, message: str) -> None:
    """A Warning event `reason: message` on Node hyperpod-<instance_id> (nothing if it is gone)."""

    def record() -> None:
        node = server.store.get("nodes", "", f"hyperpod-{instance_id}")
        if node is not None:
            server.events.record(node, reason, message, "Warning", AGENT)

    server.run_on_loop(record)
