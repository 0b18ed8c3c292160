"""Capacity now: GPUs, EFA devices and memory total / allocated / free per node, instance group
and cluster, the nodes taking no new pods, the pods waiting for a node, and the list price per
hour; and the same summed over the fleet. Live from cluster-svc (qry.cluster.capacity,
qry.cluster.fleet-capacity); shapes in shared/contracts/capacity.py, described in
docs/capacity.md. Viewers may read them. The per-node part of a cluster's answer is one page
(`limit`, default 100; `after`, the `next_after` of the page before); its groups, totals and
`node_total` count every node.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from asyncpg import Connection
from fastapi import APIRouter, Path, Query, Request

from gateway import records
from gateway.deps import Pool, Viewer
from gateway.errors import field_error
from gateway.queries import query
from gateway.routes.models import LIVE_READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.contracts.capacity import (
    ClusterCapacity,
    FileSystemFacts,
    FleetCapacity,
    InfrastructureFacts,
)
from shared.contracts.cluster import NAME_PATTERN
from shared.storage_claims import cluster_claims

router = APIRouter(
    route_class=PrefixedRoute, prefix="/api/v1", tags=["capacity"], responses=LIVE_READ_ERRORS
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
NODE_PAGE = 100
# A page cursor: the last node of the page before, `<instance group>/<node name>` (no group:
# empty before the slash).
_AFTER = re.compile(r"^[a-zA-Z0-9-]{0,63}/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _eks_cluster(cluster: records.ClusterRecord) -> str:
    return cluster.feature_target().eks_cluster


async def _infrastructure(conn: Connection, cluster: records.ClusterRecord) -> dict[str, Any]:
    """What the cluster runs besides its nodes that is billed by the hour: the NAT gateway its
    create made, and the FSx for Lustre file systems its storage claims mount."""
    network = cluster.created_resources.get("network") or {}
    file_systems = [
        FileSystemFacts(
            claim=c.claim,
            file_system_id=c.file_system_id,
            source=c.source,
            capacity_gib=c.details.get("capacity_gib"),
            deployment_type=c.details.get("deployment_type"),
            throughput_per_tib=c.details.get("throughput_per_tib"),
        )
        for c in await cluster_claims(conn, cluster.name)
        if c.kind == "fsx" and c.file_system_id and c.status != "removing"
    ]
    facts = InfrastructureFacts(
        nat_gateways=1 if network.get("nat_gateway_id") else 0, file_systems=file_systems
    )
    return facts.model_dump(mode="json")


@router.get(
    "/clusters/{name}/capacity",
    response_model=None,
    responses=ok(ClusterCapacity),
    summary="GPUs, EFA and memory total / allocated / free per node and instance group, nodes"
    " taking no new pods, pending pods with what they ask for, and the list price per hour",
)
async def cluster_capacity(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    limit: Annotated[
        int, Query(ge=1, le=500, description="At most this many nodes in `nodes` (one page)")
    ] = NODE_PAGE,
    after: Annotated[
        str | None,
        Query(max_length=320, description="The page after this cursor: next_after of the last"),
    ] = None,
) -> dict[str, Any]:
    if after is not None and not _AFTER.match(after):
        raise field_error(
            "after",
            "node_cursor",
            f"{after!r} is not a node cursor (<instance group>/<node name>)",
            "send the next_after of the page before, or leave after out for the first page",
        )
    cluster = (await records.cluster(pool, name)).reachable()
    async with pool.acquire() as conn:
        infrastructure = await _infrastructure(conn, cluster)
    answer: dict[str, Any] = await query(
        request.app.state.bus,
        "cluster",
        "capacity",
        {
            "cluster": cluster.name,
            "eks_cluster": _eks_cluster(cluster),
            "region": cluster.region,  # its Kubernetes API, its prices
            "limit": limit,
            "after": after,
            "infrastructure": infrastructure,
        },
    )
    return answer


@router.get(
    "/capacity",
    response_model=None,
    responses=ok(FleetCapacity),
    summary="Capacity summed over every cluster: GPUs, EFA and memory total / allocated / free,"
    " pending pods and list price per hour, per cluster and in all",
)
async def fleet_capacity(request: Request, pool: Pool, _: Viewer) -> dict[str, Any]:
    async with pool.acquire() as conn:
        clusters = sorted(await records.clusters(conn), key=lambda c: c.name)
        readable = [c for c in clusters if c.kubernetes_recorded]
        infrastructure = {c.name: await _infrastructure(conn, c) for c in readable}
    answer: dict[str, Any] = await query(
        request.app.state.bus,
        "cluster",
        "fleet-capacity",
        {
            "clusters": [
                {
                    "cluster": c.name,
                    "eks_cluster": _eks_cluster(c),
                    "region": c.region,
                    "infrastructure": infrastructure[c.name],
                }
                for c in readable
            ],
            "unreadable": [
                {
                    "cluster": c.name,
                    "error": f"cluster {c.name} is {c.status} and its Kubernetes API is not"
                    " recorded yet",
                }
                for c in clusters
                if not c.kubernetes_recorded
            ],
        },
        timeout=30.0,
    )
    return answer
