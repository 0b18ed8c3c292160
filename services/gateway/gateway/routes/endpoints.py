"""Inference endpoints: deploy, list, describe, scale, reassign a model-pool worker, delete,
invoke.

An endpoint lives on a cluster: `?cluster=` names it, the active cluster otherwise. Mutations are
operations (202) carried out by inference-svc; `?dry_run=true` answers the plan (the objects it
would apply, patch or delete) computed from the cluster's actual state by the function the
workflow decides with, and the 202 carries that diff. Rules that need actual state (the instance
type exists in the cluster, GPUs per node, the inference operator or KEDA installed) are refused
here with 422 and the field, from that same plan.

Invoke sends an OpenAI-compatible request to the endpoint's model server. The gateway never
reaches into a cluster's network: inference-svc answers `qry.inference.invoke` through the
Kubernetes API server's service proxy, with its own EKS credentials; the caller is authenticated
here (operator role) like any other mutation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Body, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from gateway import pages, records
from gateway.accept import plan_then_accept, refusal_mapper
from gateway.deps import Mutation, Operator, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.records import EndpointRecord
from gateway.routes.cluster_storage import checked_volumes
from gateway.routes.models import ACCEPTED, READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.boundary import model_id
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.commands import Command
from shared.contracts.inference import (
    ENDPOINT_NAME_PATTERN,
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointChange,
    EndpointSpec,
    EndpointTarget,
    PoolAssignment,
    PoolWorker,
    ScaleEndpoint,
    ScaleRequest,
)
from shared.validation import RuleViolation

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/endpoints", tags=["endpoints"])

EndpointNamePath = Annotated[str, Path(min_length=1, max_length=40, pattern=ENDPOINT_NAME_PATTERN)]
ClusterQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=63,
        pattern=NAME_PATTERN,
        description="the cluster; the active cluster if omitted",
    ),
]
PURPOSE = "endpoints run on an active or imported cluster"
_refusal = refusal_mapper(
    invalid=("InvalidEndpoint", "endpoint_rule"),
    conflicts=frozenset({"OperatorMissing", "ClusterNotReady", "EndpointUnavailable"}),
    missing=frozenset({"EndpointNotFound", "ClusterNotFound"}),
    malformed_is_400=True,
)


async def _cluster(pool: asyncpg.Pool, name: str | None) -> str:
    """The named (or active) cluster, if usable."""
    name = await records.named_or_active(pool, name)
    (await records.cluster(pool, name)).usable(PURPOSE)
    return name


async def _mutate(
    request: Request,
    mutation: Mutation,
    kind: type[Command],
    cluster: str | None,
    name: str,
    requested: dict[str, Any],
    command: Callable[[str, EndpointRecord | None], Command],
    *,
    known: bool = True,
) -> JSONResponse:
    """A change of the endpoint `name` on the named (or active) cluster: `command` is built
    from the cluster's name and the endpoint's record (None for a deploy, which may create it)."""
    cluster_name = await records.named_or_active(mutation.pool, cluster)

    async def build() -> Command:
        await _cluster(mutation.pool, cluster_name)
        record = await records.endpoint(mutation.pool, cluster_name, name) if known else None
        built = command(cluster_name, record)
        if isinstance(built, DeployEndpoint):
            await checked_volumes(mutation.pool, cluster_name, built.spec.volumes)
        return built

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        kind,
        build,
        target_type="endpoint",
        target_id=f"{cluster_name}/{name}",
        requested=requested,
        refusal=_refusal,
    )


def _target(cluster: str, record: EndpointRecord | None) -> EndpointTarget:
    assert record is not None
    return EndpointTarget(cluster=cluster, name=record.name, namespace=record.namespace)


@router.post("", status_code=202, responses=ACCEPTED, summary="Deploy (or update) an endpoint")
async def deploy_endpoint(
    body: EndpointSpec,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _mutate(
        request,
        mutation,
        DeployEndpoint,
        cluster,
        body.name,
        body.model_dump(mode="json", exclude_unset=True),
        lambda cluster_name, _: DeployEndpoint(cluster=cluster_name, spec=body),
        known=False,
    )


@router.get(
    "",
    responses={**pages.paged(), **READ_ERRORS, **pages.BAD_TOKEN},
    summary="Endpoints of a cluster (or of every cluster with ?cluster=*), a page at a time",
)
async def list_endpoints(
    pool: Pool,
    _: Viewer,
    response: Response,
    cluster: Annotated[
        str | None,
        Query(max_length=63, description="the cluster; the active one if omitted; * for all"),
    ] = None,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("endpoints", page_token, 2)
    after = None if key is None else (key[0], key[1])
    rows, total = await records.endpoints_page(pool, cluster, after, limit)
    page = pages.send(response, "endpoints", rows, limit, total, lambda e: (e.cluster, e.name))
    return [record.read() for record in page]


@router.get("/{name}", summary="An endpoint: its record and, live, its status and pods")
async def describe_endpoint(
    name: EndpointNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    cluster: ClusterQuery = None,
    live: Annotated[bool, Query(description="Also read the objects from the cluster")] = True,
) -> dict[str, Any]:
    cluster_name = await _cluster(pool, cluster)
    record = (await records.endpoint(pool, cluster_name, name)).read()
    if live:
        try:
            record["live"] = await query(
                request.app.state.bus,
                "inference",
                "describe",
                {"cluster": cluster_name, "name": name},
            )
        except ApiError as exc:
            record["live"] = None
            record["live_error"] = exc.body()["error"]
    return record


def _merge_errors(exc: ValidationError) -> ApiError:
    fields = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "body"
        hint = getattr((err.get("ctx") or {}).get("error"), "hint", None)
        fields.append(
            {
                "field": where,
                "rule": err.get("type", "invalid"),
                "message": str(err.get("msg", "invalid")).removeprefix("Value error, "),
                "hint": str(hint) if hint else "correct this value",
            }
        )
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    return ApiError(422, "validation_error", summary, fields=fields)


@router.patch(
    "/{name}",
    status_code=202,
    responses=ACCEPTED,
    summary="Change a deployed endpoint: send only the fields that change",
)
async def update_endpoint(
    name: EndpointNamePath,
    body: EndpointChange,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:

    def command(cluster_name: str, record: EndpointRecord | None) -> Command:
        assert record is not None
        try:
            spec = EndpointSpec.model_validate(body.merged(record.spec))
        except ValidationError as exc:
            raise _merge_errors(exc) from exc
        return DeployEndpoint(cluster=cluster_name, spec=spec)

    return await _mutate(
        request,
        mutation,
        DeployEndpoint,
        cluster,
        name,
        body.model_dump(mode="json", exclude_unset=True),
        command,
    )


@router.post(
    "/{name}/scale", status_code=202, responses=ACCEPTED, summary="Set an endpoint's replicas"
)
async def scale_endpoint(
    name: EndpointNamePath,
    body: ScaleRequest,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _mutate(
        request,
        mutation,
        ScaleEndpoint,
        cluster,
        name,
        body.model_dump(mode="json", exclude_unset=True),
        lambda c, record: ScaleEndpoint(target=_target(c, record), replicas=body.replicas),
    )


async def _assign(
    name: str, body: PoolAssignment, request: Request, mutation: Mutation, cluster: str | None
) -> JSONResponse:
    return await _mutate(
        request,
        mutation,
        AssignPoolWorker,
        cluster,
        name,
        body.model_dump(mode="json", exclude_unset=True),
        lambda c, record: AssignPoolWorker(
            target=_target(c, record), pod=body.pod, model=body.model
        ),
    )


@router.post(
    "/{name}/pool/assign",
    status_code=202,
    responses=ACCEPTED,
    summary="Move a warm worker of a model pool to a model (by its label; no restart)",
)
async def assign_worker(
    name: EndpointNamePath,
    body: PoolAssignment,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _assign(name, body, request, mutation, cluster)


@router.post(
    "/{name}/pool/unassign",
    status_code=202,
    responses=ACCEPTED,
    summary="Return a worker of a model pool to the unassigned workers",
)
async def unassign_worker(
    name: EndpointNamePath,
    body: PoolWorker,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _assign(name, PoolAssignment(pod=body.pod, model=None), request, mutation, cluster)


@router.delete("/{name}", status_code=202, responses=ACCEPTED, summary="Delete an endpoint")
async def delete_endpoint(
    name: EndpointNamePath,
    request: Request,
    mutation: OperatorMutation,
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _mutate(
        request,
        mutation,
        DeleteEndpoint,
        cluster,
        name,
        {},
        lambda c, record: DeleteEndpoint(target=_target(c, record)),
    )


INVOKE_EXAMPLE = {
    "model": "Qwen/Qwen3-0.6B",
    "messages": [{"role": "user", "content": "Say hello"}],
    "max_tokens": 32,
}


def _checked_model(body: dict[str, Any]) -> None:
    """The request's `model`, when it names one, is a model id: the same rule inference-svc
    names a pool's per-model Service by, checked before anything is sent."""
    model = body.get("model")
    if model is None:
        return
    if not isinstance(model, str):
        raise field_error(
            "model",
            "string_type",
            "the model must be a string",
            "send model as a JSON string, e.g. Qwen/Qwen3-0.6B",
        )
    try:
        model_id(model, "model")
    except RuleViolation as exc:
        raise field_error("model", "model_id", str(exc), exc.hint) from exc


async def _invoke(
    request: Request, pool: asyncpg.Pool, cluster: str | None, name: str, path: str, body: Any
) -> JSONResponse:
    if not isinstance(body, dict):
        raise field_error(
            "body",
            "object_required",
            "the request must be a JSON object",
            "send an OpenAI-compatible body",
        )
    _checked_model(body)
    cluster_name = await _cluster(pool, cluster)
    await records.endpoint(pool, cluster_name, name)
    # Every invoke is audited (who, the endpoint, the path, the answer's status; no bodies).
    from gateway.audit import record_invoke

    async def _audit(status: int, error: str | None = None) -> None:
        await record_invoke(
            request,
            pool,
            cluster=cluster_name,
            endpoint=name,
            path=path,
            status=status,
            error=error,
        )

    try:
        answer = await query(
            request.app.state.bus,
            "inference",
            "invoke",
            {"cluster": cluster_name, "name": name, "path": path, "body": body},
            timeout=90,
        )
    except ApiError as exc:
        refused = _refusal(exc)
        await _audit(status=refused.status, error=refused.code)
        raise refused from exc
    status = int(answer.get("status") or 502)
    status = status if 200 <= status < 600 else 502
    await _audit(status=status)
    return JSONResponse(answer.get("body"), status_code=status)


@router.post(
    "/{name}/v1/chat/completions",
    name="chat_completions",
    summary="OpenAI-compatible chat completions, proxied",
)
@router.post("/{name}/invoke", summary="Send an OpenAI-compatible chat request to the endpoint")
async def invoke_endpoint(
    name: EndpointNamePath,
    request: Request,
    pool: Pool,
    _: Operator,
    body: Annotated[dict[str, Any], Body(examples=[INVOKE_EXAMPLE])],
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _invoke(request, pool, cluster, name, "/v1/chat/completions", body)


@router.post("/{name}/v1/completions", summary="OpenAI-compatible completions, proxied")
async def completions(
    name: EndpointNamePath,
    request: Request,
    pool: Pool,
    _: Operator,
    body: Annotated[dict[str, Any], Body()],
    cluster: ClusterQuery = None,
) -> JSONResponse:
    return await _invoke(request, pool, cluster, name, "/v1/completions", body)
