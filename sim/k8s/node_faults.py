"""Hardware faults of HyperPod nodes as Kubernetes shows them: the Warning event HyperPod's
health-monitoring agent records on the instance's Node, and what the programs running on it
print when their GPU or EFA device fails (the simulated AWS decides the fault, its labels and
the instance status; this only writes what a diagnosis reads)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sim.k8s.store import Obj, clone

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

AGENT = "sagemaker-health-monitoring-agent"
XID = re.compile(r"NVRM: Xid \([^)]*\): (\d+)")  # the kernel's line: "NVRM: Xid (PCI:...): 79, ..."
FAULT_LABELS = ("sagemaker.amazonaws.com/fault-type", "sagemaker.amazonaws.com/fault-reason")

# What a CUDA or NCCL program on the node prints when the device under it fails, and the
# extended resource a container must use to notice.
PROGRAM_LINES: dict[str, tuple[str, str]] = {
    "GpuXidError": ("nvidia.com/gpu", "RuntimeError: CUDA error: unspecified launch failure"),
    "DeepHealthCheckFailed": (
        "nvidia.com/gpu",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    ),
    "EfaError": (
        "vpc.amazonaws.com/efa",
        "NCCL WARN NET/OFI Request completed with error: Input/output error",
    ),
}


def record_node_fault(server: ApiServer, instance_id: str, reason: str, message: str) -> None:
    """A Warning event `reason: message` on Node hyperpod-<instance_id>, and the failing
    program's line in the log of each running container on it that uses the device."""
    name = f"hyperpod-{instance_id}"

    def record() -> None:
        node = server.store.get("nodes", "", name)
        if node is None:
            return
        server.events.record(node, reason, message, "Warning", AGENT)
        _exported(server, name, reason, message)
        resource, line = PROGRAM_LINES.get(reason, ("", ""))
        if not line:
            return
        for pod in server.store.items("pods"):
            if pod["spec"].get("nodeName") != name:
                continue
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            for container in pod["spec"].get("containers") or []:
                if _uses(container, resource):
                    meta = pod["metadata"]
                    server.logs.write(meta["namespace"], meta["name"], container["name"], line)

    server.run_on_loop(record)


def _exported(server: ApiServer, node: str, reason: str, message: str) -> None:
    """What the node's exporters show of the fault: the kernel's Xid as the first GPU's
    DCGM_FI_DEV_XID_ERRORS, an EFA error as the EFA exporter's error counters."""
    xid = XID.search(message)
    try:
        if reason == "GpuXidError" and xid is not None:
            server.telemetry.inject_xid(node, 0, int(xid.group(1)))
        elif reason == "EfaError":
            server.telemetry.inject_efa_errors(node)
    except ValueError:
        pass  # a node without GPUs or EFA devices exports nothing of it


def clear_node_fault(server: ApiServer, instance_id: str) -> None:
    """The fault healed (a reboot cleared it): the Node loses its fault-type/fault-reason, and
    its GPUs their last XID (the driver reloads with the reboot)."""
    server.telemetry.clear_node(f"hyperpod-{instance_id}")

    def clear() -> None:
        node = server.store.get("nodes", "", f"hyperpod-{instance_id}")
        labels = (node or {}).get("metadata", {}).get("labels") or {}
        if node is None or not any(k in labels for k in FAULT_LABELS):
            return
        healed = clone(node)
        for key in FAULT_LABELS:
            healed["metadata"]["labels"].pop(key, None)
        server.nodes.update("nodes", healed)

    server.run_on_loop(clear)


def _uses(container: Obj, resource: str) -> bool:
    resources = container.get("resources") or {}
    return any(resource in (resources.get(k) or {}) for k in ("limits", "requests"))
