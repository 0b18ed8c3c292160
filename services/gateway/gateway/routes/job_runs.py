"""A job's MLflow runs and their metric history, read live by workload-svc from the job's
SageMaker managed MLflow tracking server (experiment and run named after the job)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from gateway import records
from gateway.accept import refusal_mapper
from gateway.deps import Pool, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.models import LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.workloads import JOB_NAME_PATTERN

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1", tags=["jobs"])

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
JobNamePath = Annotated[str, Path(min_length=1, max_length=40, pattern=JOB_NAME_PATTERN)]
RunId = Annotated[
    str | None,
    Query(min_length=1, max_length=64, pattern=r"^[0-9a-zA-Z]+$", description="a run of the job"),
]
MetricKey = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=250,
        pattern=r"^[\w./ -]+$",
        description="a metric's history to read, e.g. loss or tokens_per_sec",
    ),
]
_refusal = refusal_mapper(
    missing=frozenset({"JobNotFound", "ClusterNotFound", "RunNotFound", "NoTrackingServer"}),
    malformed_is_400=True,
)


async def _ask(request: Request, name: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        answer: dict[str, Any] = await query(request.app.state.bus, "workload", name, body)
    except ApiError as exc:
        raise _refusal(exc) from exc
    return answer


@router.get(
    "/clusters/{name}/jobs/{job}/runs",
    responses=LIVE_READ_ERRORS,
    summary="The job's MLflow runs (newest first) with their latest metrics; with metric, that"
    " metric's history by step (of run_id, or of the newest run)",
)
async def job_runs(
    name: ClusterNamePath,
    job: JobNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    metric: MetricKey = None,
    run_id: RunId = None,
) -> dict[str, Any]:
    await records.job(pool, name, job)
    body: dict[str, Any] = {"cluster": name, "name": job}
    if metric is not None:
        body["metric"] = metric
    if run_id is not None:
        body["run_id"] = run_id
    return await _ask(request, "job_runs", body)
