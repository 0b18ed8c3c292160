"""What an emulated API server knows about its EKS cluster, read from the cluster's own
description (EKS DescribeCluster and DescribeNodegroup, in their response shapes), so that the
Kubernetes version, the service CIDR and the nodes agree with what EKS says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# what EKS picks when CreateCluster names no service CIDR and the VPC is in 10.0.0.0/8
DEFAULT_SERVICE_CIDR = "172.20.0.0/16"


@dataclass(frozen=True)
class NodeGroup:
    """An EKS managed node group: its nodes carry `eks.amazonaws.com/nodegroup=<name>`."""

    name: str
    instance_type: str = "m5.2xlarge"
    size: int = 2
    capacity_type: str = "ON_DEMAND"


@dataclass(frozen=True)
class ClusterFacts:
    kubernetes_version: str = "1.33.0"  # major.minor.patch, as /version reports it
    service_cidr: str = DEFAULT_SERVICE_CIDR
    node_groups: tuple[NodeGroup, ...] = field(default_factory=tuple)

    @classmethod
    def from_description(
        cls, cluster: Mapping[str, Any], nodegroups: Sequence[Mapping[str, Any]] = ()
    ) -> ClusterFacts:
        """From DescribeCluster's `cluster` and each DescribeNodegroup's `nodegroup`."""
        version = str(cluster.get("version") or "1.33")
        network = cluster.get("kubernetesNetworkConfig") or {}
        groups = tuple(
            NodeGroup(
                name=str(ng["nodegroupName"]),
                instance_type=str((ng.get("instanceTypes") or ["m5.2xlarge"])[0]),
                size=int((ng.get("scalingConfig") or {}).get("desiredSize", 0)),
                capacity_type=str(ng.get("capacityType") or "ON_DEMAND"),
            )
            for ng in nodegroups
            if ng.get("status", "ACTIVE") == "ACTIVE"
        )
        return cls(
            kubernetes_version=version if version.count(".") == 2 else f"{version}.0",
            service_cidr=str(network.get("serviceIpv4Cidr") or DEFAULT_SERVICE_CIDR),
            node_groups=groups,
        )


# an API server started without an EKS cluster's description (tests, benchmarks): one managed
# node group of two nodes, named `system`
STANDALONE = ClusterFacts(node_groups=(NodeGroup("system"),))
