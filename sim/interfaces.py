"""The seam between the simulated AWS (sim/aws) and the Kubernetes emulator (sim/k8s).

The simulated AWS owns EKS clusters and HyperPod nodes; the emulator owns one Kubernetes API
server per EKS cluster. The simulated AWS tells the emulator when a cluster's API server must
exist and which HyperPod nodes it has; the emulator tells nothing back but endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ClusterEndpoint:
    """What EKS DescribeCluster returns about a cluster's Kubernetes API."""

    endpoint: str  # https://127.0.0.1:<port>
    ca_pem: str  # PEM of the CA that signed the server certificate
    oidc_issuer: str  # https issuer URL usable for IRSA


@dataclass(frozen=True)
class SimNode:
    """A HyperPod cluster node as the simulated AWS sees it."""

    instance_id: str  # i-0123456789abcdef0
    instance_group: str
    instance_type: str  # ml.p5.48xlarge
    status: str  # Running | Failure | Pending | ShuttingDown | SystemUpdating | DeepHealthCheckInProgress
    availability_zone: str
    hyperpod_cluster: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)


class KubeHooks(Protocol):
    def start_cluster(self, name: str) -> ClusterEndpoint:
        """Start (or return the running) emulated API server of EKS cluster `name`."""
        ...

    def stop_cluster(self, name: str) -> None:
        """Stop the API server of `name` and forget its objects (the cluster was deleted)."""
        ...

    def sync_nodes(self, cluster_name: str, nodes: list[SimNode]) -> None:
        """Make the cluster's Node objects match the HyperPod nodes attached to it."""
        ...

    def install(self, cluster_name: str, component: str) -> None:
        """An EKS add-on became ACTIVE: put what it installs (CRDs, CSI drivers, workloads) into
        the cluster. Raises ValueError for an add-on the emulator does not know."""
        ...


@runtime_checkable
class NodeFaultHooks(Protocol):
    """What an emulator may offer beside KubeHooks: the Kubernetes side of a HyperPod node's
    hardware fault (a Warning event on its Node, e.g. GpuXidError with the kernel's Xid line)."""

    def node_fault(
        self, cluster_name: str, instance_id: str, reason: str, message: str
    ) -> None: ...

    def node_fault_cleared(self, cluster_name: str, instance_id: str) -> None:
        """The instance's fault healed (a reboot cleared it)."""
        ...


@runtime_checkable
class EksFactsHooks(Protocol):
    """What an emulator may offer beside KubeHooks: an EKS cluster as EKS itself describes it
    (DescribeCluster's `cluster`, and the `nodegroup` of DescribeNodegroup for each of its
    managed node groups, with their subnets as EC2 DescribeSubnets describes them, by id),
    given before its API server starts and again whenever it changes (a node group becomes
    ACTIVE, scales or goes; the control plane is upgraded). The API server's version, its
    service CIDR and its node-group nodes (their zones and addresses) then agree with what EKS
    and EC2 answer."""

    def eks_cluster_described(
        self,
        cluster_name: str,
        cluster: dict[str, Any],
        nodegroups: list[dict[str, Any]],
        subnets: dict[str, dict[str, Any]] | None = None,
    ) -> None: ...
