"""Instance groups of a cluster: add, list, change (explicit diff), delete; software updates.

Every mutation accepts `?dry_run=true` and answers the plan cluster-svc computes from actual
state. Before accepting, the gateway asks cluster-svc for the rules that need actual state
(fixed capacity type and interface mode, a free name, the group limit, offerings, quotas,
training plans): a violation is a 422 naming the field, the rule and the way out; the 202 shows
the diff computed against the group's actual configuration.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway.accept import accept, replay
from gateway.accept import dry_run as answer_plan
from gateway.deps import AdminMutation, Mutation, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.models import ACCEPTED, READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    InstanceGroupChange,
    InstanceGroupCommand,
    NewInstanceGroup,
    SoftwareUpdateSpec,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["instance groups"],
    responses=READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
GroupNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
READY = ("active", "imported")


async def _cluster(pool: asyncpg.Pool, name: str) -> dict[str, Any]:
    """What every command needs of the cluster: its HyperPod cluster, region, resources."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    if row is None:
        raise ApiError(
            404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
        )
    if row["status"] not in READY:
        raise ApiError(
            409,
            "cluster_not_ready",
            f"cluster {name} is {row['status']}; instance groups change only on an active cluster",
            hint=f"wait for its operation (GET /api/v1/operations/{row['operation_id']})",
        )
    spec = row["spec"] or {}
    resources = row["resources"] if row["managed"] else {}
    hyperpod = (resources.get("hyperpod_cluster") or {}).get("cluster_name") or (
        spec.get("name") if row["managed"] else spec.get("hyperpod_cluster_name")
    )
    if not hyperpod:
        raise ApiError(
            409,
            "no_hyperpod_cluster",
            f"cluster {name} has no HyperPod cluster",
            hint="import the cluster again with hyperpod_cluster_name",
        )
    return {
        "cluster": name,
        "hyperpod_cluster": hyperpod,
        "region": row["region"],
        "resources": resources,
        "zone": spec.get("availability_zone_id") if row["managed"] else None,
    }


async def _check(
    request: Request, command: InstanceGroupCommand, dry: bool
) -> dict[str, Any] | None:
    """The live rules and plan; None when cluster-svc cannot answer now (the workflow's first
    stage checks the same rules)."""
    bus = request.app.state.bus
    try:
        answer = await query(
            bus,
            "cluster",
            "instance_group_check",
            {"type": type(command).__name__, "payload": command.model_dump(mode="json")},
        )
    except ApiError as exc:
        if exc.status in (503, 504) and not dry:
            return None
        raise
    problems = answer.get("problems") or []
    if problems:
        raise ApiError(
            422,
            "validation_error",
            "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5]),
            fields=problems,
        )
    plan: dict[str, Any] | None = answer.get("plan")
    return plan


async def _submit(
    request: Request, mutation: Mutation, command: InstanceGroupCommand, *, body: dict[str, Any]
) -> JSONResponse:
    plan = await _check(request, command, mutation.dry_run)
    if mutation.dry_run:
        return await answer_plan(request.app.state.bus, command)
    accepted = await accept(
        mutation,
        command,
        target_type="cluster",
        target_id=command.cluster,
        request=body,
    )
    if plan is None:
        return accepted
    answer = json.loads(bytes(accepted.body))
    answer["noop"] = plan["noop"]
    answer["diff"] = plan["diff"]
    return JSONResponse(
        answer, status_code=accepted.status_code, headers={"Location": answer["status_url"]}
    )


class InstanceGroupRead(BaseModel):
    name: str
    instance_type: str
    count: int
    status: str
    spec: dict[str, Any]
    updated_at: str


@router.get(
    "/{name}/instance-groups",
    response_model=None,
    responses=ok(list[InstanceGroupRead]),
    summary="The cluster's instance groups (from the read model)",
)
async def list_instance_groups(
    name: ClusterNamePath, pool: Pool, _: Viewer
) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        known = await conn.fetchval("SELECT 1 FROM clusters WHERE name = $1", name)
        if known is None:
            raise ApiError(
                404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
            )
        rows = await conn.fetch(
            "SELECT * FROM instance_groups WHERE cluster = $1 ORDER BY name", name
        )
    return [
        {
            "name": r["name"],
            "instance_type": r["instance_type"],
            "count": r["count"],
            "status": r["status"],
            "spec": r["spec"],
            "updated_at": r["updated_at"].isoformat(),
        }
        for r in rows
    ]


@router.post(
    "/{name}/instance-groups",
    status_code=202,
    responses=ACCEPTED,
    summary="Add an instance group (type, count, zone, capacity, EFA mode, storage, checks, "
    "labels/taints, lifecycle) in one operation",
)
async def add_instance_group(
    name: ClusterNamePath,
    body: NewInstanceGroup,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    requested = body.model_dump(mode="json", exclude_unset=True)
    replayed = await replay(
        mutation, AddInstanceGroup, target_type="cluster", target_id=name, request=requested
    )
    if replayed is not None:
        return replayed
    cluster = await _cluster(mutation.pool, name)
    command = AddInstanceGroup(
        cluster=name,
        hyperpod_cluster=cluster["hyperpod_cluster"],
        region=cluster["region"],
        resources=cluster["resources"],
        group=body,
        cluster_zone_id=cluster["zone"],
    )
    return await _submit(
        request,
        mutation,
        command,
        body=requested,
    )


@router.patch(
    "/{name}/instance-groups/{group}",
    status_code=202,
    responses=ACCEPTED,
    summary="Change an instance group: send only the fields to change (count, min_count, EBS "
    "size, deep health checks, labels, taints)",
)
async def update_instance_group(
    name: ClusterNamePath,
    group: GroupNamePath,
    body: InstanceGroupChange,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    requested = body.model_dump(mode="json", exclude_unset=True)
    replayed = await replay(
        mutation, UpdateInstanceGroup, target_type="cluster", target_id=name, request=requested
    )
    if replayed is not None:
        return replayed
    cluster = await _cluster(mutation.pool, name)
    command = UpdateInstanceGroup(
        cluster=name,
        hyperpod_cluster=cluster["hyperpod_cluster"],
        region=cluster["region"],
        group=group,
        change=body,
    )
    return await _submit(
        request,
        mutation,
        command,
        body=requested,
    )


@router.delete(
    "/{name}/instance-groups/{group}",
    status_code=202,
    responses=ACCEPTED,
    summary="Delete an instance group (its nodes are terminated)",
)
async def delete_instance_group(
    name: ClusterNamePath,
    group: GroupNamePath,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    requested = {"group": group}
    replayed = await replay(
        mutation, DeleteInstanceGroup, target_type="cluster", target_id=name, request=requested
    )
    if replayed is not None:
        return replayed
    cluster = await _cluster(mutation.pool, name)
    command = DeleteInstanceGroup(
        cluster=name,
        hyperpod_cluster=cluster["hyperpod_cluster"],
        region=cluster["region"],
        group=group,
    )
    return await _submit(
        request,
        mutation,
        command,
        body=requested,
    )


@router.post(
    "/{name}/software-update",
    status_code=202,
    responses=ACCEPTED,
    summary="Update the nodes' software (UpdateClusterSoftware) with a rolling deployment",
)
async def update_software(
    name: ClusterNamePath,
    body: SoftwareUpdateSpec,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    requested = body.model_dump(mode="json", exclude_unset=True)
    replayed = await replay(
        mutation, UpdateClusterSoftware, target_type="cluster", target_id=name, request=requested
    )
    if replayed is not None:
        return replayed
    cluster = await _cluster(mutation.pool, name)
    command = UpdateClusterSoftware(
        cluster=name,
        hyperpod_cluster=cluster["hyperpod_cluster"],
        region=cluster["region"],
        spec=body,
    )
    return await _submit(
        request,
        mutation,
        command,
        body=requested,
    )
