"""Amazon EKS, simulated: clusters that take time, node groups, add-ons, access entries and
policies, pod identity associations, tags.

A cluster is CREATING for the profile's `eks_create`, then ACTIVE; at that moment the
Kubernetes emulator (if any) starts its API server, and DescribeCluster returns that server's
endpoint, its CA (base64 of the PEM, as EKS does) and an OIDC issuer usable for IRSA. Without an
emulator the cluster gets an EKS-shaped endpoint that nothing answers, and a CA of its own.
References are checked as EKS checks them: the role must exist, the subnets must exist and span
at least two Availability Zones (InvalidParameterException otherwise). Access entries need an
authentication mode that includes the API (InvalidRequestException otherwise); the default mode
through the API is CONFIG_MAP, as AWS documents.
"""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import trustme

from sim.aws import eks_catalog, moto_state
from sim.aws.context import SimContext, hex_id
from sim.aws.errors import AwsError
from sim.interfaces import ClusterEndpoint

Handler = Callable[[dict[str, Any]], dict[str, Any]]

# The identity moto's STS reports for any access key it has not issued.
CALLER_ARN_TEMPLATE = "arn:aws:iam::{account}:user/moto"


@dataclass
class EksCluster:
    name: str
    arn: str
    created_at: datetime
    status: str
    spec: dict[str, Any]
    cluster_id: str
    tags: dict[str, str]
    endpoint: ClusterEndpoint | None = None
    kube_started: bool = False
    addons: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodegroups: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_policies: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    pod_identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    health_issues: list[dict[str, Any]] = field(default_factory=list)

    @property
    def auth_mode(self) -> str:
        return str((self.spec.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")


class Eks:
    """The EKS API."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.clusters: dict[str, EksCluster] = {}
        self._ca: trustme.CA | None = None
        self._replies: dict[tuple[str, str], dict[str, Any]] = {}
        ctx.eks_kube_ready = lambda name: bool(
            (c := self.clusters.get(name)) is not None and c.kube_started
        )

    def operations(self) -> dict[str, Handler]:
        return {name: self._idempotent(name, handler) for name, handler in self._handlers().items()}

    def _idempotent(self, name: str, handler: Handler) -> Handler:
        """A retried mutation with the same clientRequestToken gets the first answer again."""

        def run(p: dict[str, Any]) -> dict[str, Any]:
            token = p.get("clientRequestToken")
            if not token:
                return handler(p)
            key = (name, str(token))
            if key not in self._replies:
                self._replies[key] = handler(p)
            return self._replies[key]

        return run

    def _handlers(self) -> dict[str, Handler]:
        return {
            "CreateCluster": self.create_cluster,
            "DescribeCluster": self.describe_cluster,
            "ListClusters": self.list_clusters,
            "DeleteCluster": self.delete_cluster,
            "UpdateClusterConfig": self.update_cluster_config,
            "UpdateClusterVersion": self.update_cluster_version,
            "DescribeUpdate": self.describe_update,
            "ListUpdates": self.list_updates,
            "CreateNodegroup": self.create_nodegroup,
            "DescribeNodegroup": self.describe_nodegroup,
            "ListNodegroups": self.list_nodegroups,
            "DeleteNodegroup": self.delete_nodegroup,
            "UpdateNodegroupConfig": self.update_nodegroup_config,
            "CreateAddon": self.create_addon,
            "DescribeAddon": self.describe_addon,
            "ListAddons": self.list_addons,
            "UpdateAddon": self.update_addon,
            "DeleteAddon": self.delete_addon,
            "DescribeAddonVersions": self.describe_addon_versions,
            "DescribeAddonConfiguration": self.describe_addon_configuration,
            "DescribeClusterVersions": self.describe_cluster_versions,
            "CreateAccessEntry": self.create_access_entry,
            "DescribeAccessEntry": self.describe_access_entry,
            "ListAccessEntries": self.list_access_entries,
            "UpdateAccessEntry": self.update_access_entry,
            "DeleteAccessEntry": self.delete_access_entry,
            "AssociateAccessPolicy": self.associate_access_policy,
            "DisassociateAccessPolicy": self.disassociate_access_policy,
            "ListAssociatedAccessPolicies": self.list_associated_access_policies,
            "ListAccessPolicies": self.list_access_policies,
            "CreatePodIdentityAssociation": self.create_pod_identity_association,
            "DescribePodIdentityAssociation": self.describe_pod_identity_association,
            "ListPodIdentityAssociations": self.list_pod_identity_associations,
            "UpdatePodIdentityAssociation": self.update_pod_identity_association,
            "DeletePodIdentityAssociation": self.delete_pod_identity_association,
            "TagResource": self.tag_resource,
            "UntagResource": self.untag_resource,
            "ListTagsForResource": self.list_tags_for_resource,
        }

    # ---- helpers -------------------------------------------------------------------------

    def _get(self, name: str) -> EksCluster:
        cluster = self.clusters.get(name)
        if cluster is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No cluster found for name: {name}.",
                extra={"clusterName": name},
            )
        return cluster

    def _active(self, name: str) -> EksCluster:
        cluster = self._get(name)
        if cluster.status != "ACTIVE":
            raise AwsError(
                "InvalidRequestException",
                f"Cluster '{name}' is in {cluster.status} state. It must be ACTIVE.",
                extra={"clusterName": name},
            )
        return cluster

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

    def grant_node_role(self, arn: str, role_arn: str) -> None:
        """The access entry HyperPod creates for its nodes' role (type HYPERPOD_LINUX)."""
        cluster = self.clusters.get(arn.rsplit("/", 1)[-1])
        if cluster is not None and role_arn not in cluster.access_entries:
            entry = self._put_access_entry(
                cluster,
                {
                    "principalArn": role_arn,
                    "type": "HYPERPOD_LINUX",
                    "username": "system:node:hyperpod-{{SessionName}}",
                },
            )
            entry["_hyperpod"] = True

    def revoke_node_role(self, arn: str, role_arn: str) -> None:
        cluster = self.clusters.get(arn.rsplit("/", 1)[-1])
        if cluster is None:
            return
        entry = cluster.access_entries.get(role_arn)
        if entry is not None and entry.get("_hyperpod"):
            del cluster.access_entries[role_arn]
            cluster.access_policies.pop(role_arn, None)

    def _ca_pem(self) -> str:
        if self._ca is None:
            self._ca = trustme.CA()
        return self._ca.cert_pem.bytes().decode()

    def _later(self, delay: float, action: Callable[[], None]) -> None:
        self.ctx.scheduler.after(delay, action)

    def _check_role(self, arn: str, what: str = "Role") -> None:
        if not moto_state.role_exists(self.ctx.account_id, arn):
            raise AwsError("InvalidParameterException", f"{what} with arn: {arn}, does not exist")

    # ---- clusters ------------------------------------------------------------------------

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
        spec = dict(p)
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
            "kubernetesNetworkConfig": {
                "serviceIpv4Cidr": (spec.get("kubernetesNetworkConfig") or {}).get(
                    "serviceIpv4Cidr", "172.20.0.0/16"
                ),
                "ipFamily": (spec.get("kubernetesNetworkConfig") or {}).get("ipFamily", "ipv4"),
            },
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

    def describe_cluster(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"cluster": self._cluster_view(self._get(p["name"]))}

    def list_clusters(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = _page(sorted(self.clusters), p)
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
        ids, token = _page(list(cluster.updates), p)
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

    # ---- node groups ---------------------------------------------------------------------

    def create_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        name = p["nodegroupName"]
        if name in cluster.nodegroups:
            raise AwsError(
                "ResourceInUseException",
                f"NodeGroup already exists with name {name} and cluster name {cluster.name}",
            )
        self._check_role(p["nodeRole"], "Node role")
        for subnet_id in p["subnets"]:
            if moto_state.subnet(self.ctx.account_id, self.ctx.region, subnet_id) is None:
                raise AwsError(
                    "InvalidParameterException", f"The subnet ID '{subnet_id}' does not exist"
                )
        scaling = p.get("scalingConfig") or {"minSize": 1, "maxSize": 2, "desiredSize": 2}
        group = {
            "nodegroupName": name,
            "nodegroupArn": self.ctx.arn("eks", f"nodegroup/{cluster.name}/{name}/{uuid.uuid4()}"),
            "clusterName": cluster.name,
            "version": p.get("version") or cluster.spec["version"],
            "releaseVersion": p.get("releaseVersion") or f"{cluster.spec['version']}.0-20250101",
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "status": "CREATING",
            "capacityType": p.get("capacityType", "ON_DEMAND"),
            "scalingConfig": scaling,
            "instanceTypes": p.get("instanceTypes") or ["t3.medium"],
            "subnets": p["subnets"],
            "amiType": p.get("amiType", "AL2023_x86_64_STANDARD"),
            "nodeRole": p["nodeRole"],
            "labels": p.get("labels") or {},
            "taints": p.get("taints") or [],
            "diskSize": p.get("diskSize", 20),
            "health": {"issues": []},
            "updateConfig": p.get("updateConfig") or {"maxUnavailable": 1},
            "tags": p.get("tags") or {},
            "resources": {"autoScalingGroups": [{"name": f"eks-{name}-{uuid.uuid4().hex[:8]}"}]},
        }
        cluster.nodegroups[name] = group

        def ready() -> None:
            if cluster.nodegroups.get(name) is group and group["status"] == "CREATING":
                group["status"] = "ACTIVE"

        self._later(self.ctx.profile.node_boot, ready)
        return {"nodegroup": group}

    def _nodegroup(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        group = cluster.nodegroups.get(p["nodegroupName"])
        if group is None:
            raise AwsError(
                "ResourceNotFoundException", f"No node group found for name: {p['nodegroupName']}."
            )
        return cluster, group

    def describe_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"nodegroup": self._nodegroup(p)[1]}

    def list_nodegroups(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = _page(sorted(self._get(p["clusterName"]).nodegroups), p)
        return {"nodegroups": names, "nextToken": token}

    def delete_nodegroup(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, group = self._nodegroup(p)
        group["status"] = "DELETING"

        def gone() -> None:
            if cluster.nodegroups.get(group["nodegroupName"]) is group:
                del cluster.nodegroups[group["nodegroupName"]]

        self._later(self.ctx.profile.eks_delete, gone)
        return {"nodegroup": group}

    def update_nodegroup_config(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, group = self._nodegroup(p)
        if group["status"] != "ACTIVE":
            raise AwsError(
                "ResourceInUseException", f"Nodegroup {group['nodegroupName']} is {group['status']}"
            )
        scaling = p.get("scalingConfig")
        group["status"] = "UPDATING"

        def apply() -> None:
            if scaling:
                group["scalingConfig"] = {**group["scalingConfig"], **scaling}
            if p.get("labels"):
                labels = dict(group["labels"])
                labels.update(p["labels"].get("addOrUpdateLabels") or {})
                for key in p["labels"].get("removeLabels") or []:
                    labels.pop(key, None)
                group["labels"] = labels
            group["status"] = "ACTIVE"
            group["modifiedAt"] = self.ctx.now()

        params = [
            {"type": k[0].upper() + k[1:], "value": str(v)} for k, v in (scaling or {}).items()
        ]
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "ConfigUpdate",
            "params": params,
            "createdAt": self.ctx.now(),
            "errors": [],
        }
        cluster.updates[update["id"]] = update

        def done() -> None:
            apply()
            update["status"] = "Successful"

        self._later(self.ctx.profile.node_boot, done)
        return {"update": update}

    # ---- add-ons -------------------------------------------------------------------------

    def create_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        name = p["addonName"]
        if name not in eks_catalog.ADDONS:
            raise AwsError("InvalidParameterException", f"Addon {name} specified is not supported")
        if name in cluster.addons:
            token = p.get("clientRequestToken")
            if token and cluster.addons[name].get("_token") == token:
                return {"addon": _public(cluster.addons[name])}
            raise AwsError(
                "ResourceInUseException",
                f"Addon already exists with name: {name}",
                extra={"addonName": name},
            )
        version = p.get("addonVersion") or eks_catalog.default_addon_version(name)
        if version not in eks_catalog.ADDONS[name][2]:
            raise AwsError(
                "InvalidParameterException", f"Addon version specified is not supported: {version}"
            )
        if p.get("serviceAccountRoleArn"):
            self._check_role(p["serviceAccountRoleArn"])
        _type, publisher, _ = eks_catalog.ADDONS[name]
        addon: dict[str, Any] = {
            "addonName": name,
            "clusterName": cluster.name,
            "status": "CREATING",
            "addonVersion": version,
            "health": {"issues": []},
            "addonArn": self.ctx.arn("eks", f"addon/{cluster.name}/{name}/{uuid.uuid4()}"),
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "serviceAccountRoleArn": p.get("serviceAccountRoleArn"),
            "tags": p.get("tags") or {},
            "publisher": publisher,
            "owner": "aws",
            "configurationValues": p.get("configurationValues"),
            "podIdentityAssociations": [],
            "_token": p.get("clientRequestToken"),
        }
        for association in p.get("podIdentityAssociations") or []:
            created = self._put_pod_identity(
                cluster,
                {
                    "namespace": "kube-system",
                    "serviceAccount": association["serviceAccount"],
                    "roleArn": association["roleArn"],
                },
                owner=addon["addonArn"],
            )
            addon["podIdentityAssociations"].append(created["associationArn"])
        cluster.addons[name] = addon

        def ready() -> None:
            if cluster.addons.get(name) is addon and addon["status"] == "CREATING":
                if self.ctx.kube is not None and cluster.kube_started:
                    # What the add-on installs appears in the cluster as it does on EKS.
                    with contextlib.suppress(ValueError):
                        self.ctx.kube.install(cluster.name, name)
                addon["status"] = "ACTIVE"

        self._later(self.ctx.profile.eks_addon_install, ready)
        return {"addon": _public(addon)}

    def _addon(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        addon = cluster.addons.get(p["addonName"])
        if addon is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No addon: {p['addonName']} found in cluster: {cluster.name}",
                extra={"clusterName": cluster.name, "addonName": p["addonName"]},
            )
        return cluster, addon

    def describe_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"addon": _public(self._addon(p)[1])}

    def list_addons(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = _page(sorted(self._get(p["clusterName"]).addons), p)
        return {"addons": names, "nextToken": token}

    def update_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, addon = self._addon(p)
        if addon["status"] not in ("ACTIVE", "DEGRADED", "UPDATE_FAILED"):
            raise AwsError(
                "ResourceInUseException",
                f"Addon {addon['addonName']} is {addon['status']}",
                extra={"addonName": addon["addonName"]},
            )
        version = p.get("addonVersion") or addon["addonVersion"]
        if version not in eks_catalog.ADDONS[addon["addonName"]][2]:
            raise AwsError(
                "InvalidParameterException", f"Addon version specified is not supported: {version}"
            )
        addon["status"] = "UPDATING"
        params = [{"type": "AddonVersion", "value": version}]
        if p.get("configurationValues") is not None:
            params.append({"type": "ConfigurationValues", "value": p["configurationValues"]})
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "AddonUpdate",
            "params": params,
            "createdAt": self.ctx.now(),
            "errors": [],
        }
        cluster.updates[update["id"]] = update

        def done() -> None:
            addon["addonVersion"] = version
            for key in ("serviceAccountRoleArn", "configurationValues"):
                if p.get(key) is not None:
                    addon[key] = p[key]
            addon["status"] = "ACTIVE"
            addon["modifiedAt"] = self.ctx.now()
            update["status"] = "Successful"

        self._later(self.ctx.profile.eks_addon_install, done)
        return {"update": update}

    def delete_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, addon = self._addon(p)
        addon["status"] = "DELETING"

        def gone() -> None:
            if cluster.addons.get(addon["addonName"]) is addon:
                del cluster.addons[addon["addonName"]]
                for association in list(cluster.pod_identities.values()):
                    if association.get("ownerArn") == addon["addonArn"]:
                        del cluster.pod_identities[association["associationId"]]

        self._later(self.ctx.profile.eks_addon_install, gone)
        return {"addon": _public(addon)}

    def describe_addon_versions(self, p: dict[str, Any]) -> dict[str, Any]:
        names = [p["addonName"]] if p.get("addonName") else sorted(eks_catalog.ADDONS)
        result = []
        for name in names:
            if name not in eks_catalog.ADDONS:
                continue
            kind, publisher, _ = eks_catalog.ADDONS[name]
            if p.get("types") and kind not in p["types"]:
                continue
            if p.get("publishers") and publisher not in p["publishers"]:
                continue
            result.append(
                {
                    "addonName": name,
                    "type": kind,
                    "addonVersions": eks_catalog.addon_versions(name, p.get("kubernetesVersion")),
                    "publisher": publisher,
                    "owner": "aws",
                }
            )
        page, token = _page(result, p)
        return {"addons": page, "nextToken": token}

    def describe_addon_configuration(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["addonName"]
        if name not in eks_catalog.ADDONS or p["addonVersion"] not in eks_catalog.ADDONS[name][2]:
            raise AwsError(
                "ResourceNotFoundException", f"Addon {name} version {p['addonVersion']} not found"
            )
        return {
            "addonName": name,
            "addonVersion": p["addonVersion"],
            "configurationSchema": '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}',
            "podIdentityConfiguration": [],
        }

    # ---- access entries ------------------------------------------------------------------

    def _require_api_mode(self, cluster: EksCluster) -> None:
        if cluster.auth_mode == "CONFIG_MAP":
            raise AwsError(
                "InvalidRequestException",
                "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
                "to perform this operation.",
                extra={"clusterName": cluster.name},
            )

    def _put_access_entry(self, cluster: EksCluster, p: dict[str, Any]) -> dict[str, Any]:
        principal = p["principalArn"]
        entry = {
            "clusterName": cluster.name,
            "principalArn": principal,
            "kubernetesGroups": p.get("kubernetesGroups") or [],
            "accessEntryArn": self.ctx.arn(
                "eks", f"access-entry/{cluster.name}/{principal.split(':')[-1]}/{uuid.uuid4()}"
            ),
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "tags": p.get("tags") or {},
            "username": p.get("username") or principal,
            "type": p.get("type") or "STANDARD",
        }
        cluster.access_entries[principal] = entry
        return entry

    def create_access_entry(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["clusterName"])
        self._require_api_mode(cluster)
        principal = p["principalArn"]
        if principal in cluster.access_entries:
            raise AwsError(
                "ResourceInUseException",
                f"The specified access entry resource is already in use on this cluster: {principal}",
                extra={"clusterName": cluster.name},
            )
        if ":role/" in principal and not moto_state.role_exists(self.ctx.account_id, principal):
            raise AwsError(
                "InvalidParameterException", f"The specified principalArn is invalid: {principal}"
            )
        return {"accessEntry": self._put_access_entry(cluster, p)}

    def _entry(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        principal = unquote(p["principalArn"])
        entry = cluster.access_entries.get(principal)
        if entry is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"The specified principalArn could not be found. You can view your available access entries with 'list-access-entries': {principal}",
                extra={"clusterName": cluster.name},
            )
        return cluster, entry

    def describe_access_entry(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"accessEntry": _public(self._entry(p)[1])}

    def list_access_entries(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["clusterName"])
        principals = sorted(cluster.access_entries)
        if p.get("associatedPolicyArn"):
            principals = [
                x
                for x in principals
                if p["associatedPolicyArn"] in cluster.access_policies.get(x, {})
            ]
        page, token = _page(principals, p)
        return {"accessEntries": page, "nextToken": token}

    def update_access_entry(self, p: dict[str, Any]) -> dict[str, Any]:
        _, entry = self._entry(p)
        for key in ("kubernetesGroups", "username"):
            if p.get(key) is not None:
                entry[key] = p[key]
        entry["modifiedAt"] = self.ctx.now()
        return {"accessEntry": _public(entry)}

    def delete_access_entry(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, entry = self._entry(p)
        del cluster.access_entries[entry["principalArn"]]
        cluster.access_policies.pop(entry["principalArn"], None)
        return {}

    def associate_access_policy(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, entry = self._entry(p)
        if p["policyArn"] not in eks_catalog.access_policy_arns():
            raise AwsError(
                "InvalidParameterException", f"The specified policyArn is invalid: {p['policyArn']}"
            )
        scope = p["accessScope"]
        if scope.get("type") == "namespace" and not scope.get("namespaces"):
            raise AwsError(
                "InvalidParameterException",
                "namespaces must be specified for a namespace access scope",
            )
        policies = cluster.access_policies.setdefault(entry["principalArn"], {})
        now = self.ctx.now()
        associated = policies.get(p["policyArn"])
        if associated is None:
            associated = {"policyArn": p["policyArn"], "associatedAt": now}
            policies[p["policyArn"]] = associated
        associated["accessScope"] = {
            "type": scope.get("type", "cluster"),
            "namespaces": scope.get("namespaces") or [],
        }
        associated["modifiedAt"] = now
        return {
            "clusterName": cluster.name,
            "principalArn": entry["principalArn"],
            "associatedAccessPolicy": associated,
        }

    def disassociate_access_policy(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, entry = self._entry(p)
        policy = unquote(p["policyArn"])
        policies = cluster.access_policies.get(entry["principalArn"], {})
        if policy not in policies:
            raise AwsError(
                "ResourceNotFoundException", f"The specified policy is not associated: {policy}"
            )
        del policies[policy]
        return {}

    def list_associated_access_policies(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, entry = self._entry(p)
        policies = list(cluster.access_policies.get(entry["principalArn"], {}).values())
        page, token = _page(policies, p)
        return {
            "clusterName": cluster.name,
            "principalArn": entry["principalArn"],
            "associatedAccessPolicies": page,
            "nextToken": token,
        }

    def list_access_policies(self, p: dict[str, Any]) -> dict[str, Any]:
        policies = [
            {"name": name, "arn": eks_catalog.access_policy_arn(name)}
            for name in eks_catalog.ACCESS_POLICIES
        ]
        page, token = _page(policies, p)
        return {"accessPolicies": page, "nextToken": token}

    # ---- pod identity --------------------------------------------------------------------

    def _put_pod_identity(
        self, cluster: EksCluster, p: dict[str, Any], owner: str | None = None
    ) -> dict[str, Any]:
        for existing in cluster.pod_identities.values():
            if (existing["namespace"], existing["serviceAccount"]) == (
                p["namespace"],
                p["serviceAccount"],
            ):
                raise AwsError(
                    "ResourceInUseException",
                    f"Association already exists: {existing['associationId']}",
                    extra={"clusterName": cluster.name},
                )
        self._check_role(p["roleArn"])
        association_id = "a-" + hex_id(17)
        association = {
            "clusterName": cluster.name,
            "namespace": p["namespace"],
            "serviceAccount": p["serviceAccount"],
            "roleArn": p["roleArn"],
            "associationArn": self.ctx.arn(
                "eks", f"podidentityassociation/{cluster.name}/{association_id}"
            ),
            "associationId": association_id,
            "tags": p.get("tags") or {},
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "ownerArn": owner,
            "disableSessionTags": bool(p.get("disableSessionTags", False)),
            "targetRoleArn": p.get("targetRoleArn"),
        }
        cluster.pod_identities[association_id] = association
        return association

    def create_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        return {"association": self._put_pod_identity(cluster, p)}

    def _association(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        association = cluster.pod_identities.get(p["associationId"])
        if association is None:
            raise AwsError(
                "ResourceNotFoundException", f"Association not found: {p['associationId']}"
            )
        return cluster, association

    def describe_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"association": self._association(p)[1]}

    def list_pod_identity_associations(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["clusterName"])
        items = [
            a
            for a in cluster.pod_identities.values()
            if p.get("namespace") in (None, a["namespace"])
            and p.get("serviceAccount") in (None, a["serviceAccount"])
        ]
        page, token = _page(items, p)
        return {
            "associations": [
                {
                    k: a[k]
                    for k in (
                        "clusterName",
                        "namespace",
                        "serviceAccount",
                        "associationArn",
                        "associationId",
                        "ownerArn",
                    )
                }
                for a in page
            ],
            "nextToken": token,
        }

    def update_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        _, association = self._association(p)
        if p.get("roleArn"):
            self._check_role(p["roleArn"])
            association["roleArn"] = p["roleArn"]
        for key in ("disableSessionTags", "targetRoleArn", "policy"):
            if p.get(key) is not None:
                association[key] = p[key]
        association["modifiedAt"] = self.ctx.now()
        return {"association": association}

    def delete_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, association = self._association(p)
        del cluster.pod_identities[association["associationId"]]
        return {"association": association}

    # ---- tags ----------------------------------------------------------------------------

    def _tagged(self, arn: str) -> dict[str, str]:
        arn = unquote(arn)
        for cluster in self.clusters.values():
            if cluster.arn == arn:
                return cluster.tags
            for collection in (
                cluster.addons,
                cluster.nodegroups,
                cluster.access_entries,
                cluster.pod_identities,
            ):
                for item in collection.values():
                    for key in ("addonArn", "nodegroupArn", "accessEntryArn", "associationArn"):
                        if item.get(key) == arn:
                            tags: dict[str, str] = item.setdefault("tags", {})
                            return tags
        raise AwsError("NotFoundException", f"Resource {arn} not found")

    def tag_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        self._tagged(p["resourceArn"]).update(p["tags"])
        return {}

    def untag_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        tags = self._tagged(p["resourceArn"])
        for key in p["tagKeys"]:
            tags.pop(key, None)
        return {}

    def list_tags_for_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"tags": dict(self._tagged(p["resourceArn"]))}

    # ---- inventory -----------------------------------------------------------------------

    def inventory(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {
            "eks_clusters": sorted(self.clusters),
            "eks_nodegroups": [],
            "eks_addons": [],
            "eks_access_entries": [],
            "eks_pod_identity_associations": [],
        }
        for cluster in self.clusters.values():
            result["eks_nodegroups"] += [f"{cluster.name}/{n}" for n in sorted(cluster.nodegroups)]
            result["eks_addons"] += [f"{cluster.name}/{a}" for a in sorted(cluster.addons)]
            result["eks_access_entries"] += [
                f"{cluster.name}/{e}" for e in sorted(cluster.access_entries)
            ]
            result["eks_pod_identity_associations"] += [
                f"{cluster.name}/{a}" for a in sorted(cluster.pod_identities)
            ]
        return result


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if not k.startswith("_")}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("nextToken") or 0)
    except ValueError:
        raise AwsError("InvalidParameterException", "The nextToken is invalid") from None
    size = int(p.get("maxResults") or 100)
    page = items[start : start + size]
    return page, str(start + size) if start + size < len(items) else None
