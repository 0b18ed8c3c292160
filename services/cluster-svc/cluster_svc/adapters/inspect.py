"""Reads of the account that planning a cluster needs: zones, offerings, quotas, training plans,
clusters. Every answer is plain JSON (lists and dicts of str/int/bool), ready for a reply.

HyperPod's instance types come from botocore's model (`ClusterInstanceType`), so a new type is
known as soon as botocore knows it; where they are offered comes from EC2, by zone id (the same
physical zone in every account), for the EC2 type each `ml.*` type runs on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.inspection import (
    InspectionReads,
    Problem,
    check_create,
    cluster_quota_name,
    ec2_instance_type,
    instance_facts,
    is_managed,
    training_plan_name,
)
from shared.contracts.cluster import ClusterSpec
from shared.errors import PermanentError

# EC2 filters take a bounded number of values; offerings are asked for in batches this size.
FILTER_BATCH = 100
# Clusters described at once when listing them (each is one or two describe calls).
DESCRIBE_CONCURRENCY = 8
GONE_STATUSES = frozenset({"Failed", "Deleting"})


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _tags(pairs: list[dict[str, str]]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in pairs}


def _plan_view(summary: dict[str, Any]) -> dict[str, Any]:
    """A training plan as `ListTrainingPlans`/`DescribeTrainingPlan` give it, in plain JSON."""
    return {
        "name": summary["TrainingPlanName"],
        "arn": summary["TrainingPlanArn"],
        "status": summary.get("Status", "Unknown"),
        "status_message": summary.get("StatusMessage"),
        "start_time": _iso(summary.get("StartTime")),
        "end_time": _iso(summary.get("EndTime")),
        "duration_hours": summary.get("DurationHours"),
        "total_instance_count": summary.get("TotalInstanceCount", 0),
        "available_instance_count": summary.get("AvailableInstanceCount", 0),
        "in_use_instance_count": summary.get("InUseInstanceCount", 0),
        "target_resources": list(summary.get("TargetResources", [])),
        "reserved_capacity": [
            {
                "instance_type": c.get("InstanceType"),
                "count": c.get("TotalInstanceCount", 0),
                "availability_zone_id": c.get("AvailabilityZoneId"),
                "availability_zone": c.get("AvailabilityZone"),
                "status": c.get("Status"),
            }
            for c in summary.get("ReservedCapacitySummaries", [])
        ],
    }


def _quota_view(quota: dict[str, Any]) -> dict[str, Any]:
    return {
        "quota_name": quota["QuotaName"],
        "quota_code": quota["QuotaCode"],
        "value": quota.get("Value", 0.0),
        "adjustable": bool(quota.get("Adjustable", False)),
    }


class Inspector(InspectionReads):
    """The account reads of the region asked about, through the project's boto3 clients."""

    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    @property
    def region(self) -> str:
        return self.aws.region

    @property
    def served(self) -> tuple[str, ...]:
        return self.aws.served

    async def _pages(
        self, service: str, operation: str, items: str, **params: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of a `NextToken`-paged list operation."""
        token: str | None = None
        while True:
            page = await self.aws.call(
                service, operation, **params, **({"NextToken": token} if token else {})
            )
            for item in page.get(items, []):
                yield item
            token = page.get("NextToken")
            if not token:
                return

    # ---- zones and offerings -----------------------------------------------------------

    async def availability_zones(self) -> list[dict[str, Any]]:
        """The region's Availability Zones (not Local or Wavelength Zones) with their ids."""
        reply = await self.aws.call("ec2", "describe_availability_zones")
        zones = [
            {
                "zone_name": z["ZoneName"],
                "zone_id": z["ZoneId"],
                "state": z.get("State", "available"),
            }
            for z in reply.get("AvailabilityZones", [])
            if z.get("ZoneType", "availability-zone") == "availability-zone"
        ]
        return sorted(zones, key=lambda z: z["zone_id"])

    def hyperpod_instance_types(self) -> list[str]:
        """The `ml.*` types HyperPod clusters accept, per the installed botocore."""
        model = self.aws.client("sagemaker").meta.service_model
        return list(model.shape_for("ClusterInstanceType").enum)

    async def offered_zone_ids(self, instance_types: Sequence[str]) -> dict[str, list[str]]:
        """For each `ml.*` type, the zone ids where EC2 offers the type it runs on."""
        by_ec2 = {ec2_instance_type(t): t for t in instance_types}
        names = sorted(by_ec2)
        offered: dict[str, set[str]] = {t: set() for t in instance_types}
        for start in range(0, len(names), FILTER_BATCH):
            batch = names[start : start + FILTER_BATCH]
            async for offering in self._pages(
                "ec2",
                "describe_instance_type_offerings",
                "InstanceTypeOfferings",
                LocationType="availability-zone-id",
                Filters=[{"Name": "instance-type", "Values": batch}],
                MaxResults=1000,
            ):
                ml_type = by_ec2.get(offering["InstanceType"])
                if ml_type is not None:
                    offered[ml_type].add(offering["Location"])
        return {t: sorted(zones) for t, zones in offered.items()}

    async def instance_types(self, availability_zone_id: str | None = None) -> list[dict[str, Any]]:
        """HyperPod types offered in the region (or in one zone), with every zone of each and
        what each has (vCPUs, memory, GPUs, EFA: `instance_facts`)."""
        offered = await self.offered_zone_ids(self.hyperpod_instance_types())
        shown = {
            ml_type: zones
            for ml_type, zones in sorted(offered.items())
            if zones and (availability_zone_id is None or availability_zone_id in zones)
        }
        described = await self.described_types([ec2_instance_type(t) for t in shown])
        return [
            {
                "instance_type": ml_type,
                "ec2_instance_type": ec2_instance_type(ml_type),
                "availability_zone_ids": zones,
                **instance_facts(described.get(ec2_instance_type(ml_type), {})),
            }
            for ml_type, zones in shown.items()
        ]

    async def described_types(self, ec2_types: Sequence[str]) -> dict[str, dict[str, Any]]:
        """EC2's DescribeInstanceTypes answer for each type, asked in batches."""
        names = sorted(ec2_types)
        described: dict[str, dict[str, Any]] = {}
        for start in range(0, len(names), FILTER_BATCH):
            async for item in self._pages(
                "ec2",
                "describe_instance_types",
                "InstanceTypes",
                Filters=[{"Name": "instance-type", "Values": names[start : start + FILTER_BATCH]}],
            ):
                described[item["InstanceType"]] = item
        return described

    # ---- quotas -----------------------------------------------------------------------

    async def cluster_quotas(self, instance_types: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The applied "<type> for cluster usage" quota of each type that has one."""
        wanted = {cluster_quota_name(t): t for t in instance_types}
        found: dict[str, dict[str, Any]] = {}
        async for quota in self._pages(
            "service-quotas",
            "list_service_quotas",
            "Quotas",
            ServiceCode="sagemaker",
            MaxResults=100,
        ):
            instance_type = wanted.get(quota.get("QuotaName", ""))
            if instance_type is not None:
                found[instance_type] = _quota_view(quota)
        return found

    async def cluster_usage(self) -> dict[str, int]:
        """Instances per type that HyperPod clusters of the account hold against the
        cluster-usage quota: target counts of groups not on a training plan, in clusters
        that are not failed or being deleted."""
        usage: dict[str, int] = {}
        for cluster in await self._hyperpod_details():
            if cluster["ClusterStatus"] in GONE_STATUSES:
                continue
            for group in cluster.get("InstanceGroups", []):
                if group.get("TrainingPlanArn"):
                    continue
                count = int(group.get("TargetCount", group.get("CurrentCount", 0)))
                usage[group["InstanceType"]] = usage.get(group["InstanceType"], 0) + count
        return usage

    async def quota(self, instance_type: str) -> dict[str, Any]:
        """One type's cluster-usage quota, what clusters use of it, and what is left."""
        quotas, usage = await asyncio.gather(
            self.cluster_quotas([instance_type]), self.cluster_usage()
        )
        quota = quotas.get(instance_type)
        if quota is None:
            raise PermanentError(
                "NoSuchQuota",
                f"Service Quotas has no '{cluster_quota_name(instance_type)}' quota in "
                f"{self.region}",
                "check the instance type (GET /api/v1/inspect/instance-types)",
            )
        in_use = usage.get(instance_type, 0)
        return {
            "instance_type": instance_type,
            **quota,
            "in_use": in_use,
            "available": max(int(quota["value"]) - in_use, 0),
        }

    # ---- training plans -----------------------------------------------------------------

    async def training_plans(self) -> list[dict[str, Any]]:
        return [
            _plan_view(p)
            async for p in self._pages(
                "sagemaker", "list_training_plans", "TrainingPlanSummaries", MaxResults=100
            )
        ]

    async def training_plan(self, arn: str) -> dict[str, Any] | None:
        try:
            reply = await self.aws.call(
                "sagemaker", "describe_training_plan", TrainingPlanName=training_plan_name(arn)
            )
        except PermanentError as exc:
            if exc.code in ("ResourceNotFound", "ResourceNotFoundException"):
                return None
            raise
        return _plan_view(reply)

    # ---- clusters -----------------------------------------------------------------------

    async def _hyperpod_details(self) -> list[dict[str, Any]]:
        names = [
            c["ClusterName"]
            async for c in self._pages(
                "sagemaker", "list_clusters", "ClusterSummaries", MaxResults=100
            )
        ]
        replies = await self._bounded(
            [self._describe("sagemaker", "describe_cluster", ClusterName=n) for n in names]
        )
        return [r for r in replies if r]

    async def _describe(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        """A describe that tolerates the resource vanishing between list and describe."""
        try:
            reply: dict[str, Any] = await self.aws.call(service, operation, **params)
        except PermanentError as exc:
            if exc.code in ("ResourceNotFound", "ResourceNotFoundException"):
                return {}
            raise
        return reply

    @staticmethod
    async def _bounded(calls: list[Any]) -> list[dict[str, Any]]:
        limit = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

        async def one(call: Any) -> dict[str, Any]:
            async with limit:
                result: dict[str, Any] = await call
                return result

        return list(await asyncio.gather(*(one(c) for c in calls)))

    async def _eks_details(self) -> list[dict[str, Any]]:
        names = [n async for n in self._pages("eks", "list_clusters", "clusters", maxResults=100)]
        replies = await self._bounded(
            [self._describe("eks", "describe_cluster", name=n) for n in names]
        )
        return [r["cluster"] for r in replies if r]

    async def clusters(self) -> list[dict[str, Any]]:
        """EKS and HyperPod clusters of the account: `managed` when tagged managed-by=hyperpilot
        (this control plane made them), else `importable`."""
        eks, hyperpod = await asyncio.gather(self._eks_details(), self._hyperpod_details())
        hyperpod_tags = await self._bounded(
            [
                self._describe("sagemaker", "list_tags", ResourceArn=c["ClusterArn"])
                for c in hyperpod
            ]
        )
        tags_of = {
            c["ClusterArn"]: _tags(t.get("Tags", []))
            for c, t in zip(hyperpod, hyperpod_tags, strict=True)
        }
        orchestrated: dict[str, list[str]] = {}
        result: list[dict[str, Any]] = []
        for cluster in hyperpod:
            eks_arn = cluster.get("Orchestrator", {}).get("Eks", {}).get("ClusterArn")
            if eks_arn:
                orchestrated.setdefault(eks_arn, []).append(cluster["ClusterName"])
            managed = is_managed(tags_of.get(cluster["ClusterArn"], {}))
            result.append(
                {
                    "kind": "hyperpod",
                    "name": cluster["ClusterName"],
                    "arn": cluster["ClusterArn"],
                    "status": cluster["ClusterStatus"],
                    "created_at": _iso(cluster.get("CreationTime")),
                    "eks_cluster_arn": eks_arn,
                    "eks_cluster_name": eks_arn.rsplit("/", 1)[-1] if eks_arn else None,
                    "instance_groups": [
                        {
                            "name": g["InstanceGroupName"],
                            "instance_type": g["InstanceType"],
                            "current_count": g.get("CurrentCount", 0),
                            "target_count": g.get("TargetCount", 0),
                            "status": g.get("Status"),
                            "training_plan_arn": g.get("TrainingPlanArn"),
                        }
                        for g in cluster.get("InstanceGroups", [])
                    ],
                    "managed": managed,
                    "importable": not managed,
                }
            )
        for cluster in eks:
            managed = is_managed(cluster.get("tags") or {})
            result.append(
                {
                    "kind": "eks",
                    "name": cluster["name"],
                    "arn": cluster["arn"],
                    "status": cluster.get("status"),
                    "created_at": _iso(cluster.get("createdAt")),
                    "kubernetes_version": cluster.get("version"),
                    "endpoint": cluster.get("endpoint"),
                    "hyperpod_cluster_names": sorted(orchestrated.get(cluster["arn"], [])),
                    "managed": managed,
                    "importable": not managed,
                }
            )
        return sorted(result, key=lambda c: (c["kind"], c["name"]))

    async def cluster_name_holders(self, name: str) -> list[str]:
        """Which services (EKS, HyperPod) already have a cluster called `name`."""
        eks, hyperpod = await asyncio.gather(
            self._describe("eks", "describe_cluster", name=name),
            self._describe("sagemaker", "describe_cluster", ClusterName=name),
        )
        return [kind for kind, reply in (("EKS", eks), ("HyperPod", hyperpod)) if reply]

    # ---- network ------------------------------------------------------------------------

    async def vpc_exists(self, vpc_id: str) -> bool:
        try:
            reply = await self.aws.call("ec2", "describe_vpcs", VpcIds=[vpc_id])
        except PermanentError as exc:
            if exc.code == "InvalidVpcID.NotFound":
                return False
            raise
        return bool(reply.get("Vpcs"))

    # ---- the pre-create checks ----------------------------------------------------------

    async def check_create(self, spec: ClusterSpec, region: str) -> list[Problem]:
        return await check_create(self, spec, region)
