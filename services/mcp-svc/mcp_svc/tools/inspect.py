"""Inspect before create: zones, instance types per zone, quotas, training plans, clusters."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import (
    PAGE,
    Paged,
    PageLimit,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    page_of,
)
from mcp_svc.tools.common import Region, count, named
from shared.contracts.cluster import ML_INSTANCE_PATTERN, ZONE_ID_PATTERN

# A type with its zones and facts is ~300 bytes: 25 a page is ~8 KB, 40 (the most) ~12 KB.
DEFAULT_TYPES = 25
MAX_TYPES = 40


class Zone(Passthrough):
    zone_name: str = Field(description="Account-specific name, e.g. us-east-1a")
    zone_id: str = Field(description="Physical zone id, the same in every account, e.g. use1-az2")
    state: str | None = Field(None, description="The AWS zone state, e.g. available")


class InstanceTypeOffer(Passthrough):
    instance_type: str = Field(description="HyperPod instance type, e.g. ml.p5.48xlarge")
    ec2_instance_type: str | None = Field(None, description="The EC2 type it runs on")
    availability_zone_ids: list[str] = Field(description="Zone ids that offer it")
    vcpus: int | None = Field(None, description="vCPUs")
    memory_gib: float | None = Field(None, description="Memory, GiB")
    gpu_count: int = Field(0, description="GPUs (a job's resources.gpus is at most this)")
    gpu_model: str | None = Field(None, description="e.g. NVIDIA H100; null: no GPU")
    gpu_memory_gib: float | None = Field(None, description="Memory of each GPU, GiB")
    efa_supported: bool = Field(False, description="Whether it has EFA interfaces")
    max_efa_interfaces: int = Field(0, description="EFA interfaces (resources.efa at most)")

    def brief(self) -> str:
        """`ml.p5.48xlarge (8x NVIDIA H100 80 GiB, EFA)`, for a summary."""
        notes = []
        if self.gpu_count and self.gpu_model:
            notes.append(f"{self.gpu_count}x {self.gpu_model} {self.gpu_memory_gib or 0:g} GiB")
        elif self.vcpus:
            notes.append(f"{self.vcpus} vCPUs")
        if self.efa_supported:
            notes.append("EFA")
        return f"{self.instance_type} ({', '.join(notes)})" if notes else self.instance_type


class Quota(Passthrough):
    instance_type: str = Field(description="HyperPod instance type")
    quota_name: str | None = Field(None, description="The Service Quotas name")
    quota_code: str | None = Field(None, description="The Service Quotas code")
    value: float = Field(description="Instances of this type the account may run in clusters")
    in_use: int = Field(0, description="Instances of this type in clusters now")
    available: int = Field(0, description="value - in_use")
    adjustable: bool | None = Field(None, description="Whether an increase can be requested")


class TrainingPlan(Passthrough):
    training_plan_arn: str | None = Field(None, description="Its ARN")
    status: str | None = Field(None, description="e.g. Active, Scheduled, Expired")


class AccountCluster(Passthrough):
    kind: str = Field(description="eks or hyperpod")
    name: str = Field(description="Cluster name")
    arn: str | None = Field(None, description="Cluster ARN")
    status: str | None = Field(None, description="As AWS reports it")
    managed: bool = Field(description="Made by this control plane (tagged managed-by=hyperpilot)")
    importable: bool = Field(description="Not managed here: import_cluster can adopt it")


class ZoneList(Paged):
    region: str | None = Field(description="As asked; null: the control plane's")
    zones: list[Zone] = Field(description="This page, by zone id")


class InstanceTypeList(ToolResult):
    availability_zone_id: str | None = Field(description="The zone asked for; null: all")
    instance_types: list[InstanceTypeOffer] = Field(description="This page, by name")
    total: int = Field(description="Types offered in all")
    next_page_token: str | None = Field(description="Pass as page_token; null: the last page")


class QuotaResult(ToolResult):
    quota: Quota = Field(description="The quota and its use")


class TrainingPlanList(Paged):
    training_plans: list[TrainingPlan] = Field(description="This page, by ARN")


class AccountClusterList(Paged):
    clusters: list[AccountCluster] = Field(description="This page, by kind and name")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="inspect", rest="GET /api/v1/inspect/availability-zones")
    async def list_availability_zones(
        region: Region = None, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> ZoneList:
        """The region's Availability Zones and their zone ids (what cluster specs take). Offer
        these to the user as where capacity lives."""
        rows = await gateway.get("/api/v1/inspect/availability-zones", {"region": region})
        every = [Zone.model_validate(r) for r in rows]
        zones, next_token = page_of(every, lambda z: z.zone_id, limit, page_token)
        summary = (
            f"{count(len(every), 'zone')}"
            f"{page_note(len(zones), len(every), page_token, next_token)}: "
            + named([f"{z.zone_id} ({z.zone_name})" for z in zones])
        )
        return ZoneList(
            summary=summary,
            region=region,
            zones=zones,
            total=len(every),
            next_page_token=next_token,
        )

    @server.read_tool(area="inspect", rest="GET /api/v1/inspect/instance-types")
    async def list_instance_types(
        availability_zone_id: Annotated[
            str | None,
            Field(
                pattern=ZONE_ID_PATTERN,
                description="Only types offered in this zone id (e.g. use1-az2); all zones if omitted",
            ),
        ] = None,
        region: Region = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_TYPES, description="At most this many types per page")
        ] = DEFAULT_TYPES,
        page_token: PageToken = None,
    ) -> InstanceTypeList:
        """HyperPod instance types offered in the region or one zone, with the zone ids offering
        each, a page at a time. Offer only these to the user."""
        rows = await gateway.get(
            "/api/v1/inspect/instance-types",
            {"availability_zone_id": availability_zone_id, "region": region},
        )
        offers = [InstanceTypeOffer.model_validate(r) for r in rows]
        page, next_token = page_of(offers, lambda o: o.instance_type, limit, page_token)
        where = f" in {availability_zone_id}" if availability_zone_id else ""
        shown = ", ".join(o.brief() for o in page[:12])
        more = f" and {len(page) - 12} more" if len(page) > 12 else ""
        summary = (
            f"{count(len(offers), 'instance type')} offered{where}"
            f"{page_note(len(page), len(offers), page_token, next_token)}: {shown}{more}."
        )
        return InstanceTypeList(
            summary=summary,
            availability_zone_id=availability_zone_id,
            instance_types=page,
            total=len(offers),
            next_page_token=next_token,
        )

    @server.read_tool(area="inspect", rest="GET /api/v1/inspect/quotas")
    async def get_instance_type_quota(
        instance_type: Annotated[
            str,
            Field(
                pattern=ML_INSTANCE_PATTERN,
                description="HyperPod instance type, e.g. ml.g5.8xlarge",
            ),
        ],
        region: Region = None,
    ) -> QuotaResult:
        """The account's cluster-usage quota of an instance type, how many are in use and how
        many are still available. Check it before asking for a count."""
        row = await gateway.get(
            "/api/v1/inspect/quotas", {"instance_type": instance_type, "region": region}
        )
        quota = Quota.model_validate(row)
        summary = (
            f"{instance_type}: quota {quota.value:g}, in use {quota.in_use},"
            f" available {quota.available}."
        )
        return QuotaResult(summary=summary, quota=quota)

    @server.read_tool(area="inspect", rest="GET /api/v1/inspect/training-plans")
    async def list_training_plans(
        region: Region = None, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> TrainingPlanList:
        """List SageMaker training plans with their reserved capacity (instance type, count,
        zone): the capacity behind capacity_type training-plan."""
        rows = await gateway.get("/api/v1/inspect/training-plans", {"region": region})
        every = [TrainingPlan.model_validate(r) for r in rows]
        plans, next_token = page_of(every, lambda p: p.training_plan_arn or "", limit, page_token)
        note = page_note(len(plans), len(every), page_token, next_token)
        return TrainingPlanList(
            summary=f"{count(len(every), 'training plan')}{note}.",
            training_plans=plans,
            total=len(every),
            next_page_token=next_token,
        )

    @server.read_tool(area="inspect", rest="GET /api/v1/inspect/clusters")
    async def list_account_clusters(
        region: Region = None, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> AccountClusterList:
        """List the EKS and HyperPod clusters in the AWS account: managed ones (made here) and
        importable ones (made elsewhere; import_cluster adopts them)."""
        rows = await gateway.get("/api/v1/inspect/clusters", {"region": region})
        every = [AccountCluster.model_validate(r) for r in rows]
        clusters, next_token = page_of(every, lambda c: f"{c.kind}/{c.name}", limit, page_token)
        importable = sum(1 for c in every if c.importable)
        summary = (
            f"{count(len(every), 'cluster')} in the account, {importable} importable"
            f"{page_note(len(clusters), len(every), page_token, next_token)}."
        )
        return AccountClusterList(
            summary=summary, clusters=clusters, total=len(every), next_page_token=next_token
        )
