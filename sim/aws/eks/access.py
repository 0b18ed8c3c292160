"""EKS access entries and access policies, including the entries HyperPod adds for its
nodes' roles."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from sim.aws import eks_catalog, moto_state
from sim.aws.eks.base import EksBase
from sim.aws.eks.model import EksCluster, page_of, public_view
from sim.aws.errors import AwsError


class AccessOps(EksBase):
    """Access entry and access policy operations."""

    def _require_api_mode(self, cluster: EksCluster) -> None:
        if cluster.auth_mode == "CONFIG_MAP":
            raise AwsError(
                "InvalidRequestException",
                "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] "
                "to perform this operation.",
                extra={"clusterName": cluster.name},
            )

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
        return {"accessEntry": public_view(self._entry(p)[1])}

    def list_access_entries(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["clusterName"])
        principals = sorted(cluster.access_entries)
        if p.get("associatedPolicyArn"):
            principals = [
                x
                for x in principals
                if p["associatedPolicyArn"] in cluster.access_policies.get(x, {})
            ]
        page, token = page_of(principals, p)
        return {"accessEntries": page, "nextToken": token}

    def update_access_entry(self, p: dict[str, Any]) -> dict[str, Any]:
        _, entry = self._entry(p)
        for key in ("kubernetesGroups", "username"):
            if p.get(key) is not None:
                entry[key] = p[key]
        entry["modifiedAt"] = self.ctx.now()
        return {"accessEntry": public_view(entry)}

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
        page, token = page_of(policies, p)
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
        page, token = page_of(policies, p)
        return {"accessPolicies": page, "nextToken": token}

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
