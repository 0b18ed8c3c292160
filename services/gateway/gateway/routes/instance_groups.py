"""Instance groups of a cluster: add, list, change (explicit diff), delete; software updates.

Every mutation accepts `?dry_run=true` and answers the plan cluster-svc computes from actual
state, in one round trip. The same plan is the verdict before accepting: the rules that need
actual state (fixed capacity type and interface mode, a free name, the group limit, offerings,
quotas, training plans) each refuse with a 422 naming the field, the rule and the way out; the
202 shows the diff computed against the group's actual configuration.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from gateway import pages, records
from gateway.accept import on_cluster, refusal_mapper
from gateway.deps import AdminMutation, OperatorMutation, Pool, Viewer
from gateway.records import HyperPodRefs
from gateway.routes.models import ACCEPTED, READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    InstanceGroupChange,
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


# The live rules (fixed fields, a free name, the group limit, offerings, quotas, training plans)
# are cluster-svc's plan: each broken one is a field of the 422, with its rule and way out.
_refusal = refusal_mapper()


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
    responses={**pages.paged(list[InstanceGroupRead]), **pages.BAD_TOKEN},
    summary="The cluster's instance groups (from the read model), by name, a page at a time",
)
async def list_instance_groups(
    name: ClusterNamePath,
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("instance-groups", page_token, 1)
    await records.cluster(pool, name)
    async with pool.acquire() as conn:
        rows, total = await records.instance_groups_page(
            conn, name, None if key is None else (key[0],), limit
        )
    page = pages.send(response, "instance-groups", rows, limit, total, lambda g: (g.name,))
    return [group.read() for group in page]


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
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        AddInstanceGroup,
        lambda c: _add(c.hyperpod(), body),
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )


def _add(refs: HyperPodRefs, group: NewInstanceGroup) -> AddInstanceGroup:
    return AddInstanceGroup(
        **refs.command(), resources=refs.resources, group=group, cluster_zone_id=refs.zone
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
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        UpdateInstanceGroup,
        lambda c: UpdateInstanceGroup(**c.hyperpod().command(), group=group, change=body),
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
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
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        DeleteInstanceGroup,
        lambda c: DeleteInstanceGroup(**c.hyperpod().command(), group=group),
        requested={"group": group},
        refusal=_refusal,
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
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        UpdateClusterSoftware,
        lambda c: UpdateClusterSoftware(**c.hyperpod().command(), spec=body),
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )
