"""Storage claims of a cluster: list, add (an S3 bucket or an FSx for Lustre file system, found
or new), remove. Adding and removing are operations, dry run first like every change; removing a
claim that a job, a Ray job, a model download or an endpoint mounts is refused (409) with them
named. Workload routes check the claims they mount with `checked_volumes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Protocol

import asyncpg
from fastapi import APIRouter, Body, Path, Request
from fastapi.responses import JSONResponse

from gateway import records
from gateway.accept import plan_then_accept, refusal_mapper
from gateway.deps import AdminMutation, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.storage import (
    AddStorage,
    FsxStorage,
    RemoveStorage,
    S3Storage,
    StorageAdd,
    StorageClaim,
    StorageTarget,
)
from shared.contracts.workloads import TERMINAL_STATUSES
from shared.storage_claims import cluster_claims

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["storage"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
ClaimPath = Annotated[
    str, Path(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
]
PURPOSE = "storage changes on an active or imported cluster"
REFUSAL = refusal_mapper(
    rules={
        "BucketNotFound": ("storage.bucket", "bucket_exists"),
        "BucketExists": ("storage.bucket", "bucket_is_new"),
        "FileSystemNotFound": ("storage.file_system_id", "file_system_exists"),
        "ClaimExists": ("storage.claim", "claim_unique"),
    },
    conflicts=frozenset({"FileSystemNotAvailable", "NoComputeSubnet"}),
)


def _target(cluster: records.ClusterRecord) -> StorageTarget:
    created = cluster.created_resources
    return StorageTarget(
        eks_cluster=cluster.feature_target().eks_cluster,
        subnet_id=(created.get("compute_subnet") or {}).get("subnet_id"),
        security_group_id=(created.get("security_group") or {}).get("security_group_id"),
        tags={str(k): str(v) for k, v in (cluster.spec.get("tags") or {}).items()},
    )


async def claims_of(pool: asyncpg.Pool, cluster: str) -> list[StorageClaim]:
    async with pool.acquire() as conn:
        return await cluster_claims(conn, cluster)


class Mount(Protocol):
    """A workload's volume: a job's or endpoint's VolumeMount, a space's SpaceVolume."""

    @property
    def claim(self) -> str: ...


async def checked_volumes(
    pool: asyncpg.Pool, cluster: str, volumes: Sequence[Mount], field: str = "volumes"
) -> None:
    """Every claim a workload mounts exists on the cluster (422 naming the missing one and
    the claims the cluster has)."""
    if not volumes:
        return
    known = {c.claim: c for c in await claims_of(pool, cluster)}
    for i, volume in enumerate(volumes):
        found = known.get(volume.claim)
        if found is None:
            names = ", ".join(sorted(known)) or "none"
            raise field_error(
                f"{field}.{i}.claim",
                "claim_exists",
                f"cluster {cluster} has no storage claim {volume.claim} (its claims: {names})",
                f"mount one of its claims (GET /api/v1/clusters/{cluster}/storage), or add one"
                f" with POST /api/v1/clusters/{cluster}/storage",
            )
        if found.status != "available":
            raise field_error(
                f"{field}.{i}.claim",
                "claim_available",
                f"storage claim {volume.claim} of cluster {cluster} is {found.status}",
                "wait for its operation to finish, or mount another claim",
            )


async def _spaces_mounting(bus: Any, cluster: str, claim: str) -> list[str]:
    """The development spaces whose Workspace mounts `claim` (read live by workload-svc; a
    cluster without the Spaces add-on has none). Unreadable is refused rather than guessed."""
    spaces: list[dict[str, Any]] = await query(bus, "workload", "spaces", {"cluster": cluster})
    return [
        f"space {s['name']} (owner {s.get('owner') or 'unknown'})"
        for s in spaces
        if any(v.get("claim") == claim for v in s.get("volumes") or [])
    ]


async def _users(pool: asyncpg.Pool, cluster: str, claim: str, bus: Any = None) -> list[str]:
    """The workloads that mount `claim`: live jobs (Ray jobs and model downloads too),
    endpoints and (with `bus`) development spaces, running or stopped."""
    pattern = [{"claim": claim}]
    async with pool.acquire() as conn:
        jobs = await conn.fetch(
            "SELECT name FROM jobs WHERE cluster = $1 AND spec->'volumes' @> $2::jsonb"
            " AND NOT (status = ANY($3::text[])) ORDER BY name",
            cluster,
            pattern,
            sorted(TERMINAL_STATUSES),
        )
        endpoints = await conn.fetch(
            "SELECT name FROM endpoints WHERE cluster = $1 AND spec->'volumes' @> $2::jsonb"
            " ORDER BY name",
            cluster,
            pattern,
        )
    users = [f"job {r['name']}" for r in jobs] + [f"endpoint {r['name']}" for r in endpoints]
    return users + (await _spaces_mounting(bus, cluster, claim) if bus is not None else [])


@router.get(
    "/{name}/storage",
    response_model=list[StorageClaim],
    summary="The cluster's storage claims (its own bucket as s3-claim, then the added ones)",
)
async def list_storage(name: ClusterNamePath, pool: Pool, _: Viewer) -> list[StorageClaim]:
    await records.cluster(pool, name)
    return await claims_of(pool, name)


@router.post(
    "/{name}/storage",
    status_code=202,
    responses=ACCEPTED,
    summary="Add a storage claim: an S3 bucket or an FSx for Lustre file system, found or new",
)
async def add_storage(
    name: ClusterNamePath,
    request: Request,
    mutation: OperatorMutation,
    body: Annotated[StorageAdd, Body()],
) -> JSONResponse:
    async def build() -> AddStorage:
        cluster = (await records.cluster(mutation.pool, name)).usable(PURPOSE)
        existing = [c.claim for c in await claims_of(mutation.pool, name)]
        if body.claim in existing:
            raise ApiError(
                409,
                "claim_exists",
                f"cluster {name} already has a storage claim {body.claim}",
                hint="choose another claim name, or remove the existing claim first",
            )
        return AddStorage(
            cluster=name,
            region=cluster.region,
            target=_target(cluster),
            storage=body,
            existing=existing,
        )

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        AddStorage,
        build,
        target_type="cluster",
        target_id=name,
        requested=body.model_dump(mode="json", exclude_unset=True),
        refusal=REFUSAL,
    )


@router.delete(
    "/{name}/storage/{claim}",
    status_code=202,
    responses=ACCEPTED,
    summary="Remove a storage claim (refused while a workload mounts it); what it found stays",
)
async def remove_storage(
    name: ClusterNamePath, claim: ClaimPath, request: Request, mutation: AdminMutation
) -> JSONResponse:
    async def build() -> RemoveStorage:
        cluster = (await records.cluster(mutation.pool, name)).usable(PURPOSE)
        found = {c.claim: c for c in await claims_of(mutation.pool, name)}.get(claim)
        if found is None:
            raise ApiError(
                404,
                "not_found",
                f"cluster {name} has no storage claim {claim}",
                hint=f"GET /api/v1/clusters/{name}/storage",
            )
        if found.source == "default":
            raise ApiError(
                409,
                "default_claim",
                f"{claim} is the cluster's own storage, made with it; it goes with the cluster",
                hint=f"remove only added claims; DELETE /api/v1/clusters/{name} removes it",
            )
        users = await _users(mutation.pool, name, claim, request.app.state.bus)
        if users:
            raise ApiError(
                409,
                "claim_in_use",
                f"storage claim {claim} is mounted by {', '.join(users)}",
                hint="delete or finish those workloads (a space: delete it, or PATCH its"
                " volumes without the claim) first, then remove the claim",
            )
        return RemoveStorage(
            cluster=name, region=cluster.region, target=_target(cluster), claim=found
        )

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        RemoveStorage,
        build,
        target_type="cluster",
        target_id=name,
        requested={"claim": claim},
        refusal=REFUSAL,
    )


async def delete_resources(pool: asyncpg.Pool, cluster: records.ClusterRecord) -> dict[str, Any]:
    """What a cluster's delete needs of its added claims (DeleteCluster.resources)."""
    added = [c for c in await claims_of(pool, cluster.name) if c.source != "default"]
    if not added:
        return {}
    return {
        "storage_claims": {
            "eks_cluster": cluster.feature_target().eks_cluster,
            "claims": [c.model_dump(mode="json") for c in added],
        }
    }


def _not_restorable(field: str, why: str) -> ApiError:
    return field_error(
        "field",
        "restorable",
        f"{field} {why}",
        "accept the actual value (POST .../drift/accept: the claim is forgotten), then add the"
        " storage again if it is wanted",
    )


async def restore_claim(
    pool: asyncpg.Pool, cluster: records.ClusterRecord, field: str
) -> AddStorage:
    """The operation that puts a drifted claim back (`storage.<claim>.<what>`): the claim added
    again, which finds what still exists and makes what is missing. A bucket or file system
    Hyperpilot did not make is never recreated."""
    name = field.split(".")[1]
    claims = await claims_of(pool, cluster.name)
    found = next((c for c in claims if c.claim == name), None)
    if found is None:
        raise _not_restorable(field, f"names no claim of cluster {cluster.name}")
    if found.source == "default":
        raise _not_restorable(field, "is the cluster's own storage, made by its create")
    gone = field.endswith((".bucket", ".file_system"))
    if gone and found.source == "existing":
        raise _not_restorable(
            field, "was deleted outside Hyperpilot, which does not recreate what it did not make"
        )
    storage: StorageAdd
    if found.kind == "s3":
        storage = S3Storage(
            kind="s3", claim=name, bucket=str(found.bucket), create=found.source == "created"
        )
    elif gone:
        raise _not_restorable(
            field, "was a file system made for the claim; its settings are not kept to remake it"
        )
    else:
        storage = FsxStorage(kind="fsx", claim=name, file_system_id=found.file_system_id)
    return AddStorage(
        cluster=cluster.name,
        region=cluster.region,
        target=_target(cluster.usable(PURPOSE)),
        storage=storage,
        existing=[c.claim for c in claims if c.claim != name],
    )
