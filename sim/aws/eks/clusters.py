"""EKS clusters: Create/Describe/List/DeleteCluster, their updates (config, version), and
the versions EKS offers."""

from __future__ import annotations

import base64
import ipaddress
import uuid
from collections.abc import Callable
from typing import Any

from sim.aws import eks_catalog, moto_state
from sim.aws.context import hex_id
from sim.aws.eks.base import EksBase
from sim.aws.eks.model import CALLER_ARN_TEMPLATE, EksCluster, page_of
from sim.aws.errors import AwsError
from sim.interfaces import ClusterEndpoint


class ClusterOps(EksBase):
    """Cluster operations."""

    def create_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["name"]
        existing = self.clusters.get(name)
        if existing is not None:
            token = p.get("clientRequestToken")
            if token and existing.spec.get("clientRequestToken") == token:
                return {"cluster": self._cluster_view(existing)}
            raise AwsError(
                "ResourceInUseException",
                f"Cluster already exists with name: {name}",
                extra={"clusterName": name},
            )
        version = p.get("version") or eks_catalog.DEFAULT_VERSION
        if version not in eks_catalog.KUBERNETES_VERSIONS:
            raise AwsError("InvalidParameterException", f"unsupported Kubernetes version {version}")
        self._check_role(p["roleArn"])
        vpc = p["resourcesVpcConfig"]
        subnets = [
            moto_state.subnet(self.ctx.account_id, self.ctx.region, s)
            for s in vpc.get("subnetIds", [])
        ]
        missing = [
            s for s, info in zip(vpc.get("subnetIds", []), subnets, strict=True) if info is None
        ]
        if missing:
            raise AwsError(
                "InvalidParameterException", f"The subnet ID '{missing[0]}' does not exist"
            )
        found = [s for s in subnets if s is not None]
        if len({s.zone_name for s in found}) < 2:
            raise AwsError(
                "InvalidParameterException",
                "Subnets specified must be in at least two different AZs",
            )
        if len({s.vpc_id for s in found}) > 1:
            raise AwsError("InvalidParameterException", "Subnets must all belong to the same VPC")
        for group in vpc.get("securityGroupIds", []):
            if not moto_state.security_group_exists(self.ctx.account_id, self.ctx.region, group):
                raise AwsError(
                    "InvalidParameterException", f"The security group '{group}' does not exist"
                )
        vpc_cidrs = moto_state.vpc_cidrs(self.ctx.account_id, self.ctx.region, found[0].vpc_id)
        network = dict(p.get("kubernetesNetworkConfig") or {})
        _check_service_cidr(network, vpc_cidrs)
        if network.get("ipFamily", "ipv4") == "ipv4":
            network.setdefault("serviceIpv4Cidr", _default_service_cidr(vpc_cidrs))
        spec = dict(p)
        spec["kubernetesNetworkConfig"] = network
        spec["version"] = version
        spec.setdefault("accessConfig", {})
        spec["vpcId"] = found[0].vpc_id
        cluster = EksCluster(
            name=name,
            arn=self.ctx.arn("eks", f"cluster/{name}"),
            created_at=self.ctx.now(),
            status="CREATING",
            spec=spec,
            cluster_id=hex_id(32).upper(),
            tags=dict(p.get("tags") or {}),
        )
        self.clusters[name] = cluster
        access = spec["accessConfig"]
        if (
            access.get("bootstrapClusterCreatorAdminPermissions", True)
            and cluster.auth_mode != "CONFIG_MAP"
        ):
            creator = CALLER_ARN_TEMPLATE.format(account=self.ctx.account_id)
            self._put_access_entry(cluster, {"principalArn": creator, "type": "STANDARD"})
            cluster.access_policies[creator] = {
                eks_catalog.access_policy_arn("AmazonEKSClusterAdminPolicy"): {
                    "policyArn": eks_catalog.access_policy_arn("AmazonEKSClusterAdminPolicy"),
                    "accessScope": {"type": "cluster", "namespaces": []},
                    "associatedAt": self.ctx.now(),
                    "modifiedAt": self.ctx.now(),
                }
            }
        self._later(self.ctx.profile.eks_create, lambda: self._become_active(cluster))
        return {"cluster": self._cluster_view(cluster)}

    def _become_active(self, cluster: EksCluster) -> None:
        if self.clusters.get(cluster.name) is not cluster or cluster.status != "CREATING":
            return
        if self.ctx.kube is not None:
            # the API server starts knowing the cluster as DescribeCluster describes it
            self.ctx.describe_to_kube(cluster.name)
            try:
                cluster.endpoint = self.ctx.kube.start_cluster(cluster.name)
            except Exception as exc:
                cluster.status = "FAILED"
                cluster.health_issues = [
                    {
                        "code": "ClusterUnreachable",
                        "message": f"The Kubernetes API server did not start: {exc}",
                        "resourceIds": [cluster.name],
                    }
                ]
                return
            cluster.kube_started = True
        else:
            cluster.endpoint = ClusterEndpoint(
                endpoint=f"https://{cluster.cluster_id}.gr7.{self.ctx.region}.eks.amazonaws.com",
                ca_pem=self._ca_pem(),
                oidc_issuer=f"https://oidc.eks.{self.ctx.region}.amazonaws.com/id/{cluster.cluster_id}",
            )
        cluster.status = "ACTIVE"
        self.ctx.nodes_changed(cluster.name)

    def _cluster_view(self, cluster: EksCluster) -> dict[str, Any]:
        spec = cluster.spec
        vpc = spec["resourcesVpcConfig"]
        access = spec.get("accessConfig") or {}
        view: dict[str, Any] = {
            "name": cluster.name,
            "arn": cluster.arn,
            "createdAt": cluster.created_at,
            "version": spec["version"],
            "roleArn": spec["roleArn"],
            "resourcesVpcConfig": {
                "subnetIds": vpc.get("subnetIds", []),
                "securityGroupIds": vpc.get("securityGroupIds", []),
                "clusterSecurityGroupId": f"sg-{cluster.cluster_id[:17].lower()}",
                "vpcId": spec["vpcId"],
                "endpointPublicAccess": vpc.get("endpointPublicAccess", True),
                "endpointPrivateAccess": vpc.get("endpointPrivateAccess", False),
                "publicAccessCidrs": vpc.get("publicAccessCidrs", ["0.0.0.0/0"]),
            },
            "kubernetesNetworkConfig": _network_view(spec.get("kubernetesNetworkConfig") or {}),
            "logging": spec.get("logging")
            or {
                "clusterLogging": [
                    {
                        "types": [
                            "api",
                            "audit",
                            "authenticator",
                            "controllerManager",
                            "scheduler",
                        ],
                        "enabled": False,
                    }
                ]
            },
            "status": cluster.status,
            "platformVersion": "eks.1",
            "tags": cluster.tags,
            "accessConfig": {
                "bootstrapClusterCreatorAdminPermissions": access.get(
                    "bootstrapClusterCreatorAdminPermissions", True
                ),
                "authenticationMode": cluster.auth_mode,
            },
            "upgradePolicy": spec.get("upgradePolicy") or {"supportType": "EXTENDED"},
            "health": {"issues": cluster.health_issues},
            "clientRequestToken": spec.get("clientRequestToken"),
        }
        if cluster.endpoint is not None:
            view["endpoint"] = cluster.endpoint.endpoint
            view["certificateAuthority"] = {
                "data": base64.b64encode(cluster.endpoint.ca_pem.encode()).decode()
            }
            view["identity"] = {"oidc": {"issuer": cluster.endpoint.oidc_issuer}}
        else:
            view["certificateAuthority"] = {}
        return view

    def description(
        self, name: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]] | None:
        """What DescribeCluster answers about `name`, DescribeNodegroup about each of its node
        groups and EC2 DescribeSubnets about their subnets (by id): where the Kubernetes
        emulator takes its version, service CIDR and nodes, their zones and addresses."""
        cluster = self.clusters.get(name)
        if cluster is None:
            return None
        groups = [dict(group) for _, group in sorted(cluster.nodegroups.items())]
        subnets: dict[str, dict[str, Any]] = {}
        for group in groups:
            for subnet_id in group.get("subnets") or []:
                info = moto_state.subnet(self.ctx.account_id, self.ctx.region, subnet_id)
                if info is not None:
                    subnets[subnet_id] = {
                        "SubnetId": info.subnet_id,
                        "AvailabilityZone": info.zone_name,
                        "CidrBlock": info.cidr,
                    }
        return self._cluster_view(cluster), groups, subnets

    def describe_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"cluster": self._cluster_view(self._get(p["name"]))}

    def list_clusters(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = page_of(sorted(self.clusters), p)
        return {"clusters": names, "nextToken": token}

    def delete_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["name"])
        if cluster.nodegroups:
            raise AwsError(
                "ResourceInUseException",
                f"Cluster has nodegroups attached: {', '.join(sorted(cluster.nodegroups))}",
                extra={"clusterName": cluster.name},
            )
        if cluster.spec.get("deletionProtection"):
            raise AwsError("InvalidRequestException", "Cluster has deletion protection enabled")
        if cluster.status == "DELETING":
            return {"cluster": self._cluster_view(cluster)}
        cluster.status = "DELETING"

        def gone() -> None:
            if self.clusters.get(cluster.name) is cluster:
                del self.clusters[cluster.name]
                if cluster.kube_started and self.ctx.kube is not None:
                    self.ctx.kube.stop_cluster(cluster.name)
                    cluster.kube_started = False

        self._later(self.ctx.profile.eks_delete, gone)
        return {"cluster": self._cluster_view(cluster)}

    def _update(
        self,
        cluster: EksCluster,
        kind: str,
        params: list[dict[str, str]],
        apply: Callable[[], None],
        delay: float,
    ) -> dict[str, Any]:
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": kind,
            "params": params,
            "createdAt": self.ctx.now(),
            "errors": [],
        }
        cluster.updates[update["id"]] = update
        previous = cluster.status
        cluster.status = "UPDATING"

        def done() -> None:
            apply()
            update["status"] = "Successful"
            if cluster.status == "UPDATING":
                cluster.status = previous

        self._later(delay, done)
        return {"update": update}

    def update_cluster_config(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["name"])
        changes = {
            k: v for k, v in p.items() if k not in ("name", "clientRequestToken") and v is not None
        }
        if not changes:
            raise AwsError("InvalidParameterException", "No changes needed")
        access = changes.get("accessConfig") or {}
        if (
            access.get("authenticationMode")
            and cluster.auth_mode != "CONFIG_MAP"
            and access["authenticationMode"] == "CONFIG_MAP"
        ):
            raise AwsError("InvalidParameterException", "Unsupported authentication mode update")

        def apply() -> None:
            for key, value in changes.items():
                if key == "resourcesVpcConfig":
                    cluster.spec[key] = {**cluster.spec[key], **value}
                elif key == "accessConfig":
                    cluster.spec[key] = {**cluster.spec.get(key, {}), **value}
                else:
                    cluster.spec[key] = value

        kind = "AccessConfigUpdate" if "accessConfig" in changes else "ConfigUpdate"
        if "logging" in changes:
            kind = "LoggingUpdate"
        if "resourcesVpcConfig" in changes:
            kind = "EndpointAccessUpdate"
        params = (
            [{"type": "AuthenticationMode", "value": str(access["authenticationMode"])}]
            if access.get("authenticationMode")
            else []
        )
        return self._update(cluster, kind, params, apply, self.ctx.profile.eks_addon_install)

    def update_cluster_version(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["name"])
        version = p["version"]
        if version not in eks_catalog.KUBERNETES_VERSIONS:
            raise AwsError("InvalidParameterException", f"unsupported Kubernetes version {version}")
        current = eks_catalog.KUBERNETES_VERSIONS.index(cluster.spec["version"])
        if eks_catalog.KUBERNETES_VERSIONS.index(version) != current + 1:
            raise AwsError(
                "InvalidParameterException",
                f"Unsupported Kubernetes minor version update from {cluster.spec['version']} to {version}",
            )

        def apply() -> None:
            cluster.spec["version"] = version
            self.ctx.nodes_changed(cluster.name)  # the API server now reports the new version

        return self._update(
            cluster,
            "VersionUpdate",
            [{"type": "Version", "value": version}],
            apply,
            self.ctx.profile.eks_create,
        )

    def describe_update(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["name"])
        update = cluster.updates.get(p["updateId"])
        if update is None:
            raise AwsError("ResourceNotFoundException", f"No update found for ID: {p['updateId']}")
        return {"update": update}

    def list_updates(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["name"])
        ids, token = page_of(list(cluster.updates), p)
        return {"updateIds": ids, "nextToken": token}

    def describe_cluster_versions(self, p: dict[str, Any]) -> dict[str, Any]:
        versions = p.get("clusterVersions") or eks_catalog.KUBERNETES_VERSIONS
        return {
            "clusterVersions": [
                {
                    "clusterVersion": v,
                    "clusterType": "eks",
                    "defaultVersion": v == eks_catalog.DEFAULT_VERSION,
                    "status": "STANDARD_SUPPORT",
                    "versionStatus": "STANDARD_SUPPORT",
                }
                for v in versions
                if v in eks_catalog.KUBERNETES_VERSIONS
            ]
        }

    def is_active(self, arn_or_name: str) -> bool:
        cluster = self.clusters.get(arn_or_name.rsplit("/", 1)[-1])
        return (
            cluster is not None
            and cluster.status == "ACTIVE"
            and arn_or_name in (cluster.arn, cluster.name)
        )

    def authentication_mode(self, arn: str) -> str | None:
        cluster = self.clusters.get(arn.rsplit("/", 1)[-1])
        return cluster.auth_mode if cluster is not None and cluster.arn == arn else None


_PRIVATE_BLOCKS = [
    ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
]


def _check_service_cidr(network: dict[str, Any], vpc_cidrs: list[str]) -> None:
    """serviceIpv4Cidr as EKS accepts it: a valid IPv4 block inside 10.0.0.0/8, 172.16.0.0/12
    or 192.168.0.0/16, between /24 and /12, not overlapping the VPC, and not given with
    ipFamily ipv6 (Amazon EKS API Reference, KubernetesNetworkConfigRequest:
    https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html).
    """
    cidr = network.get("serviceIpv4Cidr")
    if cidr is None:
        return
    if network.get("ipFamily") == "ipv6":
        raise AwsError(
            "InvalidParameterException",
            "serviceIpv4Cidr cannot be specified when ipFamily is ipv6",
        )
    try:
        block = ipaddress.IPv4Network(cidr)
    except ValueError:
        raise AwsError(
            "InvalidParameterException",
            f"serviceIpv4Cidr {cidr} is not a valid IPv4 CIDR block",
        ) from None
    if not any(block.subnet_of(private) for private in _PRIVATE_BLOCKS):
        raise AwsError(
            "InvalidParameterException",
            f"serviceIpv4Cidr {cidr} must be within 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
        )
    if not 12 <= block.prefixlen <= 24:
        raise AwsError(
            "InvalidParameterException",
            f"serviceIpv4Cidr {cidr} must have a prefix length between /12 and /24",
        )
    for vpc_cidr in vpc_cidrs:
        if block.overlaps(ipaddress.ip_network(vpc_cidr, strict=False)):
            raise AwsError(
                "InvalidParameterException",
                f"serviceIpv4Cidr {cidr} overlaps the VPC CIDR block {vpc_cidr}",
            )


def _default_service_cidr(vpc_cidrs: list[str]) -> str:
    """The block EKS takes when CreateCluster names none: 10.100.0.0/16, or 172.20.0.0/16 when
    the VPC is in 10.0.0.0/8 (Amazon EKS API Reference, KubernetesNetworkConfigRequest,
    serviceIpv4Cidr: "If you don't specify a block, Kubernetes assigns addresses from either the
    10.100.0.0/16 or 172.20.0.0/16 CIDR blocks")."""
    ten = ipaddress.IPv4Network("10.0.0.0/8")
    in_ten = any(ipaddress.ip_network(c, strict=False).overlaps(ten) for c in vpc_cidrs)
    return "172.20.0.0/16" if in_ten else "10.100.0.0/16"


def _network_view(network: dict[str, Any]) -> dict[str, Any]:
    """DescribeCluster's kubernetesNetworkConfig: the IP family and, for an IPv4 cluster, the
    service block chosen at creation."""
    view: dict[str, Any] = {"ipFamily": network.get("ipFamily", "ipv4")}
    if "serviceIpv4Cidr" in network:
        view["serviceIpv4Cidr"] = network["serviceIpv4Cidr"]
    if network.get("elasticLoadBalancing"):
        view["elasticLoadBalancing"] = network["elasticLoadBalancing"]
    return view
