"""List prices and training plans: the price table (AWS Price List API, with its date),
training plan offerings, and buying one (dry run first: it shows the upfront fee to confirm)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import OperationStarted, Passthrough, ToolResult
from mcp_svc.tools.common import DryRun, Region, RequestId, count, named, submit
from shared.contracts.training_plans import OFFERING_PATTERN, PLAN_NAME_PATTERN, OfferingSearch

PlanType = Annotated[
    str, Field(description="An instance type training plans reserve, e.g. ml.p5.48xlarge")
]
PlanCount = Annotated[int, Field(description="1, 2, 4, 8, 16, 32 or 64 instances")]
PlanDays = Annotated[int, Field(description="1 to 182 whole days")]
PlanTarget = Annotated[
    Literal["hyperpod-cluster", "training-job"],
    Field(description="What the plan is for (a HyperPod instance group: hyperpod-cluster)"),
]
FIELDS = (
    "instance_type",
    "instance_count",
    "duration_days",
    "target",
    "start_after",
    "end_before",
    "region",
)
StartAfter = Annotated[
    str | None, Field(description="Earliest start, ISO 8601, e.g. 2026-12-03T00:00:00Z")
]
EndBefore = Annotated[
    str | None, Field(description="Latest end, ISO 8601, e.g. 2026-12-20T00:00:00Z")
]


class Prices(ToolResult):
    prices: Passthrough = Field(description="As REST answers it: source, date, the prices")


class Offering(Passthrough):
    offering_id: str = Field(description="Pass it to buy_training_plan")
    availability_zone: str | None = Field(None, description="Where the capacity is")
    start_time: str | None = Field(None, description="ISO 8601")
    upfront_fee: str = Field(description="USD, charged when bought")


class Offerings(ToolResult):
    offerings: list[Offering] = Field(description="Best match first")


def _search(*asked: str | int | None) -> dict[str, Any]:
    """The REST search from the tool's arguments in FIELDS order (REST checks the rules)."""
    return {k: v for k, v in zip(FIELDS, asked, strict=True) if v is not None}


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="cost", rest="GET /api/v1/prices")
    async def get_prices(region: Region = None) -> Prices:
        """The list price table of a region: USD per hour of each instance type, NAT gateway
        and FSx for Lustre GB-month, with its source (AWS Price List API) and publication
        date."""
        raw = await gateway.get("/api/v1/prices", params={"region": region} if region else None)
        source = raw.get("prices") or {}
        summary = (
            f"{count(len(raw.get('instance_types') or []), 'instance type')} priced"
            f" ({source.get('region')}, {source.get('currency')}, published"
            f" {source.get('as_of')}): {source.get('source')}."
        )
        return Prices(summary=summary, prices=Passthrough.model_validate(raw))

    @server.read_tool(area="cost", rest="GET /api/v1/training-plans/offerings")
    async def search_training_plan_offerings(
        instance_type: PlanType,
        instance_count: PlanCount,
        duration_days: PlanDays,
        target: PlanTarget = "hyperpod-cluster",
        start_after: StartAfter = None,
        end_before: EndBefore = None,
        region: Region = None,
    ) -> Offerings:
        """Training plan offerings (reserved capacity) with their zone, window and upfront fee;
        buy one with buy_training_plan (dry run first)."""
        search = _search(
            instance_type, instance_count, duration_days, target, start_after, end_before, region
        )
        rows = await gateway.get("/api/v1/training-plans/offerings", params=search)
        found = [Offering.model_validate(r) for r in rows]
        summary = f"{count(len(found), 'offering')}" + (
            ": "
            + named(
                [
                    f"{o.offering_id} ({o.availability_zone}, ${float(o.upfront_fee):,.2f})"
                    for o in found
                ]
            )
            if found
            else "; widen the window or change the count or duration."
        )
        return Offerings(summary=summary, offerings=found)

    @server.write_tool(area="cost", rest="POST /api/v1/training-plans")
    async def buy_training_plan(
        name: Annotated[str, Field(pattern=PLAN_NAME_PATTERN, description="The new plan's name")],
        offering_id: Annotated[
            str,
            Field(pattern=OFFERING_PATTERN, description="From search_training_plan_offerings"),
        ],
        search: Annotated[
            OfferingSearch, Field(description="The search that showed the offering, as sent")
        ],
        confirm_upfront_fee: Annotated[
            str | None,
            Field(description="The upfront fee (USD) the dry run shows; a dry run needs none"),
        ] = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Buy a training plan offering (spends its upfront fee): the search it came from, the
        offering, and the fee the dry run shows. Use the plan's ARN for an instance group with
        capacity_type training-plan."""
        body: dict[str, Any] = {
            "name": name,
            "offering_id": offering_id,
            "search": search.model_dump(mode="json", exclude_none=True),
        }
        if confirm_upfront_fee is not None:
            body["confirm_upfront_fee"] = confirm_upfront_fee
        return await submit(
            gateway,
            tool="buy_training_plan",
            arguments={**body, "request_id": request_id},
            method="POST",
            path="/api/v1/training-plans",
            body=body,
            what=f"training plan {name}",
            dry_run=dry_run,
        )
