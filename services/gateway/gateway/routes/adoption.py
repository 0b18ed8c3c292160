"""Adopt an existing EKS cluster: inspect it (read-only), plan (`?dry_run=true`), adopt.

The inspection and the plan say what the cluster has (version, networking, node groups,
add-ons, access entries, OIDC) and what HyperPod still needs; the adoption adds only that, and
the cluster's record says what was added, which is all a later delete removes.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field, field_validator

from gateway.accept import plan_then_accept
from gateway.deps import OperatorMutation, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.regions import served_region
from gateway.routes.clusters import _check_region, _get_cluster, _reserve, default_bucket
from gateway.routes.models import LIVE_READ_ERRORS, accepted
from gateway.routing import PrefixedRoute
from shared.contracts.adoption import AdoptCluster, AdoptSpec
from shared.contracts.cluster import KUBERNETES_VERSIONS, NAME_PATTERN
from shared.regions import REGION_PATTERN

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1", responses=LIVE_READ_ERRORS)


class ClusterAdopt(AdoptSpec):
    region: str | None = Field(
        None,
        pattern=REGION_PATTERN,
        description="AWS region; the control plane's region if omitted",
    )

    _region = field_validator("region")(_check_region)


EksName = Annotated[
    str,
    Query(min_length=1, max_length=63, pattern=NAME_PATTERN, description="The EKS cluster"),
]
Region = Annotated[str | None, Query(pattern=REGION_PATTERN, description="AWS region")]


@router.get(
    "/inspect/adoption",
    tags=["inspect"],
    summary="Inspect an existing EKS cluster for adoption (read-only): what it has, what"
    " HyperPod still needs, and what stops it",
)
async def inspect_adoption(
    request: Request, _: Viewer, eks_cluster_name: EksName, region: Region = None
) -> Any:
    return await query(
        request.app.state.bus,
        "cluster",
        "adoption",
        {
            "eks_cluster_name": eks_cluster_name,
            "region": served_region(request, region),
        },
    )


@router.post(
    "/clusters/adopt",
    tags=["clusters"],
    status_code=202,
    responses=accepted(_get_cluster("$request.body#/eks_cluster_name")),
    summary="Adopt an existing EKS cluster: add the access entries, dependencies, a HyperPod"
    " cluster and its instance groups (dry run first)",
)
async def adopt_cluster(
    body: ClusterAdopt, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    region = served_region(request, body.region)
    adopt = AdoptSpec.model_validate(body.model_dump(exclude={"region"}))
    name = adopt.eks_cluster_name
    bus = request.app.state.bus
    bucket = adopt.bucket or default_bucket(name)
    built: list[AdoptCluster] = []

    async def build() -> AdoptCluster:
        found = await query(
            bus, "cluster", "adoption", {"eks_cluster_name": name, "region": region}
        )
        blockers = found.get("blockers") or []
        if blockers and not mutation.dry_run:
            raise ApiError(
                422,
                "not_adoptable",
                "; ".join(b["message"] for b in blockers),
                hint="; ".join(b["hint"] for b in blockers),
                fields=[
                    {
                        "field": b["field"],
                        "rule": b["rule"],
                        "message": b["message"],
                        "hint": b["hint"],
                    }
                    for b in blockers
                ],
            )
        version = str(found["cluster"]["version"])
        if version not in KUBERNETES_VERSIONS:
            # Only a dry run gets here (a blocker): its plan names the version problem.
            version = KUBERNETES_VERSIONS[-1]
        command = AdoptCluster(
            spec=adopt.cluster_spec(version, bucket), region=region, bucket=bucket
        )
        built.append(command)
        return command

    async def reserve(conn: asyncpg.Connection, operation_id: uuid.UUID) -> None:
        # The row holds the HyperPod part as a create's spec: what reconcile and the
        # instance-group routes read.
        await _reserve(name, region, built[-1].spec, managed=True)(conn, operation_id)

    return await plan_then_accept(
        bus,
        mutation,
        AdoptCluster,
        build,
        target_type="cluster",
        target_id=name,
        requested=body.model_dump(mode="json", exclude_unset=True),
        verdict=False,
        reserve=reserve,
    )
