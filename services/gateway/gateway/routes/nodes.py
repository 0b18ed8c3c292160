"""Nodes of a cluster: health (list, describe), reboot, replace, delete, deep health checks and
node recovery. Escalation order: investigate (GET) -> reboot -> replace (docs/node-operations.md).

Every mutation accepts `?dry_run=true` and answers the plan (the calls it would make) computed
by cluster-svc from live state with the same function the operation decides with; the 202 of a
real request carries that diff too. Unknown node ids and instance groups are 422s naming the
field and the way to find valid ones.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import asyncpg
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from gateway import records
from gateway.accept import on_cluster, refusal_mapper
from gateway.deps import AdminMutation, Mutation, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.nodes import (
    NODE_ID_PATTERN,
    DeleteNodes,
    HealthCheckRequest,
    NodeIds,
    NodeRecoveryChange,
    RebootNodes,
    ReplaceNodes,
    SetNodeRecovery,
    StartDeepHealthCheck,
)

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["nodes"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
NodeIdPath = Annotated[str, Path(pattern=NODE_ID_PATTERN)]
# Errors of the plan that are the caller's to fix: answered as 422 on the named field.
_refusal = refusal_mapper(
    rules={
        "NodeNotFound": ("node_ids", "node_exists"),
        "InstanceGroupNotFound": ("instance_groups", "instance_group_exists"),
    },
    hint="list the nodes with GET /api/v1/clusters/{name}/nodes",
    values=re.compile(r"\bi-[0-9a-f]{8,32}\b"),
)


# ---- reads ---------------------------------------------------------------------------------


class NodeView(BaseModel):
    """One node's health view, as cluster-svc joins it (cluster_svc.domain.nodes.health_view)."""

    model_config = ConfigDict(extra="allow")

    node_id: str
    logical_id: str | None
    instance_group: str
    instance_type: str
    instance_status: str
    instance_message: str | None
    launch_time: str | None
    hostname: str | None
    health: str
    reasons: list[str]
    next_step: str | None
    kubernetes: dict[str, Any] | None


class NodeList(BaseModel):
    """Live from cluster-svc (`node_recovery`, `kubernetes_readable`), or what the node watcher
    recorded last (`observed_at`; `stale_because` when cluster-svc could not answer). With
    `limit`, one page in (instance group, node id) order: `next_after` names the next page
    (null on the last), `total` counts every node the filter keeps, `summary` every node."""

    cluster: str
    source: Literal["live", "recorded"]
    summary: dict[str, int]
    nodes: list[NodeView]
    node_recovery: str | None = None
    kubernetes_readable: bool | None = None
    observed_at: str | None = None
    stale_because: str | None = None
    total: int | None = None
    next_after: str | None = None


# A page cursor: the last node of the page before, `<instance_group>/<node_id>`.
_AFTER = re.compile(r"^([a-zA-Z0-9](?:-*[a-zA-Z0-9]){0,62})/(i-[0-9a-f]{8,32})$")


def _after(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    match = _AFTER.match(value)
    if match is None:
        raise field_error(
            "after",
            "node_cursor",
            f"{value!r} is not a node cursor (<instance_group>/<node_id>)",
            "send the next_after of the page before, or leave after out for the first page",
        )
    return match.group(1), match.group(2)


def page_of(
    views: list[dict[str, Any]], after: tuple[str, str] | None, limit: int | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The page of `views` after the cursor, in (instance group, node id) order, and the next
    cursor (None on the last page)."""
    ordered = sorted(views, key=lambda v: (v["instance_group"], v["node_id"]))
    if after is not None:
        ordered = [v for v in ordered if (v["instance_group"], v["node_id"]) > after]
    if limit is None or len(ordered) <= limit:
        return ordered, None
    last = ordered[limit - 1]
    return ordered[:limit], f"{last['instance_group']}/{last['node_id']}"


class NodeDetail(NodeView):
    node_recovery: str | None
    kubernetes_readable: bool
    details: dict[str, Any]
    events: list[dict[str, Any]]


@router.get(
    "/{name}/nodes",
    response_model=None,
    responses=ok(NodeList),
    summary="Nodes with one health verdict each: HyperPod instance status + Kubernetes"
    " conditions + HyperPod health labels and taints, and the next step for unhealthy ones",
)
async def list_nodes(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    health: Annotated[
        str | None, Query(description="Only nodes with this health (e.g. unhealthy)")
    ] = None,
    source: Annotated[
        Literal["live", "recorded"],
        Query(
            description="live: read now through cluster-svc (AWS and Kubernetes calls);"
            " recorded: what the node watcher recorded last (no call; what a page of a large"
            " cluster reads)"
        ),
    ] = "live",
    limit: Annotated[
        int | None, Query(ge=1, le=500, description="At most this many nodes (one page)")
    ] = None,
    after: Annotated[
        str | None,
        Query(max_length=100, description="The page after this cursor: next_after of the last"),
    ] = None,
) -> dict[str, Any]:
    cursor = _after(after)
    if source == "recorded":
        await records.cluster(pool, name)  # 404 for a cluster that does not exist
        return await _recorded(pool, name, None, health=health, after=cursor, limit=limit)
    refs = await records.cluster(pool, name)
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus, "cluster", "nodes", refs.node_query()
        )
        answer["source"] = "live"
    except ApiError as exc:
        if exc.status not in (503, 504):
            raise
        return await _recorded(pool, name, exc, health=health, after=cursor, limit=limit)
    nodes = answer["nodes"]
    if health is not None:
        nodes = [n for n in nodes if n["health"] == health]
    answer["total"] = len(nodes)
    answer["nodes"], answer["next_after"] = page_of(nodes, cursor, limit)
    return answer


async def _recorded(
    pool: asyncpg.Pool,
    name: str,
    cause: ApiError | None,
    *,
    health: str | None,
    after: tuple[str, str] | None,
    limit: int | None,
) -> dict[str, Any]:
    """What the node watcher recorded last, a page at a time (index cluster_nodes_listed);
    with `cause`, marked as the answer of a cluster-svc that could not answer."""
    group, node = after if after is not None else ("", "")
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT view FROM cluster_nodes WHERE cluster = $1"
            " AND ($2::text IS NULL OR health = $2) AND (instance_group, node_id) > ($3, $4)"
            " ORDER BY instance_group, node_id LIMIT $5",
            name,
            health,
            group,
            node,
            None if limit is None else limit + 1,
        )
        counts = {
            r["health"]: r["n"]
            for r in await conn.fetch(
                "SELECT health, count(*) AS n FROM cluster_nodes WHERE cluster = $1"
                " GROUP BY health ORDER BY health",
                name,
            )
        }
        observed = await conn.fetchval(
            "SELECT observed_at FROM cluster_node_watch WHERE cluster = $1", name
        )
    views = [r["view"] for r in rows]
    page, next_after = page_of(views, None, limit)
    answer: dict[str, Any] = {
        "cluster": name,
        "source": "recorded",
        "observed_at": observed.isoformat() if observed else None,
        "summary": counts,
        "total": counts.get(health, 0) if health is not None else sum(counts.values()),
        "nodes": page,
        "next_after": next_after,
    }
    if cause is not None:
        answer["stale_because"] = cause.message
    return answer


@router.get(
    "/{name}/nodes/{node_id}",
    response_model=None,
    responses=ok(NodeDetail),
    summary="One node: its health view, HyperPod's details and its recent HyperPod events",
)
async def get_node(
    name: ClusterNamePath, node_id: NodeIdPath, request: Request, pool: Pool, _: Viewer
) -> dict[str, Any]:
    refs = await records.cluster(pool, name)
    found: dict[str, Any] | None = await query(
        request.app.state.bus, "cluster", "node", refs.node_query(node_id=node_id)
    )
    if found is None:
        raise ApiError(
            404,
            "not_found",
            f"cluster {name} has no node {node_id}",
            hint=f"list the nodes with GET /api/v1/clusters/{name}/nodes (a replaced node has a"
            " new id; the node events name it)",
        )
    return found


# ---- batch node operations -----------------------------------------------------------------


async def _on_nodes(
    request: Request,
    mutation: Mutation,
    name: str,
    kind: type[RebootNodes | ReplaceNodes | DeleteNodes],
    body: NodeIds,
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        kind,
        lambda c: kind(**c.nodes(), node_ids=body.node_ids),
        requested=body.model_dump(mode="json"),
        refusal=_refusal,
    )


@router.post(
    "/{name}/nodes/reboot",
    status_code=202,
    responses=ACCEPTED,
    summary="Reboot nodes (the first step after investigating); batches of 25, per-node results",
)
async def reboot_nodes(
    name: ClusterNamePath,
    body: NodeIds,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await _on_nodes(request, mutation, name, RebootNodes, body)


@router.post(
    "/{name}/nodes/replace",
    status_code=202,
    responses=ACCEPTED,
    summary="Replace nodes with new instances (when a reboot did not help); admin only",
)
async def replace_nodes(
    name: ClusterNamePath,
    body: NodeIds,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    return await _on_nodes(request, mutation, name, ReplaceNodes, body)


@router.post(
    "/{name}/nodes/delete",
    status_code=202,
    responses=ACCEPTED,
    summary="Delete nodes (each lowers its instance group's count by one); admin only",
)
async def delete_nodes(
    name: ClusterNamePath,
    body: NodeIds,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    return await _on_nodes(request, mutation, name, DeleteNodes, body)


@router.post(
    "/{name}/nodes/health-checks",
    status_code=202,
    responses=ACCEPTED,
    summary="Start a deep health check (stress, EFA connectivity) on nodes, groups or the cluster",
)
async def start_health_check(
    name: ClusterNamePath,
    body: HealthCheckRequest,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        StartDeepHealthCheck,
        lambda c: StartDeepHealthCheck(
            **c.nodes(),
            node_ids=body.node_ids,
            instance_groups=body.instance_groups,
            checks=body.checks,
        ),
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )


# ---- node recovery -------------------------------------------------------------------------


@router.patch(
    "/{name}/node-recovery",
    name="patch_node_recovery",
    status_code=202,
    responses=ACCEPTED,
    summary="Set node recovery (same as PUT: the body has one field)",
)
@router.put(
    "/{name}/node-recovery",
    status_code=202,
    responses=ACCEPTED,
    summary="Set node recovery: Automatic (HyperPod reboots/replaces faulty nodes) or None;"
    " a no-op when the cluster already has that mode",
)
async def put_node_recovery(
    name: ClusterNamePath,
    body: NodeRecoveryChange,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        SetNodeRecovery,
        lambda c: SetNodeRecovery(**c.nodes(), mode=body.mode),
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )
