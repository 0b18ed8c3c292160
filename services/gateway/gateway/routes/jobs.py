"""Training jobs on a cluster: submit a recipe, list, describe, cancel, delete, events, logs;
model downloads; the Secrets jobs name (the Hugging Face token's, and any other: write-only,
answered and recorded by name and keys alone).

Mutations are operations (202) carried out by workload-svc; `?dry_run=true` answers the plan
(the custom resource that would be created) computed from the cluster's actual state by the
function the workflow decides with. Rules that need actual state (instance group, GPUs per
node, EFA, storage) are refused here with 422 and the field, from that same plan.
"""

from __future__ import annotations

from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Body, Path, Query, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

from gateway import pages, records
from gateway.accept import plan_then_accept, refusal_mapper
from gateway.auth import Principal
from gateway.deps import Mutation, Operator, OperatorMutation, Pool, Source, Viewer
from gateway.errors import ApiError
from gateway.limits import NonNegativeBigint
from gateway.queries import query
from gateway.regions import served_region
from gateway.routes.cluster_storage import checked_volumes
from gateway.routes.models import ACCEPTED, READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.commands import Command
from shared.contracts.workloads import (
    JOB_NAME_PATTERN,
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    DownloadModel,
    HfTokenRequest,
    JobSpec,
    ModelDownloadSpec,
    StoreSecretRequest,
    SubmitJob,
    TrackingServerSpec,
)
from shared.regions import REGION_PATTERN

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1", tags=["jobs"])

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
JobNamePath = Annotated[str, Path(min_length=1, max_length=40, pattern=JOB_NAME_PATTERN)]
PodName = Annotated[str, Query(min_length=1, max_length=253, pattern=r"^[a-z0-9][-a-z0-9.]*$")]
PURPOSE = "jobs run on an active or imported cluster"
_refusal = refusal_mapper(
    invalid=("InvalidJob", "job_rule"),
    conflicts=frozenset(
        {"JobExists", "OperatorMissing", "ClusterNotReady", "TrackingServerExists"}
    ),
    missing=frozenset({"JobNotFound", "PodNotFound", "ClusterNotFound", "PreviousLogNotFound"}),
    malformed_is_400=True,
)


async def _cluster(pool: asyncpg.Pool, name: str) -> records.ClusterRecord:
    return (await records.cluster(pool, name)).usable(PURPOSE)


async def _on_job(
    request: Request, mutation: Mutation, name: str, job: str, command: type[CancelJob | DeleteJob]
) -> JSONResponse:
    """Cancel or delete a known job of a usable cluster."""

    async def build() -> Command:
        await _cluster(mutation.pool, name)
        await records.job(mutation.pool, name, job)
        return command(cluster=name, name=job)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        command,
        build,
        target_type="job",
        target_id=f"{name}/{job}",
        requested={"cancel" if command is CancelJob else "delete": True},
        refusal=_refusal,
    )


@router.post(
    "/clusters/{name}/jobs",
    status_code=202,
    responses=ACCEPTED,
    summary="Submit a training job from a recipe (pytorch, llama-factory, ms-swift, verl)",
)
async def submit_job(
    name: ClusterNamePath,
    spec: Annotated[JobSpec, Body()],
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    async def build() -> SubmitJob:
        cluster = (await records.cluster(mutation.pool, name)).usable(PURPOSE)
        await checked_volumes(mutation.pool, name, spec.volumes)
        return SubmitJob(cluster=name, region=cluster.region, spec=spec)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        SubmitJob,
        build,
        target_type="job",
        target_id=f"{name}/{spec.name}",
        requested=spec.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )


@router.get(
    "/clusters/{name}/jobs",
    responses={**pages.paged(), **READ_ERRORS, **pages.BAD_TOKEN},
    summary="The cluster's jobs and their last observed status, oldest first, a page at a time",
)
async def list_jobs(
    name: ClusterNamePath,
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
    active: Annotated[
        bool, Query(description="Only jobs not finished (not succeeded, failed or cancelled)")
    ] = False,
    recipe: Annotated[
        str | None,
        Query(
            min_length=1, max_length=40, pattern=r"^[a-z][-a-z]*$", description="Only this recipe"
        ),
    ] = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("jobs", page_token, 2)
    after = None if key is None else (pages.instant(key[0]), key[1])
    rows, total = await records.jobs_page(pool, name, after, limit, active=active, recipe=recipe)
    page = pages.send(response, "jobs", rows, limit, total, _job_key)
    return [job.read() for job in page]


def _job_key(job: records.JobRecord) -> tuple[str, str]:
    assert job.created_at is not None  # NOT NULL in the table
    return job.created_at.isoformat(), job.name


@router.get(
    "/clusters/{name}/jobs/{job}", summary="A job: its record, restarts against the budget, pods"
)
async def describe_job(
    name: ClusterNamePath,
    job: JobNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    live: Annotated[bool, Query(description="Also read the resource from the cluster")] = True,
) -> dict[str, Any]:
    found = (await records.job(pool, name, job)).read()
    tracking = (found.get("spec") or {}).get("mlflow_tracking_uri")
    if tracking:
        # The link between the job and its MLflow run: the run (and experiment) is the job's name.
        found["mlflow"] = {"tracking_uri": tracking, "experiment": job, "run_name": job}
    if live:
        try:
            found["live"] = await query(
                request.app.state.bus, "workload", "job", {"cluster": name, "name": job}
            )
        except ApiError as exc:
            found["live"] = None
            found["live_error"] = {"code": exc.code, "message": exc.message, "hint": exc.hint}
    return found


@router.post(
    "/clusters/{name}/jobs/{job}/cancel",
    status_code=202,
    responses=ACCEPTED,
    summary="Stop a job's pods; the job stays listed as cancelled",
)
async def cancel_job(
    name: ClusterNamePath,
    job: JobNamePath,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await _on_job(request, mutation, name, job, CancelJob)


@router.delete(
    "/clusters/{name}/jobs/{job}",
    status_code=202,
    responses=ACCEPTED,
    summary="Delete a job: its custom resource and its record",
)
async def delete_job(
    name: ClusterNamePath,
    job: JobNamePath,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    return await _on_job(request, mutation, name, job, DeleteJob)


@router.get("/clusters/{name}/jobs/{job}/events", summary="The job's events, oldest first")
async def job_events(
    name: ClusterNamePath,
    job: JobNamePath,
    pool: Pool,
    _: Viewer,
    after: Annotated[NonNegativeBigint, Query(description="Only events after this sequence")] = 0,
) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT seq, type, subject, principal, occurred_at, payload, operation_id FROM events"
            " WHERE seq > $3 AND ((payload->>'cluster' = $1 AND payload->>'name' = $2)"
            " OR operation_id IN (SELECT id FROM operations WHERE target_type = 'job'"
            " AND target_id = $1 || '/' || $2)) ORDER BY seq",
            name,
            job,
            after,
        )
    return [
        {
            "seq": r["seq"],
            "type": r["type"],
            "subject": r["subject"],
            "principal": r["principal"],
            "occurred_at": r["occurred_at"].isoformat(),
            "operation_id": str(r["operation_id"]) if r["operation_id"] else None,
            "payload": r["payload"],
        }
        for r in rows
    ]


@router.get(
    "/clusters/{name}/jobs/{job}/logs",
    response_class=PlainTextResponse,
    summary="Download one pod's log (text); `from` skips the lines already read; `previous`"
    " reads its container's instance before the last restart",
)
async def download_logs(
    name: ClusterNamePath,
    job: JobNamePath,
    pod: PodName,
    request: Request,
    pool: Pool,
    _: Viewer,
    from_: Annotated[NonNegativeBigint, Query(alias="from")] = 0,
    previous: Annotated[
        bool, Query(description="The log of the pod's container before its last restart")
    ] = False,
) -> PlainTextResponse:
    await records.job(pool, name, job)
    lines: list[str] = []
    cursor = from_
    while True:
        try:
            page = await query(
                request.app.state.bus,
                "workload",
                "logs",
                {"cluster": name, "job": job, "pod": pod, "from": cursor, "previous": previous},
            )
        except ApiError as exc:
            raise _refusal(exc) from exc
        lines.extend(page["lines"])
        cursor = page["next"]
        if not page["more"]:
            break
    return PlainTextResponse(
        "".join(line + "\n" for line in lines),
        headers={
            "Content-Disposition": (
                f'attachment; filename="{job}-{pod}{"-previous" if previous else ""}.log"'
            ),
            "X-Next-Line": str(cursor),
        },
    )


@router.post(
    "/clusters/{name}/model-downloads",
    status_code=202,
    responses=ACCEPTED,
    summary="Pull a Hugging Face model into the shared bucket (a Kubernetes Job)",
)
async def download_model(
    name: ClusterNamePath,
    spec: ModelDownloadSpec,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    async def build() -> DownloadModel:
        cluster = (await records.cluster(mutation.pool, name)).usable(PURPOSE)
        await checked_volumes(mutation.pool, name, spec.volumes)
        return DownloadModel(cluster=name, region=cluster.region, spec=spec)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        DownloadModel,
        build,
        target_type="job",
        target_id=f"{name}/{spec.name}",
        requested=spec.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )


@router.post(
    "/clusters/{name}/secrets/hf-token",
    summary="Store a Hugging Face token in a Kubernetes Secret; answers only the Secret's name",
)
async def store_hf_token(
    name: ClusterNamePath,
    body: HfTokenRequest,
    request: Request,
    pool: Pool,
    principal: Operator,
    source: Source,
) -> dict[str, Any]:
    fields = {"token": body.token, "secret": body.secret}
    return await _write_secret(request, pool, name, "hf_token", fields, principal, source)


async def _write_secret(
    request: Request,
    pool: asyncpg.Pool,
    cluster: str,
    name: str,
    fields: dict[str, Any],
    principal: Principal,
    source: str,
) -> dict[str, Any]:
    """Hand a secret to workload-svc by request/reply only: the values are neither stored,
    queued durably nor logged; the event it records names the Secret (and its keys) alone."""
    await _cluster(pool, cluster)
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus,
            "workload",
            name,
            {"cluster": cluster, **fields, "principal": principal.name, "source": source},
        )
    except ApiError as exc:
        raise _refusal(exc) from exc
    return answer


@router.post(
    "/clusters/{name}/secrets",
    summary="Write (create or replace) a Kubernetes Secret in the jobs' namespace; answers only"
    " its name and keys, never a value (a job names it in secret_env)",
)
async def store_secret(
    name: ClusterNamePath,
    body: StoreSecretRequest,
    request: Request,
    pool: Pool,
    principal: Operator,
    source: Source,
) -> dict[str, Any]:
    fields = {"name": body.name, "data": dict(body.data)}
    return await _write_secret(request, pool, name, "store_secret", fields, principal, source)


@router.get(
    "/clusters/{name}/secrets",
    summary="The Secrets of the jobs' namespace: names, types and keys (never a value)",
)
async def list_secrets(
    name: ClusterNamePath, request: Request, pool: Pool, _: Viewer
) -> dict[str, Any]:
    await _cluster(pool, name)
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus, "workload", "secrets", {"cluster": name}
        )
    except ApiError as exc:
        raise _refusal(exc) from exc
    return answer


@router.post(
    "/mlflow/tracking-servers",
    status_code=202,
    responses=ACCEPTED,
    summary="Create a SageMaker managed MLflow tracking server (its ARN is a job's tracking URI)",
)
async def create_tracking_server(
    spec: TrackingServerSpec,
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    async def build() -> Command:
        region = served_region(request, spec.region)
        return CreateTrackingServer(region=region, spec=spec.model_copy(update={"region": region}))

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        CreateTrackingServer,
        build,
        target_type="mlflow_tracking_server",
        target_id=spec.name,
        requested=spec.model_dump(mode="json", exclude_unset=True),
        refusal=_refusal,
    )


@router.get(
    "/mlflow/tracking-servers/{server}",
    summary="A tracking server, described live by SageMaker",
)
async def describe_tracking_server(
    server: Annotated[str, Path(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$")],
    request: Request,
    _: Viewer,
    region: Annotated[
        str | None,
        Query(pattern=REGION_PATTERN, description="AWS region (default: the control plane's)"),
    ] = None,
) -> dict[str, Any]:
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus,
            "workload",
            "tracking_server",
            {"name": server, "region": served_region(request, region)},
        )
    except ApiError as exc:
        if exc.code == "TrackingServerNotFound":
            raise ApiError(404, "not_found", exc.message, hint=exc.hint) from exc
        raise
    return answer
