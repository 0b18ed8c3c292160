"""Drift: where a cluster's record and its actual state differ (cluster-svc's drift watcher),
re-reading now, and the two ways out: accept the actual values into the record, or restore the
recorded value with a normal operation (dry run first)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway import records
from gateway.accept import plan_then_accept, refusal_mapper
from gateway.deps import Operator, OperatorMutation, Pool, Source, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.records import ClusterRecord
from gateway.routes.cluster_storage import restore_claim
from gateway.routes.clusters import ClusterNamePath
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS, MUTATION_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import Command
from shared.contracts.dependencies import ReconcileDependencies
from shared.contracts.drift import DriftFields, RestoreDrift
from shared.contracts.features import FeaturesChange, UpdateFeatures
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    InstanceGroupChange,
    NewInstanceGroup,
    UpdateInstanceGroup,
)
from shared.contracts.storage import AddStorage

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["drift"],
    responses=LIVE_READ_ERRORS,
)


async def _drift(request: Request, name: str) -> dict[str, Any]:
    answer: dict[str, Any] = await query(
        request.app.state.bus, "cluster", "drift", {"cluster": name}
    )
    return answer


@router.get(
    "/{name}/drift",
    summary="Where the cluster's record and its actual state differ (field, recorded, actual),"
    " and when the drift watcher last looked",
)
async def get_drift(name: ClusterNamePath, request: Request, pool: Pool, _: Viewer) -> Any:
    await records.cluster(pool, name)
    return await _drift(request, name)


@router.post(
    "/{name}/refresh",
    responses=MUTATION_ERRORS,
    summary="Re-read the cluster's actual state now and answer its differences (AWS and"
    " Kubernetes are only read)",
)
async def refresh(name: ClusterNamePath, request: Request, pool: Pool, _: Operator) -> Any:
    await records.cluster(pool, name)
    return await query(
        request.app.state.bus, "cluster", "drift_refresh", {"cluster": name}, timeout=30
    )


@router.post(
    "/{name}/drift/accept",
    responses=MUTATION_ERRORS,
    summary="Accept the actual values of drifted fields into the record (AWS is not changed)",
)
async def accept_drift(
    name: ClusterNamePath,
    body: DriftFields,
    request: Request,
    pool: Pool,
    principal: Operator,
    source: Source,
) -> Any:
    await records.cluster(pool, name)
    return await query(
        request.app.state.bus,
        "cluster",
        "drift_accept",
        {"cluster": name, "fields": body.fields, "principal": principal.name, "source": source},
    )


def _not_restorable(field: str, why: str) -> ApiError:
    return field_error(
        "field",
        "restorable",
        f"{field} {why}",
        "accept the actual value (POST .../drift/accept), or change it in AWS yourself",
    )


def restore_command(
    cluster: ClusterRecord, field: str, difference: dict[str, Any], groups: dict[str, Any]
) -> Command:
    """The operation that puts the recorded value back."""
    kind, _, rest = field.partition(".")
    recorded = difference.get("recorded")
    if kind == "components":
        return ReconcileDependencies(
            spec=ClusterSpec.from_payload(cluster.spec),
            region=cluster.region,
            bucket=str(cluster.resources.get("bucket", {}).get("bucket", "")),
            resources=cluster.resources,
        )
    if kind == "instance_groups":
        group, _, attribute = rest.rpartition(".")
        refs = cluster.hyperpod()
        if attribute == "count":
            return UpdateInstanceGroup(
                **refs.command(), group=group, change=InstanceGroupChange(count=int(str(recorded)))
            )
        if attribute == "present" and recorded is True and group in groups:
            spec = NewInstanceGroup.from_payload(groups[group])
            return AddInstanceGroup(
                **refs.command(), resources=refs.resources, group=spec, cluster_zone_id=refs.zone
            )
        if attribute == "instance_type":
            raise _not_restorable(field, "is fixed for a group's life in HyperPod")
        raise _not_restorable(
            field, "was added outside Hyperpilot: Hyperpilot deletes only what it made"
        )
    raise _not_restorable(field, "cannot be restored by an operation")


def restore_feature(cluster: ClusterRecord, field: str) -> UpdateFeatures:
    """A feature recorded on whose add-on or role was removed: turned on again (the features
    change plans only what is missing)."""
    feature = field.split(".")[1]
    on: dict[str, Any] = {feature: {"enabled": True}}
    if feature in ("training_operator", "inference_operator", "spaces"):
        on = {feature: True}
    try:
        changes = FeaturesChange.model_validate(on)
    except ValueError as exc:
        raise _not_restorable(field, "names no managed feature") from exc
    return UpdateFeatures(
        cluster=cluster.name,
        region=cluster.usable("restoring a feature").region,
        target=cluster.feature_target(),
        changes=changes,
    )


def restore_kind(field: str) -> type[Command]:
    """The command that restores a field (known before anything live is read, so a retry is
    answered by the retry rule first)."""
    kind, _, rest = field.partition(".")
    attribute = rest.rpartition(".")[2]
    if kind == "components":
        return ReconcileDependencies
    if kind == "storage":
        return AddStorage
    if kind == "features":
        return UpdateFeatures
    if kind == "instance_groups" and attribute == "count":
        return UpdateInstanceGroup
    if kind == "instance_groups" and attribute == "present":
        return AddInstanceGroup
    if kind == "instance_groups" and attribute == "instance_type":
        raise _not_restorable(field, "is fixed for a group's life in HyperPod")
    raise _not_restorable(field, "cannot be restored by an operation")


@router.post(
    "/{name}/drift/restore",
    status_code=202,
    responses=ACCEPTED,
    summary="Restore a drifted field's recorded value with the operation that sets it"
    " (instance group count or presence, dependencies, storage claims); dry run first",
)
async def restore_drift(
    name: ClusterNamePath, body: RestoreDrift, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    kind = restore_kind(body.field)

    async def build() -> Command:
        cluster = await records.cluster(mutation.pool, name)
        found = await _drift(request, name)
        difference = next((d for d in found["differences"] if d["field"] == body.field), None)
        if difference is None:
            raise field_error(
                "field",
                "drifted",
                f"{body.field} is not drifted on cluster {name}",
                f"GET /api/v1/clusters/{name}/drift lists the drifted fields (refresh first)",
            )
        if body.field.startswith("storage."):
            return await restore_claim(mutation.pool, cluster, body.field)
        if body.field.startswith("features."):
            return restore_feature(cluster, body.field)
        async with mutation.pool.acquire() as conn:
            groups = {g.name: g.spec for g in await records.instance_groups(conn, name)}
        return restore_command(cluster, body.field, difference, groups)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        kind,
        build,
        target_type="cluster",
        target_id=name,
        requested={"restore": body.field},
        refusal=refusal_mapper(),
    )
