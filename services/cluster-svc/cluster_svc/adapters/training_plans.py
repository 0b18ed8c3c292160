"""SageMaker training plans through boto3: search offerings, describe and buy a plan."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from shared.contracts.training_plans import OfferingSearch
from shared.errors import StageError


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def offering_view(offering: dict[str, Any]) -> dict[str, Any]:
    """One TrainingPlanOffering in plain JSON (a plan of one reserved capacity, as HyperPod
    plans are; more are listed under `reserved_capacity`)."""
    capacity = [
        {
            "instance_type": c.get("InstanceType"),
            "instance_count": c.get("InstanceCount", 0),
            "availability_zone": c.get("AvailabilityZone"),
            "start_time": _iso(c.get("StartTime")),
            "end_time": _iso(c.get("EndTime")),
        }
        for c in offering.get("ReservedCapacityOfferings", [])
    ]
    first = capacity[0] if capacity else {}
    return {
        "offering_id": offering["TrainingPlanOfferingId"],
        "target_resources": list(offering.get("TargetResources", [])),
        "instance_type": first.get("instance_type"),
        "instance_count": sum(int(c["instance_count"] or 0) for c in capacity),
        "availability_zone": first.get("availability_zone"),
        "start_time": first.get("start_time"),
        "end_time": first.get("end_time"),
        "duration_hours": offering.get("DurationHours", 0),
        "upfront_fee": str(offering.get("UpfrontFee", "0")),
        "currency": offering.get("CurrencyCode", "USD"),
        "reserved_capacity": capacity,
    }


class TrainingPlans:
    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def search(self, search: OfferingSearch) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "TargetResources": [search.target],
            "InstanceType": search.instance_type,
            "InstanceCount": search.instance_count,
            "DurationHours": search.duration_days * 24,
        }
        if search.start_after is not None:
            params["StartTimeAfter"] = search.start_after
        if search.end_before is not None:
            params["EndTimeBefore"] = search.end_before
        reply = await self.aws.call("sagemaker", "search_training_plan_offerings", **params)
        return [offering_view(o) for o in reply.get("TrainingPlanOfferings", [])]

    async def describe(self, name: str) -> dict[str, Any] | None:
        try:
            reply: dict[str, Any] = await self.aws.call(
                "sagemaker", "describe_training_plan", TrainingPlanName=name
            )
        except StageError as exc:
            if exc.code in ("ResourceNotFound", "ValidationException"):
                return None
            raise
        return reply

    async def create(self, name: str, offering_id: str) -> str:
        reply = await self.aws.call(
            "sagemaker",
            "create_training_plan",
            TrainingPlanName=name,
            TrainingPlanOfferingId=offering_id,
        )
        return str(reply["TrainingPlanArn"])
