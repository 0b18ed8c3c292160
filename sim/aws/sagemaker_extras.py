"""The rest of SageMaker that the product needs and moto lacks: training plans (from the
account's configuration), MLflow tracking servers, and tags on simulated resources."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sim.aws.account import TrainingPlan
from sim.aws.context import SimContext
from sim.aws.errors import AwsError
from sim.aws.hyperpod import HyperPod

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class ForwardToMoto(Exception):
    """The request concerns a resource moto owns: let moto answer it."""


class SageMakerExtras:
    def __init__(self, ctx: SimContext, hyperpod: HyperPod) -> None:
        self.ctx = ctx
        self.hyperpod = hyperpod
        self.tracking_servers: dict[str, dict[str, Any]] = {}

    def operations(self) -> dict[str, Handler]:
        return {
            "ListTrainingPlans": self.list_training_plans,
            "DescribeTrainingPlan": self.describe_training_plan,
            "CreateMlflowTrackingServer": self.create_tracking_server,
            "DescribeMlflowTrackingServer": self.describe_tracking_server,
            "ListMlflowTrackingServers": self.list_tracking_servers,
            "UpdateMlflowTrackingServer": self.update_tracking_server,
            "DeleteMlflowTrackingServer": self.delete_tracking_server,
            "CreatePresignedMlflowTrackingServerUrl": self.presigned_url,
            "AddTags": self.add_tags,
            "ListTags": self.list_tags,
            "DeleteTags": self.delete_tags,
        }

    # ---- training plans ------------------------------------------------------------------

    def _plan_view(self, plan: TrainingPlan) -> dict[str, Any]:
        in_use = self.hyperpod.plan_in_use(plan.arn)
        total = plan.total()
        return {
            "TrainingPlanArn": plan.arn,
            "TrainingPlanName": plan.name,
            "Status": plan.status,
            "DurationHours": plan.duration_hours,
            "DurationMinutes": 0,
            "StartTime": plan.start_time,
            "EndTime": plan.end_time,
            "UpfrontFee": plan.upfront_fee,
            "CurrencyCode": "USD",
            "TotalInstanceCount": total,
            "AvailableInstanceCount": max(total - in_use, 0),
            "InUseInstanceCount": in_use,
            "TargetResources": list(plan.target_resources),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": f"{plan.arn}/reserved-capacity/{i}",
                    "ReservedCapacityType": "Instance",
                    "InstanceType": c.instance_type,
                    "TotalInstanceCount": c.count,
                    "Status": plan.status,
                    "AvailabilityZoneId": c.availability_zone_id,
                    "DurationHours": plan.duration_hours,
                    "StartTime": plan.start_time,
                    "EndTime": plan.end_time,
                }
                for i, c in enumerate(plan.capacity)
            ],
        }

    def list_training_plans(self, p: dict[str, Any]) -> dict[str, Any]:
        plans = list(self.ctx.account.training_plans.values())
        for f in p.get("Filters") or []:
            if f["Name"] == "Status":
                plans = [x for x in plans if x.status == f["Value"]]
        after: datetime | None = p.get("StartTimeAfter")
        if after:
            plans = [x for x in plans if x.start_time > after]
        sort_by = p.get("SortBy")
        key: Callable[[TrainingPlan], Any] = (
            (lambda x: x.start_time)
            if sort_by == "StartTime"
            else (lambda x: x.status)
            if sort_by == "Status"
            else (lambda x: x.name)
        )
        plans.sort(key=key, reverse=p.get("SortOrder") == "Descending")
        page, token = _page(plans, p)
        return {"TrainingPlanSummaries": [self._plan_view(x) for x in page], "NextToken": token}

    def describe_training_plan(self, p: dict[str, Any]) -> dict[str, Any]:
        plan = self.ctx.account.training_plan(p["TrainingPlanName"])
        if plan is None:
            raise AwsError("ResourceNotFound", f"Training plan {p['TrainingPlanName']} not found.")
        return self._plan_view(plan)

    # ---- MLflow --------------------------------------------------------------------------

    def _server(self, name: str) -> dict[str, Any]:
        server = self.tracking_servers.get(name)
        if server is None:
            raise AwsError("ResourceNotFound", f"Tracking server {name} not found.")
        return server

    def create_tracking_server(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["TrackingServerName"]
        if name in self.tracking_servers:
            raise AwsError("ResourceInUse", f"Tracking server {name} already exists.")
        arn = self.ctx.arn("sagemaker", f"mlflow-tracking-server/{name}")
        now = self.ctx.now()
        server = {
            "TrackingServerArn": arn,
            "TrackingServerName": name,
            "ArtifactStoreUri": p["ArtifactStoreUri"],
            "TrackingServerSize": p.get("TrackingServerSize", "Small"),
            "MlflowVersion": p.get("MlflowVersion", "2.16.2"),
            "RoleArn": p["RoleArn"],
            "TrackingServerStatus": "Creating",
            "IsActive": "Inactive",
            "TrackingServerUrl": f"https://{name}.{self.ctx.region}.experiments.sagemaker.aws",
            "WeeklyMaintenanceWindowStart": p.get("WeeklyMaintenanceWindowStart", "Tue:03:30"),
            "AutomaticModelRegistration": bool(p.get("AutomaticModelRegistration", False)),
            "CreationTime": now,
            "LastModifiedTime": now,
            "_tags": list(p.get("Tags") or []),
        }
        self.tracking_servers[name] = server

        def ready() -> None:
            if (
                self.tracking_servers.get(name) is server
                and server["TrackingServerStatus"] == "Creating"
            ):
                server["TrackingServerStatus"] = "Created"
                server["IsActive"] = "Active"

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, ready)
        return {"TrackingServerArn": arn}

    def describe_tracking_server(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v for k, v in self._server(p["TrackingServerName"]).items() if not k.startswith("_")
        }

    def list_tracking_servers(self, p: dict[str, Any]) -> dict[str, Any]:
        servers = sorted(self.tracking_servers.values(), key=lambda s: s["CreationTime"])
        page, token = _page(servers, p)
        keys = (
            "TrackingServerArn",
            "TrackingServerName",
            "CreationTime",
            "LastModifiedTime",
            "TrackingServerStatus",
            "IsActive",
            "MlflowVersion",
        )
        return {
            "TrackingServerSummaries": [{k: s[k] for k in keys} for s in page],
            "NextToken": token,
        }

    def update_tracking_server(self, p: dict[str, Any]) -> dict[str, Any]:
        server = self._server(p["TrackingServerName"])
        if server["TrackingServerStatus"] not in ("Created", "Updated"):
            raise AwsError(
                "ConflictException", f"Tracking server is {server['TrackingServerStatus']}."
            )
        server["TrackingServerStatus"] = "Updating"

        def done() -> None:
            for key in (
                "ArtifactStoreUri",
                "TrackingServerSize",
                "AutomaticModelRegistration",
                "WeeklyMaintenanceWindowStart",
            ):
                if p.get(key) is not None:
                    server[key] = p[key]
            server["TrackingServerStatus"] = "Updated"
            server["LastModifiedTime"] = self.ctx.now()

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, done)
        return {"TrackingServerArn": server["TrackingServerArn"]}

    def delete_tracking_server(self, p: dict[str, Any]) -> dict[str, Any]:
        server = self._server(p["TrackingServerName"])
        server["TrackingServerStatus"] = "Deleting"

        def gone() -> None:
            if self.tracking_servers.get(server["TrackingServerName"]) is server:
                del self.tracking_servers[server["TrackingServerName"]]

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, gone)
        return {"TrackingServerArn": server["TrackingServerArn"]}

    def presigned_url(self, p: dict[str, Any]) -> dict[str, Any]:
        server = self._server(p["TrackingServerName"])
        return {"AuthorizedUrl": f"{server['TrackingServerUrl']}/auth?token=simulated"}

    # ---- tags ----------------------------------------------------------------------------

    def _tags_of(self, arn: str) -> list[dict[str, str]]:
        for cluster in self.hyperpod.clusters.values():
            if cluster.arn == arn:
                return cluster.tags
        for server in self.tracking_servers.values():
            if server["TrackingServerArn"] == arn:
                tags: list[dict[str, str]] = server["_tags"]
                return tags
        if any(plan.arn == arn for plan in self.ctx.account.training_plans.values()):
            return []
        raise ForwardToMoto()

    def add_tags(self, p: dict[str, Any]) -> dict[str, Any]:
        tags = self._tags_of(p["ResourceArn"])
        for tag in p["Tags"]:
            tags[:] = [t for t in tags if t["Key"] != tag["Key"]] + [tag]
        return {"Tags": list(tags)}

    def list_tags(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"Tags": list(self._tags_of(p["ResourceArn"]))}

    def delete_tags(self, p: dict[str, Any]) -> dict[str, Any]:
        tags = self._tags_of(p["ResourceArn"])
        tags[:] = [t for t in tags if t["Key"] not in p["TagKeys"]]
        return {}


def _page(items: list[Any], p: dict[str, Any]) -> tuple[list[Any], str | None]:
    try:
        start = int(p.get("NextToken") or 0)
    except ValueError:
        raise AwsError("ValidationException", "Invalid NextToken") from None
    size = int(p.get("MaxResults") or 100)
    return items[start : start + size], str(start + size) if start + size < len(items) else None
