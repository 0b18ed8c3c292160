"""EKS clusters and access entries through boto3 (and STS for who is calling)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.control_plane import EksCluster
from shared.errors import PermanentError

NOT_FOUND = "ResourceNotFoundException"


def _cluster(view: dict[str, Any]) -> EksCluster:
    issues = (view.get("health") or {}).get("issues") or []
    created_at = view.get("createdAt")
    return EksCluster(
        name=view["name"],
        arn=view["arn"],
        status=view.get("status", "CREATING"),
        tags=dict(view.get("tags") or {}),
        created_at=created_at if isinstance(created_at, datetime) else None,
        endpoint=view.get("endpoint"),
        ca_data=(view.get("certificateAuthority") or {}).get("data"),
        oidc_issuer=((view.get("identity") or {}).get("oidc") or {}).get("issuer"),
        health="; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues) or None,
    )


class EksClusters:
    """The EKS control plane and its access entries."""

    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def describe_cluster(self, name: str) -> EksCluster | None:
        try:
            answer = await self.aws.call("eks", "describe_cluster", name=name)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        return _cluster(answer["cluster"])

    async def create_cluster(self, request: dict[str, Any]) -> EksCluster:
        try:
            answer = await self.aws.call("eks", "create_cluster", **request)
        except PermanentError as exc:
            raise PermanentError(exc.code, exc.message, _create_hint(exc.code)) from exc
        return _cluster(answer["cluster"])

    async def delete_cluster(self, name: str) -> None:
        try:
            await self.aws.call("eks", "delete_cluster", name=name)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return
            if exc.code == "ResourceInUseException":
                raise PermanentError(
                    exc.code,
                    exc.message,
                    "delete the node groups and HyperPod clusters attached to it, then retry",
                ) from exc
            raise

    async def caller_arn(self) -> str:
        identity = await self.aws.call("sts", "get_caller_identity")
        return str(identity["Arn"])

    async def access_entry_exists(self, cluster: str, principal_arn: str) -> bool:
        try:
            await self.aws.call(
                "eks", "describe_access_entry", clusterName=cluster, principalArn=principal_arn
            )
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return False
            raise
        return True

    async def create_access_entry(
        self, cluster: str, principal_arn: str, entry_type: str, tags: dict[str, str]
    ) -> None:
        try:
            await self.aws.call(
                "eks",
                "create_access_entry",
                clusterName=cluster,
                principalArn=principal_arn,
                type=entry_type,
                tags=tags,
            )
        except PermanentError as exc:
            if exc.code == "ResourceInUseException":
                return  # made meanwhile (a concurrent or repeated attempt): the entry exists
            if exc.code == "InvalidRequestException":
                raise PermanentError(
                    exc.code,
                    exc.message,
                    "switch the cluster's authentication mode to API_AND_CONFIG_MAP "
                    "(aws eks update-cluster-config --access-config authenticationMode=API_AND_CONFIG_MAP)",
                ) from exc
            raise

    async def associated_policies(self, cluster: str, principal_arn: str) -> list[str]:
        policies: list[str] = []
        params: dict[str, Any] = {"clusterName": cluster, "principalArn": principal_arn}
        while True:
            page = await self.aws.call("eks", "list_associated_access_policies", **params)
            policies += [p["policyArn"] for p in page.get("associatedAccessPolicies", [])]
            if not page.get("nextToken"):
                return policies
            params["nextToken"] = page["nextToken"]

    async def associate_cluster_policy(
        self, cluster: str, principal_arn: str, policy_arn: str
    ) -> None:
        await self.aws.call(
            "eks",
            "associate_access_policy",
            clusterName=cluster,
            principalArn=principal_arn,
            policyArn=policy_arn,
            accessScope={"type": "cluster"},
        )


def _create_hint(code: str) -> str | None:
    if code == "InvalidParameterException":
        return "check the subnets (two zones, one VPC), the security group and the cluster role"
    if code == "ResourceLimitExceeded":
        return "delete unused EKS clusters or request a higher quota in Service Quotas"
    if code == "UnsupportedAvailabilityZoneException":
        return "EKS lacks capacity in one of the zones: create the cluster in other zones"
    return None
