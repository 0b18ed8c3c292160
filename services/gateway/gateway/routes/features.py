"""Managed features of a cluster (the Advanced Features panel): read live, change by PATCH.

GET answers the actual state of each feature, read by cluster-svc from AWS and the cluster.
PATCH carries only the fields to change; the answer is the operation and the diff computed from
actual state by the same planner a dry run uses (`?dry_run=true` answers that plan alone).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from gateway import records
from gateway.accept import on_cluster, refusal_mapper
from gateway.deps import OperatorMutation, Pool, Viewer
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.features import FeaturesChange, UpdateFeatures

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["features"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
PURPOSE = "features change on an active or imported cluster"
# A change refused by a rule that needs actual state: 422 with the field and the fix (the
# message starts with the field); refusals that depend on the cluster's current state: 409.
REFUSAL = refusal_mapper(
    invalid=("InvalidFeatureChange", "feature_rule"),
    conflicts=frozenset({"RoleNameTaken", "AddonFailed", "ClusterNotInService"}),
)


@router.get("/{name}/features", summary="Actual state of each managed feature, read live")
async def get_features(
    name: ClusterNamePath, request: Request, pool: Pool, _: Viewer
) -> dict[str, Any]:
    cluster = (await records.cluster(pool, name)).usable(PURPOSE)
    answer: dict[str, Any] = await query(
        request.app.state.bus,
        "cluster",
        "features",
        {
            "cluster": name,
            "region": cluster.region,
            "target": cluster.feature_target().model_dump(mode="json"),
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

    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        UpdateFeatures,
        lambda c: UpdateFeatures(
            cluster=name,
            region=c.usable(PURPOSE).region,
            target=c.feature_target(),
            changes=changes,
        ),
        requested=changes.requested(),
        refusal=REFUSAL,
    )
