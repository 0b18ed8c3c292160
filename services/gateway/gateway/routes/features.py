"""Managed features of a cluster (the Advanced Features panel): read live, change by PATCH.

GET answers the actual state of each feature, read by cluster-svc from AWS and the cluster.
PATCH carries only the fields to change; the answer is the operation and the diff computed from
actual state by the same planner a dry run uses (`?dry_run=true` answers that plan alone).
"""

from __future__ import annotations

from typing import Annotated, Any

import asyncpg
import orjson
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from gateway.accept import accept, dry_run, replay
from gateway.deps import OperatorMutation, Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.features import FeaturesChange, FeatureTarget, UpdateFeatures

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["features"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
USABLE = ("active", "imported")


async def _cluster(pool: asyncpg.Pool, name: str) -> asyncpg.Record:
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    if row is None:
        raise ApiError(
            404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
        )
    if row["status"] not in USABLE:
        raise ApiError(
            409,
            "cluster_not_ready",
            f"cluster {name} is {row['status']}; features change on an active or imported cluster",
            hint="wait for the cluster's operation to finish",
        )
    return row


def target_of(row: asyncpg.Record) -> FeatureTarget:
    """Where the cluster's features live: the names its create (or import) recorded."""
    resources: dict[str, Any] = row["resources"] or {}
    spec: dict[str, Any] = row["spec"] or {}
    if row["managed"]:
        eks = (resources.get("eks_cluster") or {}).get("cluster_name") or row["name"]
        hyperpod = (resources.get("hyperpod_cluster") or {}).get("cluster_name") or row["name"]
        bucket = (resources.get("bucket") or {}).get("bucket")
        return FeatureTarget(eks_cluster=eks, hyperpod_cluster=hyperpod, bucket=bucket)
    return FeatureTarget(
        eks_cluster=spec.get("eks_cluster_name") or row["name"],
        hyperpod_cluster=spec.get("hyperpod_cluster_name"),
    )


# Refusals that depend on the cluster's current state rather than on the request: 409.
CONFLICTS = frozenset({"RoleNameTaken", "AddonFailed", "ClusterNotInService"})


def _rule(exc: ApiError) -> ApiError:
    """A change refused by a rule that needs actual state: 422 with the field and the fix
    (the message starts with the field); a cluster in a state that refuses it: 409."""
    if exc.code in CONFLICTS:
        return ApiError(409, exc.code, exc.message, hint=exc.hint)
    if exc.code != "InvalidFeatureChange":
        return exc
    field, _, message = exc.message.partition(": ")
    return field_error(field, "feature_rule", message or exc.message, exc.hint or "")


@router.get("/{name}/features", summary="Actual state of each managed feature, read live")
async def get_features(
    name: ClusterNamePath, request: Request, pool: Pool, _: Viewer
) -> dict[str, Any]:
    row = await _cluster(pool, name)
    answer: dict[str, Any] = await query(
        request.app.state.bus,
        "cluster",
        "features",
        {
            "cluster": name,
            "region": row["region"],
            "target": target_of(row).model_dump(mode="json"),
        },
    )
    return answer


@router.patch(
    "/{name}/features",
    status_code=202,
    responses=ACCEPTED,
    summary="Enable or disable managed features: send only what changes",
)
async def update_features(
    name: ClusterNamePath,
    body: FeaturesChange,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    changes = FeaturesChange.model_validate(body.model_dump(exclude_unset=True))
    replayed = await replay(
        mutation,
        UpdateFeatures,
        target_type="cluster",
        target_id=name,
        request=changes.requested(),
    )
    if replayed is not None:
        return replayed
    row = await _cluster(mutation.pool, name)
    command = UpdateFeatures(
        cluster=name, region=row["region"], target=target_of(row), changes=changes
    )
    bus = request.app.state.bus
    plan: dict[str, Any] | None = None
    try:
        if mutation.dry_run:
            return await dry_run(bus, command)
        if bus.connected:
            # The diff from actual state; with NATS down the change is still accepted and
            # cluster-svc computes the same diff when the command arrives.
            plan = await query(
                bus,
                "cluster",
                "plan",
                {"type": UpdateFeatures.__name__, "payload": command.model_dump(mode="json")},
            )
    except ApiError as exc:
        raise _rule(exc) from exc
    accepted = await accept(
        mutation,
        command,
        target_type="cluster",
        target_id=name,
        request=changes.requested(),
    )
    body_out = orjson.loads(accepted.body)
    body_out["diff"] = plan.get("diff", {}) if plan is not None else None
    body_out["noop"] = plan.get("noop", False) if plan is not None else None
    body_out["plan"] = plan
    return JSONResponse(body_out, status_code=202, headers={"Location": body_out["status_url"]})
