"""A cluster's dependencies: the declared component set, what is installed, reconcile on demand."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway import records
from gateway.accept import plan_then_accept
from gateway.deps import OperatorMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.routes.clusters import ClusterNamePath
from gateway.routes.models import ACCEPTED, READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import ClusterSpec
from shared.contracts.dependencies import ReconcileDependencies

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters/{name}/dependencies",
    tags=["dependencies"],
    responses=READ_ERRORS,
)


class ComponentRead(BaseModel):
    name: str
    version: str
    status: str
    updated_at: str


@router.get(
    "",
    response_model=None,
    responses=ok(list[ComponentRead]),
    summary="Each dependency component with its version and status",
)
async def list_components(name: ClusterNamePath, pool: Pool, _: Viewer) -> list[dict[str, Any]]:
    await records.cluster(pool, name)
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT * FROM cluster_components WHERE cluster = $1 ORDER BY component", name
        )
    return [
        {
            "name": r["component"],
            "version": r["version"],
            "status": r["status"],
            "updated_at": r["updated_at"].isoformat(),
        }
        for r in rows
    ]


@router.post(
    "/reconcile",
    status_code=202,
    responses=ACCEPTED,
    summary="Install or upgrade what differs from the declared set (a second run is a noop)",
)
async def reconcile(
    name: ClusterNamePath,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:

    async def build() -> ReconcileDependencies:
        cluster = await records.cluster(mutation.pool, name)
        if not cluster.managed:
            raise ApiError(
                422,
                "not_managed",
                f"cluster {name} was imported: its dependencies are managed by its owner",
                hint=f"to have Hyperpilot add and manage what HyperPod needs, forget it here"
                f" (DELETE /api/v1/clusters/{name}: nothing in AWS changes), then adopt it"
                " (POST /api/v1/clusters/adopt, dry run first)",
            )
        if cluster.status != "active":
            raise ApiError(
                409,
                "cluster_not_ready",
                f"cluster {name} is {cluster.status}",
                hint="wait until it is active",
            )
        return ReconcileDependencies(
            spec=ClusterSpec.from_payload(cluster.spec),
            region=cluster.region,
            bucket=str(cluster.resources.get("bucket", {}).get("bucket", "")),
            resources=cluster.resources,
        )

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        ReconcileDependencies,
        build,
        target_type="cluster",
        target_id=name,
        requested={"reconcile": True},
        verdict=False,
    )
