"""List prices and training plans: the price table (read from the AWS Price List API by
cluster-svc, cached with its date), SageMaker's training-plan offerings, and buying one.

Buying is an admin's mutation (it spends money): `?dry_run=true` answers the offering and its
upfront fee; the purchase must confirm that fee (`confirm_upfront_fee`) or it is refused on
that field. A bought plan is used for an instance group with `capacity_type: training-plan` and
its `training_plan_arn` (POST /api/v1/clusters/{name}/instance-groups).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.accept import plan_then_accept
from gateway.deps import AdminMutation, Viewer
from gateway.errors import field_error
from gateway.queries import query
from gateway.regions import served_region
from gateway.routes.models import LIVE_READ_ERRORS, accepted
from gateway.routing import PrefixedRoute
from shared.contracts.training_plans import (
    OFFERING_PATTERN,
    PLAN_NAME_PATTERN,
    BuyTrainingPlan,
    OfferingSearch,
    check_fee,
)
from shared.regions import REGION_PATTERN

Region = Annotated[
    str | None,
    Query(pattern=REGION_PATTERN, description="AWS region (default: the control plane's)"),
]

router = APIRouter(
    route_class=PrefixedRoute, prefix="/api/v1", tags=["cost"], responses=LIVE_READ_ERRORS
)


class PricedType(BaseModel):
    instance_type: str
    price_per_hour: float


class LustrePrice(BaseModel):
    deployment_type: str
    throughput_per_tib: int
    price: float = Field(description="USD per GB-month")


class PriceTableRead(BaseModel):
    prices: dict[str, Any] = Field(description="Source, as_of (publication date), region")
    instance_types: list[PricedType]
    nat_gateway_per_hour: float | None
    fsx_lustre_per_gb_month: list[LustrePrice]


class OfferingRead(BaseModel):
    offering_id: str
    target_resources: list[str]
    instance_type: str | None
    instance_count: int
    availability_zone: str | None
    start_time: str | None
    end_time: str | None
    duration_hours: int
    upfront_fee: str = Field(description="USD, charged when bought")
    currency: str
    reserved_capacity: list[dict[str, Any]]


@router.get(
    "/prices",
    response_model=PriceTableRead,
    summary="The list price table (AWS Price List API) with its source and date",
)
async def prices(request: Request, _: Viewer, region: Region = None) -> Any:
    return await query(
        request.app.state.bus, "cluster", "prices", {"region": served_region(request, region)}
    )


@router.get(
    "/training-plans/offerings",
    response_model=list[OfferingRead],
    summary="Training plan offerings for an instance type, count and duration",
)
async def offerings(request: Request, _: Viewer, search: Annotated[OfferingSearch, Query()]) -> Any:
    region = served_region(request, search.region)
    return await query(
        request.app.state.bus,
        "cluster",
        "training_plan_offerings",
        {"search": {**search.model_dump(mode="json"), "region": region}, "region": region},
    )


class PlanPurchase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=PLAN_NAME_PATTERN, description="The new plan's name")
    offering_id: str = Field(pattern=OFFERING_PATTERN, description="From the search's answer")
    search: OfferingSearch = Field(description="The search that answered the offering")
    confirm_upfront_fee: str | None = Field(
        None,
        description="The offering's upfront fee (USD) as the dry run shows it; required to buy",
    )

    _fee = field_validator("confirm_upfront_fee")(check_fee)


@router.post(
    "/training-plans",
    status_code=202,
    responses=accepted(),
    summary="Buy a training plan offering (dry run first: it shows the fee to confirm)",
)
async def buy(body: PlanPurchase, request: Request, mutation: AdminMutation) -> JSONResponse:
    region = served_region(request, body.search.region, "search.region")
    if body.confirm_upfront_fee is None and not mutation.dry_run:
        raise field_error(
            "confirm_upfront_fee",
            "required",
            "a purchase confirms the offering's upfront fee",
            "send the request with ?dry_run=true to see the fee, then send it here",
        )

    async def build() -> BuyTrainingPlan:
        return BuyTrainingPlan(
            name=body.name,
            offering_id=body.offering_id,
            search=body.search.model_copy(update={"region": region}),
            confirm_upfront_fee=body.confirm_upfront_fee,
            region=region,
        )

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        BuyTrainingPlan,
        build,
        target_type="training_plan",
        target_id=body.name,
        requested=body.model_dump(mode="json"),
    )
