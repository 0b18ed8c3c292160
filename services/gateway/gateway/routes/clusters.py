"""Clusters: create (one operation, many stages), list, describe, import, switch, delete."""

from __future__ import annotations

import secrets
import uuid
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from gateway import pages, records
from gateway.accept import Reserve, plan_then_accept
from gateway.deps import AdminMutation, Mutation, Operator, OperatorMutation, Pool, Source, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.regions import served_region
from gateway.routes.cluster_storage import delete_resources
from gateway.routes.inspect import problems_to_fields
from gateway.routes.models import ACCEPTED, MUTATION_ERRORS, READ_ERRORS, accepted, ok
from gateway.routing import PrefixedRoute
from shared.bus import Bus
from shared.contracts.cluster import NAME_PATTERN, ClusterSpec, ImportSpec
from shared.contracts.commands import CreateCluster, DeleteCluster, ImportCluster
from shared.contracts.events import ActiveClusterChanged
from shared.contracts.spec import Spec
from shared.naming import AWS_REGIONS
from shared.operations import append_event
from shared.validation import RuleViolation

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["clusters"],
    responses=READ_ERRORS,
)


def _get_cluster(name: str) -> dict[str, dict[str, object]]:
    return {
        "GetCluster": {
            "operationId": "get_cluster_api_v1_clusters__name__get",
            "parameters": {"name": name},
            "description": "The cluster the operation creates (or imports)",
        }
    }


ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]


def _check_region(region: str | None) -> str | None:
    if region is not None and region not in AWS_REGIONS:
        raise RuleViolation(
            f"{region!r} is not an AWS region", "use a region code such as us-east-1"
        )
    return region


class ClusterCreate(ClusterSpec):
    region: str | None = Field(
        None, description="A region the control plane serves; the default region if omitted"
    )

    _region = field_validator("region")(_check_region)


class ClusterImport(ImportSpec):
    region: str | None = Field(
        None, description="A region the control plane serves; the default region if omitted"
    )

    _region = field_validator("region")(_check_region)


class ActiveCluster(Spec):
    name: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)


class ClusterRead(BaseModel):
    name: str
    region: str
    status: str
    managed: bool
    active: bool
    eks_cluster_arn: str | None
    hyperpod_cluster_arn: str | None
    endpoint: str | None
    operation_id: str | None
    spec: dict[str, Any]
    created_at: str
    updated_at: str


class ClusterGroupRead(BaseModel):
    name: str
    instance_type: str
    count: int
    status: str
    spec: dict[str, Any]


class ClusterComponentRead(BaseModel):
    name: str
    version: str
    status: str
    message: str | None


class ClusterDescription(ClusterRead):
    resources: dict[str, Any]
    instance_groups: list[ClusterGroupRead]
    components: list[ClusterComponentRead]
    drifted: bool
    drift: list[dict[str, Any]]  # field, recorded, actual (GET .../drift has the details)


def default_bucket(cluster: str) -> str:
    """A globally unique bucket name for the cluster's shared data, fixed at accept time."""
    return f"hyperpilot-{cluster.lower()}"[:54] + "-" + secrets.token_hex(4)


def _taken(name: str) -> ApiError:
    return ApiError(
        409,
        "cluster_exists",
        f"a cluster named {name} is already known here",
        hint="choose another name, or delete the existing cluster first",
    )


@router.post(
    "",
    status_code=202,
    responses=accepted(_get_cluster("$request.body#/name")),
    summary="Create an EKS + HyperPod cluster",
)
async def create_cluster(
    body: ClusterCreate,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    region = served_region(request, body.region)
    spec = ClusterSpec.model_validate(body.model_dump(exclude={"region"}))
    bus = request.app.state.bus

    async def build() -> CreateCluster:
        if not mutation.dry_run:
            await _check_create(bus, mutation, spec, region)
        bucket = spec.storage.bucket or default_bucket(spec.name)
        return CreateCluster(spec=spec, region=region, bucket=bucket)

    # A retry (the same Idempotency-Key) answers its operation before the name is checked:
    # by then the name is the retried create's own.
    return await plan_then_accept(
        bus,
        mutation,
        CreateCluster,
        build,
        target_type="cluster",
        target_id=spec.name,
        requested=body.model_dump(mode="json", exclude_unset=True),
        verdict=False,
        reserve=_reserve(spec.name, region, spec, managed=True),
    )


async def _check_create(bus: Bus, mutation: Mutation, spec: ClusterSpec, region: str) -> None:
    """A new create: the name is free here, and cluster-svc's live checks pass (with NATS down
    the same checks run as the workflow's first stage, preflight)."""
    async with mutation.pool.acquire() as conn:
        existing = await records.find_cluster(conn, spec.name)
    if existing is not None and mutation.idempotency_key is None:
        raise _taken(spec.name)
    if bus.connected:
        problems = await query(
            bus,
            "cluster",
            "check_create",
            {"spec": spec.model_dump(mode="json"), "region": region},
        )
        if problems:
            fields = problems_to_fields(problems)
            raise ApiError(
                422,
                "validation_error",
                "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5]),
                fields=fields,
            )


def _reserve(name: str, region: str, spec: Spec, *, managed: bool) -> Reserve:
    """The cluster's row, written with its operation: a name is taken once."""

    async def reserve(conn: asyncpg.Connection, operation_id: uuid.UUID) -> None:
        try:
            await conn.execute(
                "INSERT INTO clusters (name, region, status, managed, spec, operation_id)"
                " VALUES ($1, $2, 'pending', $3, $4, $5)",
                name,
                region,
                managed,
                spec.model_dump(mode="json"),
                operation_id,
            )
        except asyncpg.UniqueViolationError:
            raise _taken(name) from None

    return reserve


@router.get(
    "",
    response_model=None,
    responses={**pages.paged(list[ClusterRead]), **pages.BAD_TOKEN},
    summary="List clusters with their status, oldest first, a page at a time; the active one"
    " is marked",
)
async def list_clusters(
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("clusters", page_token, 2)
    after = None if key is None else (pages.instant(key[0]), key[1])
    async with pool.acquire() as conn:
        found, total = await records.clusters_page(conn, after, limit)
        active = await records.active_cluster(conn)
    page = pages.send(response, "clusters", found, limit, total, _cluster_key)
    return [c.read(active) for c in page]


def _cluster_key(cluster: records.ClusterRecord) -> tuple[str, str]:
    return cluster.created_at.isoformat(), cluster.name


@router.get(
    "/active",
    response_model=None,
    responses=ok(ClusterRead),
    summary="The active cluster (the one commands without a cluster name use)",
)
async def get_active(pool: Pool, _: Viewer) -> dict[str, Any]:
    async with pool.acquire() as conn:
        active = await records.active_cluster(conn)
    if active is None:
        raise ApiError(
            404, "no_active_cluster", "no cluster is active", hint="PUT /api/v1/clusters/active"
        )
    return (await records.cluster(pool, active)).read(active)


@router.put(
    "/active",
    response_model=None,
    responses={**ok(ClusterRead), **MUTATION_ERRORS},
    summary="Switch the active cluster",
)
async def set_active(
    body: ActiveCluster, pool: Pool, principal: Operator, source: Source
) -> dict[str, Any]:
    async with pool.acquire() as conn, conn.transaction():
        selected = await records.find_cluster(conn, body.name)
        if selected is None:
            raise records.unknown(body.name)
        selected.usable("only an active or imported cluster can be selected")
        previous = await records.active_cluster(conn)
        await conn.execute(
            "INSERT INTO active_cluster (singleton, name, updated_at) VALUES (true, $1, now())"
            " ON CONFLICT (singleton) DO UPDATE SET name = $1, updated_at = now()",
            body.name,
        )
        if previous != body.name:
            await append_event(
                conn,
                operation_id=None,
                domain="cluster",
                event=ActiveClusterChanged(name=body.name, previous=previous),
                principal=principal.name,
                source=source,
            )
    return selected.read(body.name)


@router.get(
    "/{name}",
    response_model=None,
    responses=ok(ClusterDescription),
    summary="Describe a cluster: status, resources, groups, components",
)
async def get_cluster(name: ClusterNamePath, pool: Pool, _: Viewer) -> dict[str, Any]:
    async with pool.acquire() as conn:
        found = await records.find_cluster(conn, name)
        if found is None:
            raise records.unknown(name)
        groups = await records.instance_groups(conn, name)
        components = await conn.fetch(
            "SELECT * FROM cluster_components WHERE cluster = $1 ORDER BY component", name
        )
        drift = await conn.fetch(
            "SELECT field, recorded, actual FROM cluster_drift WHERE cluster = $1 ORDER BY field",
            name,
        )
        active = await records.active_cluster(conn)
    described = found.read(active)
    described["resources"] = found.resources
    described["instance_groups"] = [g.read(with_updated=False) for g in groups]
    described["components"] = [
        {
            "name": c["component"],
            "version": c["version"],
            "status": c["status"],
            "message": c["message"],
        }
        for c in components
    ]
    described["drifted"] = bool(drift)
    described["drift"] = [dict(d) for d in drift]
    return described


@router.post(
    "/import",
    status_code=202,
    responses=accepted(_get_cluster("$request.body#/eks_cluster_name")),
    summary="Import an existing EKS (and HyperPod) cluster",
)
async def import_cluster(
    body: ClusterImport,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    region = served_region(request, body.region)
    spec = ImportSpec.model_validate(body.model_dump(exclude={"region"}))

    async def build() -> ImportCluster:
        return ImportCluster(spec=spec, region=region)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        ImportCluster,
        build,
        target_type="cluster",
        target_id=spec.eks_cluster_name,
        requested=body.model_dump(mode="json", exclude_unset=True),
        verdict=False,
        reserve=_reserve(spec.eks_cluster_name, region, spec, managed=False),
    )


@router.delete(
    "/{name}",
    status_code=202,
    responses=ACCEPTED,
    summary="Delete what Hyperpilot created for a cluster, in reverse dependency order",
)
async def delete_cluster(
    name: ClusterNamePath,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    async def build() -> DeleteCluster:
        found = await records.cluster(mutation.pool, name)
        async with mutation.pool.acquire() as conn:
            busy = await conn.fetchval(
                "SELECT id FROM operations WHERE target_type = 'cluster' AND target_id = $1"
                " AND status IN ('pending', 'running') AND kind <> 'cluster.delete'",
                name,
            )
        if busy is not None and mutation.idempotency_key is None:
            raise ApiError(
                409,
                "cluster_busy",
                f"cluster {name} has operation {busy} in progress",
                hint=f"wait for it (GET /api/v1/operations/{busy}?wait=60), then delete",
            )
        claims = await delete_resources(mutation.pool, found)
        return DeleteCluster(
            name=name, region=found.region, resources={**found.created_resources, **claims}
        )

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        DeleteCluster,
        build,
        target_type="cluster",
        target_id=name,
        requested={"name": name},
        verdict=False,
    )
