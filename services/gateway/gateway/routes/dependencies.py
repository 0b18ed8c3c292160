"""A cluster's dependencies: the declared component set, what is installed, reconcile on demand."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway.accept import accept, replay
from gateway.accept import dry_run as dry_run_plan
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
    async with pool.acquire() as conn:
        if await conn.fetchval("SELECT 1 FROM clusters WHERE name = $1", name) is None:
            raise ApiError(
                404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
            )
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
    replayed = await replay(
        mutation,
        ReconcileDependencies,
        target_type="cluster",
        target_id=name,
        request={"reconcile": True},
    )
    if replayed is not None:
        return replayed
    async with mutation.pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    if row is None:
        raise ApiError(
            404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
        )
    if not row["managed"]:
        raise ApiError(
            422,
            "not_managed",
            f"cluster {name} was imported: its dependencies are managed by its owner",
            hint="reconcile clusters Hyperpilot created",
        )
    if row["status"] not in ("active",):
        raise ApiError(
            409,
            "cluster_not_ready",
            f"cluster {name} is {row['status']}",
            hint="wait until it is active",
        )
    resources = row["resources"]
    command = ReconcileDependencies(
        spec=ClusterSpec.from_payload(row["spec"]),
        region=row["region"],
        bucket=str(resources.get("bucket", {}).get("bucket", "")),
        resources=resources,
    )
    if mutation.dry_run:
        return await dry_run_plan(request.app.state.bus, command)
    return await accept(
        mutation,
        command,
        target_type="cluster",
        target_id=name,
        request={"reconcile": True},
    )
