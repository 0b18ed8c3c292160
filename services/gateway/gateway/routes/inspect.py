"""Inspect before create: zones, instance types offered per zone, quotas, training plans, clusters.

Answers come from cluster-svc (live AWS state) over NATS request/reply.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from gateway.deps import Viewer
from gateway.queries import query
from gateway.regions import served_region
from gateway.routes.models import LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import ML_INSTANCE_PATTERN, ZONE_ID_PATTERN

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/inspect",
    tags=["inspect"],
    responses=LIVE_READ_ERRORS,
)


def _region(request: Request, region: str | None) -> str:
    return served_region(request, region)


Region = Annotated[str | None, Query(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region")]


@router.get("/regions", summary="The regions this control plane manages clusters in")
async def regions(request: Request, _: Viewer) -> dict[str, Any]:
    served: tuple[str, ...] = request.app.state.settings.served_regions
    return {"default": served[0], "regions": list(served)}


@router.get("/availability-zones", summary="Availability Zones with their zone ids")
async def availability_zones(request: Request, _: Viewer, region: Region = None) -> Any:
    return await query(
        request.app.state.bus, "cluster", "availability_zones", {"region": _region(request, region)}
    )


@router.get("/instance-types", summary="HyperPod instance types offered, per zone")
async def instance_types(
    request: Request,
    _: Viewer,
    region: Region = None,
    availability_zone_id: Annotated[str | None, Query(pattern=ZONE_ID_PATTERN)] = None,
) -> Any:
    return await query(
        request.app.state.bus,
        "cluster",
        "instance_types",
        {"region": _region(request, region), "availability_zone_id": availability_zone_id},
    )


@router.get("/quotas", summary="Cluster-usage quota of an instance type")
async def quotas(
    request: Request,
    _: Viewer,
    instance_type: Annotated[str, Query(pattern=ML_INSTANCE_PATTERN)],
    region: Region = None,
) -> Any:
    return await query(
        request.app.state.bus,
        "cluster",
        "quotas",
        {"region": _region(request, region), "instance_type": instance_type},
    )


@router.get("/training-plans", summary="Training plans and their reserved capacity")
async def training_plans(request: Request, _: Viewer, region: Region = None) -> Any:
    return await query(
        request.app.state.bus, "cluster", "training_plans", {"region": _region(request, region)}
    )


@router.get("/clusters", summary="EKS and HyperPod clusters in the account: managed and importable")
async def clusters(request: Request, _: Viewer, region: Region = None) -> Any:
    data: Any = await query(
        request.app.state.bus, "cluster", "clusters", {"region": _region(request, region)}
    )
    return data


def problems_to_fields(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "field": p.get("field", "body"),
            "rule": p.get("rule", "live_state"),
            "message": p.get("message", ""),
            "hint": p.get("hint", ""),
        }
        for p in problems
    ]
