"""A cluster's dependencies: the declared component set, what is installed, reconcile on demand."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway import keyset, pages, records
from gateway.accept import plan_then_accept
from gateway.deps import OperatorMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.routes.clusters import ClusterNamePath
from gateway.routes.models import ACCEPTED, READ_ERRORS
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
    responses={**pages.paged(list[ComponentRead]), **pages.BAD_TOKEN},
    summary="Each dependency component with its version and status, by name, a page at a time",
)
async def list_components(
    name: ClusterNamePath,
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("dependencies", page_token, 1)
    await records.cluster(pool, name)
    async with pool.acquire() as conn:
        # The primary key (cluster, component) is the index.
        rows, total = await keyset.page(
            conn,
            "cluster_components",
            ("component",),
            key,
            limit,
            where="cluster = $1",
            args=(name,),
        )
    page = pages.send(response, "dependencies", rows, limit, total, lambda r: (r["component"],))
    return [
        {
            "name": r["component"],
            "version": r["version"],
            "status": r["status"],
            "updated_at": r["updated_at"].isoformat(),
        }
        for r in page
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
