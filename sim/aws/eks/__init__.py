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

from typing import Any

from sim.aws.context import SimContext
from sim.aws.eks.access import AccessOps
from sim.aws.eks.addons import AddonOps
from sim.aws.eks.clusters import ClusterOps
from sim.aws.eks.model import EksCluster, Handler
from sim.aws.eks.nodegroups import NodegroupOps
from sim.aws.eks.pod_identity import PodIdentityOps
from sim.aws.eks.tags import TagOps


class Eks(ClusterOps, NodegroupOps, AddonOps, AccessOps, PodIdentityOps, TagOps):
    """The EKS API."""

    def __init__(self, ctx: SimContext) -> None:
        super().__init__(ctx)
        ctx.eks_description = self.description

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


__all__ = ["Eks", "EksCluster"]
