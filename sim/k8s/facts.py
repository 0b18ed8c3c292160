"""What an emulated API server knows about its EKS cluster, read from the cluster's own
description (EKS DescribeCluster and DescribeNodegroup, in their response shapes), so that the
Kubernetes version, the service CIDR and the nodes agree with what EKS says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# what EKS picks when CreateCluster names no service CIDR and the VPC is in 10.0.0.0/8
DEFAULT_SERVICE_CIDR = "172.20.0.0/16"

# a node group's nodes exist from ACTIVE until the group is gone: while it updates, is
# degraded or is being deleted (its nodes drain when it is removed)
# (Amazon EKS API Reference, Nodegroup.status:
# https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html)
_NODES_EXIST = frozenset({"ACTIVE", "UPDATING", "DEGRADED", "DELETING"})

# EKS taint effects as Kubernetes writes them (Amazon EKS API Reference, Taint:
# https://docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html)
_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}


@dataclass(frozen=True)
class NodeGroup:
    """An EKS managed node group: its nodes carry `eks.amazonaws.com/nodegroup=<name>`, the
    group's own labels and taints, and the kubelet of the group's Kubernetes version."""

    name: str
    instance_type: str = "m5.2xlarge"
    size: int = 2
    capacity_type: str = "ON_DEMAND"
    version: str = ""  # major.minor of its kubelet; "" for the control plane's
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, Kubernetes effect)
    # (Availability Zone, IPv4 CIDR) of each of the group's subnets, in the group's order: its
    # nodes are spread over them and take their addresses from them; () when not known
    subnets: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_nodegroup(
        cls, ng: Mapping[str, Any], subnets: Mapping[str, Mapping[str, Any]] | None = None
    ) -> NodeGroup:
        """From DescribeNodegroup's `nodegroup`, and EC2 DescribeSubnets' `Subnets` by id for
        the zones and address ranges of its subnets."""
        known = subnets or {}
        return cls(
            name=str(ng["nodegroupName"]),
            instance_type=str((ng.get("instanceTypes") or ["t3.medium"])[0]),
            size=int((ng.get("scalingConfig") or {}).get("desiredSize", 0)),
            capacity_type=str(ng.get("capacityType") or "ON_DEMAND"),
            version=str(ng.get("version") or ""),
            labels=tuple(sorted((str(k), str(v)) for k, v in (ng.get("labels") or {}).items())),
            taints=tuple(
                (str(t["key"]), str(t.get("value") or ""), _EFFECTS[str(t["effect"])])
                for t in ng.get("taints") or []
                if str(t.get("effect")) in _EFFECTS
            ),
            subnets=tuple(
                (str(known[sid]["AvailabilityZone"]), str(known[sid]["CidrBlock"]))
                for sid in ng.get("subnets") or []
                if sid in known
            ),
        )


@dataclass(frozen=True)
class ClusterFacts:
    kubernetes_version: str = "1.33.0"  # major.minor.patch, as /version reports it
    service_cidr: str = DEFAULT_SERVICE_CIDR
    node_groups: tuple[NodeGroup, ...] = field(default_factory=tuple)

    @classmethod
    def from_description(
        cls,
        cluster: Mapping[str, Any],
        nodegroups: Sequence[Mapping[str, Any]] = (),
        subnets: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ClusterFacts:
        """From DescribeCluster's `cluster`, each DescribeNodegroup's `nodegroup` and the
        node groups' subnets as EC2 DescribeSubnets answers them (by id)."""
        version = str(cluster.get("version") or "1.33")
        network = cluster.get("kubernetesNetworkConfig") or {}
        groups = tuple(
            NodeGroup.from_nodegroup(ng, subnets)
            for ng in nodegroups
            if ng.get("status", "ACTIVE") in _NODES_EXIST
        )
        return cls(
            kubernetes_version=patch_version(version),
            service_cidr=str(network.get("serviceIpv4Cidr") or DEFAULT_SERVICE_CIDR),
            node_groups=groups,
        )


def private_dns_name(ip: str, region: str) -> str:
    """An instance's private DNS name: `ip-10-0-1-5.ec2.internal` in us-east-1,
    `ip-10-0-1-5.<region>.compute.internal` elsewhere (Amazon EC2 User Guide, EC2 instance
    hostname types: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-naming.html)."""
    host = "ip-" + ip.replace(".", "-")
    return f"{host}.ec2.internal" if region == "us-east-1" else f"{host}.{region}.compute.internal"


def patch_version(version: str) -> str:
    """`1.32` -> `1.32.0`: EKS names minor versions, /version and kubelets report a patch."""
    return version if version.count(".") == 2 else f"{version}.0"


# an API server started without an EKS cluster's description (tests, benchmarks): one managed
# node group of two nodes, named `system`
STANDALONE = ClusterFacts(node_groups=(NodeGroup("system"),))
