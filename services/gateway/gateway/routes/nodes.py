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
import orjson
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from gateway.accept import accept, replay
from gateway.accept import dry_run as answer_plan
from gateway.deps import AdminMutation, Mutation, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.nodes import (
    NODE_ID_PATTERN,
    DeleteNodes,
    HealthCheckRequest,
    NodeCommand,
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
_RULES = {"NodeNotFound": "node_ids", "InstanceGroupNotFound": "instance_groups"}
_IN_MESSAGE = re.compile(r"\bi-[0-9a-f]{8,32}\b")


class ClusterRefs:
    def __init__(self, row: asyncpg.Record) -> None:
        self.name: str = row["name"]
        self.region: str = row["region"]
        self.hyperpod_cluster: str = row["hyperpod_cluster_arn"]
        self.eks_cluster: str = str(row["eks_cluster_arn"] or "").rsplit("/", 1)[-1]

    def query(self, **extra: Any) -> dict[str, Any]:
        return {
            "cluster": self.name,
            "hyperpod_cluster": self.hyperpod_cluster,
            "eks_cluster": self.eks_cluster,
            **extra,
        }

    def command(self) -> dict[str, str]:
        return {
            "cluster": self.name,
            "region": self.region,
            "hyperpod_cluster": self.hyperpod_cluster,
        }


async def _cluster(pool: asyncpg.Pool, name: str) -> ClusterRefs:
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    if row is None:
        raise ApiError(
            404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
        )
    if row["status"] not in ("active", "imported") or not row["hyperpod_cluster_arn"]:
        raise ApiError(
            409,
            "cluster_not_ready",
            f"cluster {name} is {row['status']} and has "
            + ("a" if row["hyperpod_cluster_arn"] else "no")
            + " HyperPod cluster; nodes are managed on an active cluster with HyperPod",
            hint="wait for its create operation to finish (GET /api/v1/clusters/{name})",
        )
    return ClusterRefs(row)


def _rule_error(error: ApiError) -> ApiError:
    """A plan error the caller can fix, as a 422 on the field it is about."""
    field = _RULES[error.code]
    rule = "node_exists" if field == "node_ids" else "instance_group_exists"
    hint = error.hint or "list the nodes with GET /api/v1/clusters/{name}/nodes"
    fields = [
        {"field": field, "rule": rule, "message": error.message, "hint": hint, "value": node_id}
        for node_id in _IN_MESSAGE.findall(error.message)
    ] or [{"field": field, "rule": rule, "message": error.message, "hint": hint}]
    return ApiError(422, "validation_error", f"{field}: {error.message}", fields=fields)


async def _plan(request: Request, command: NodeCommand) -> dict[str, Any] | None:
    """The live plan, or None when cluster-svc cannot be asked (the workflow checks again)."""
    bus = request.app.state.bus
    if not bus.connected:
        return None
    try:
        plan: dict[str, Any] = await query(
            bus,
            "cluster",
            "plan",
            {"type": type(command).__name__, "payload": command.model_dump(mode="json")},
        )
    except ApiError as exc:
        if exc.code in _RULES:
            raise _rule_error(exc) from exc
        if exc.status in (503, 504):
            return None
        raise
    return plan


async def _submit(
    request: Request, mutation: Mutation, command: NodeCommand, request_body: dict[str, Any]
) -> JSONResponse:
    if mutation.dry_run:
        try:
            return await answer_plan(request.app.state.bus, command)
        except ApiError as exc:
            if exc.code in _RULES:
                raise _rule_error(exc) from exc
            raise
    replayed = await replay(
        mutation,
        type(command),
        target_type="cluster",
        target_id=str(command.cluster),
        request=request_body,
    )
    if replayed is not None:
        return replayed
    plan = await _plan(request, command)
    accepted = await accept(
        mutation,
        command,
        target_type="cluster",
        target_id=str(command.cluster),
        request=request_body,
    )
    if plan is None:
        return accepted
    body = orjson.loads(bytes(accepted.body))
    body.update({"noop": plan["noop"], "diff": plan["diff"], "notes": plan["notes"]})
    return JSONResponse(
        body, status_code=202, headers={"Location": accepted.headers.get("Location", "")}
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
    recorded last when cluster-svc cannot answer (`observed_at`, `stale_because`)."""

    cluster: str
    source: Literal["live", "recorded"]
    summary: dict[str, int]
    nodes: list[NodeView]
    node_recovery: str | None = None
    kubernetes_readable: bool | None = None
    observed_at: str | None = None
    stale_because: str | None = None


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
) -> dict[str, Any]:
    refs = await _cluster(pool, name)
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus, "cluster", "nodes", refs.query()
        )
        answer["source"] = "live"
    except ApiError as exc:
        if exc.status not in (503, 504):
            raise
        answer = await _recorded(pool, name, exc)
    if health is not None:
        answer["nodes"] = [n for n in answer["nodes"] if n["health"] == health]
    return answer


async def _recorded(pool: asyncpg.Pool, name: str, cause: ApiError) -> dict[str, Any]:
    """cluster-svc cannot answer: what the node watcher recorded last, marked as such."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT view FROM cluster_nodes WHERE cluster = $1 ORDER BY instance_group, node_id",
            name,
        )
        observed = await conn.fetchval(
            "SELECT observed_at FROM cluster_node_watch WHERE cluster = $1", name
        )
    views = [r["view"] for r in rows]
    counts: dict[str, int] = {}
    for view in views:
        counts[view["health"]] = counts.get(view["health"], 0) + 1
    return {
        "cluster": name,
        "source": "recorded",
        "observed_at": observed.isoformat() if observed else None,
        "stale_because": cause.message,
        "summary": counts,
        "nodes": views,
    }


@router.get(
    "/{name}/nodes/{node_id}",
    response_model=None,
    responses=ok(NodeDetail),
    summary="One node: its health view, HyperPod's details and its recent HyperPod events",
)
async def get_node(
    name: ClusterNamePath, node_id: NodeIdPath, request: Request, pool: Pool, _: Viewer
) -> dict[str, Any]:
    refs = await _cluster(pool, name)
    found: dict[str, Any] | None = await query(
        request.app.state.bus, "cluster", "node", refs.query(node_id=node_id)
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
    refs = await _cluster(mutation.pool, name)
    command = RebootNodes(**refs.command(), node_ids=body.node_ids)
    return await _submit(request, mutation, command, body.model_dump(mode="json"))


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
    refs = await _cluster(mutation.pool, name)
    command = ReplaceNodes(**refs.command(), node_ids=body.node_ids)
    return await _submit(request, mutation, command, body.model_dump(mode="json"))


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
    refs = await _cluster(mutation.pool, name)
    command = DeleteNodes(**refs.command(), node_ids=body.node_ids)
    return await _submit(request, mutation, command, body.model_dump(mode="json"))


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
    refs = await _cluster(mutation.pool, name)
    command = StartDeepHealthCheck(
        **refs.command(),
        node_ids=body.node_ids,
        instance_groups=body.instance_groups,
        checks=body.checks,
    )
    return await _submit(
        request, mutation, command, body.model_dump(mode="json", exclude_unset=True)
    )


# ---- node recovery -------------------------------------------------------------------------


async def _node_recovery(
    name: str, body: NodeRecoveryChange, request: Request, mutation: Mutation
) -> JSONResponse:
    refs = await _cluster(mutation.pool, name)
    command = SetNodeRecovery(**refs.command(), mode=body.mode)
    return await _submit(
        request, mutation, command, body.model_dump(mode="json", exclude_unset=True)
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
    return await _node_recovery(name, body, request, mutation)


@router.patch(
    "/{name}/node-recovery",
    status_code=202,
    responses=ACCEPTED,
    summary="Set node recovery (same as PUT: the body has one field)",
)
async def patch_node_recovery(
    name: ClusterNamePath,
    body: NodeRecoveryChange,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await _node_recovery(name, body, request, mutation)
