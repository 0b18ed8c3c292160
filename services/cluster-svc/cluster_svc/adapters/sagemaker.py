"""SageMaker HyperPod clusters through boto3, and where EC2 offers an instance type."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.hyperpod import HyperPodCluster
from cluster_svc.domain.instance_groups.described import DescribedCluster
from shared.errors import PermanentError

NOT_FOUND = "ResourceNotFound"


class SageMakerClusters:
    """HyperPod's cluster API (SageMaker CreateCluster/DescribeCluster/DeleteCluster)."""

    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def describe_cluster(self, name: str) -> HyperPodCluster | None:
        try:
            answer = await self.aws.call("sagemaker", "describe_cluster", ClusterName=name)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        created_at = answer.get("CreationTime")
        return HyperPodCluster(
            name=answer["ClusterName"],
            arn=answer["ClusterArn"],
            status=answer["ClusterStatus"],
            failure_message=answer.get("FailureMessage") or None,
            created_at=created_at if isinstance(created_at, datetime) else None,
        )

    async def cluster_tags(self, arn: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        params: dict[str, Any] = {"ResourceArn": arn}
        while True:
            page = await self.aws.call("sagemaker", "list_tags", **params)
            tags.update({t["Key"]: t["Value"] for t in page.get("Tags", [])})
            if not page.get("NextToken"):
                return tags
            params["NextToken"] = page["NextToken"]

    async def create_cluster(self, request: dict[str, Any]) -> str:
        try:
            answer = await self.aws.call("sagemaker", "create_cluster", **request)
        except PermanentError as exc:
            raise PermanentError(exc.code, exc.message, _create_hint(exc.code)) from exc
        return str(answer["ClusterArn"])

    async def delete_cluster(self, name: str) -> None:
        try:
            await self.aws.call("sagemaker", "delete_cluster", ClusterName=name)
        except PermanentError as exc:
            if exc.code in (NOT_FOUND, "ConflictException"):
                return  # gone, or already being deleted
            raise

    async def describe_cluster_groups(self, name: str) -> DescribedCluster | None:
        """DescribeCluster with every instance group's full described configuration."""
        try:
            answer = await self.aws.call("sagemaker", "describe_cluster", ClusterName=name)
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        orchestrator = answer.get("Orchestrator") or {}
        return DescribedCluster(
            name=answer["ClusterName"],
            arn=answer["ClusterArn"],
            status=answer["ClusterStatus"],
            failure_message=answer.get("FailureMessage") or None,
            vpc_config=_json(answer.get("VpcConfig") or {}),
            eks_cluster_arn=(orchestrator.get("Eks") or {}).get("ClusterArn"),
            groups={g["InstanceGroupName"]: _json(g) for g in answer.get("InstanceGroups") or []},
        )

    async def update_cluster(self, request: dict[str, Any]) -> str:
        """UpdateCluster with exactly the request given (the caller computed the diff)."""
        try:
            answer = await self.aws.call("sagemaker", "update_cluster", **request)
        except PermanentError as exc:
            raise PermanentError(exc.code, exc.message, _update_hint(exc.code)) from exc
        return str(answer["ClusterArn"])

    async def update_cluster_software(self, request: dict[str, Any]) -> str:
        try:
            answer = await self.aws.call("sagemaker", "update_cluster_software", **request)
        except PermanentError as exc:
            raise PermanentError(exc.code, exc.message, _update_hint(exc.code)) from exc
        return str(answer["ClusterArn"])

    async def efa_supported(self, instance_type: str) -> bool | None:
        """Whether EC2 gives the instance type behind a HyperPod `ml.*` type EFA (None: the
        type is unknown to EC2 here)."""
        try:
            answer = await self.aws.call(
                "ec2", "describe_instance_types", InstanceTypes=[instance_type.removeprefix("ml.")]
            )
        except PermanentError as exc:
            if exc.code in ("InvalidInstanceType", "InvalidParameterValue"):
                return None
            raise
        types = answer.get("InstanceTypes") or []
        if not types:
            return None
        return bool((types[0].get("NetworkInfo") or {}).get("EfaSupported"))

    async def offered_zone_ids(self, instance_type: str) -> list[str]:
        """Zone ids where EC2 offers the instance type behind a HyperPod `ml.*` type."""
        ec2_type = instance_type.removeprefix("ml.")
        zones: list[str] = []
        params: dict[str, Any] = {
            "LocationType": "availability-zone-id",
            "Filters": [{"Name": "instance-type", "Values": [ec2_type]}],
        }
        while True:
            page = await self.aws.call("ec2", "describe_instance_type_offerings", **params)
            zones += [o["Location"] for o in page.get("InstanceTypeOfferings", [])]
            if not page.get("NextToken"):
                return sorted(set(zones))
            params["NextToken"] = page["NextToken"]


def _create_hint(code: str) -> str | None:
    if code == "ResourceLimitExceeded":
        return (
            "request a higher '<instance type> for cluster usage' quota in Service Quotas "
            "(SageMaker), or lower the instance counts"
        )
    if code == "ValidationException":
        return "fix the request as the message says (subnets, security group, roles, training plan)"
    if code == "ResourceInUse":
        return "a HyperPod cluster with this name exists: choose another name"
    return None


def _json(value: Any) -> Any:
    """A described structure with its timestamps as ISO strings (stage outputs are JSON)."""
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _update_hint(code: str) -> str | None:
    if code == "ConflictException":
        return "another change of the cluster is in progress: retry once it is InService"
    if code == "ResourceLimitExceeded":
        return (
            "request a higher '<instance type> for cluster usage' quota in Service Quotas "
            "(SageMaker), or ask for fewer instances"
        )
    if code == "ValidationException":
        return "fix the request as the message says (the dry run shows the exact request)"
    if code == NOT_FOUND:
        return "the HyperPod cluster no longer exists; check it with GET /api/v1/clusters"
    return None
