"""Metrics of one cluster: `GET /api/v1/clusters/{name}/metrics/query?query=&time=|window=&step=|
start=&end=&step=`, PromQL-lite (shared.promql) over the GPU (DCGM) and EFA series the
observability add-on's exporters serve. Viewer role.

The answer is the Prometheus HTTP API's (`status`, `data.resultType`, `data.result`). A query
reads the cluster in its path only: every series carries `cluster`, and a matcher that names a
different cluster is refused (403) before anything is read, so a caller never reaches another
cluster's series through this route. workload-svc answers `qry.workload.metrics` from the samples
it scrapes (workload_svc.metrics).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from gateway import records
from gateway.deps import Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.routes.models import LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.metrics import CLUSTER_LABEL, DURATION_PATTERN, beyond_cluster
from shared.promql import MAX_QUERY, QueryError, parse

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["metrics"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]


def check_scope(cluster: str, text: str) -> None:
    """422 for a query that does not parse, 403 for one that names another cluster."""
    try:
        expr = parse(text)
    except QueryError as exc:
        raise field_error("query.query", "promql_lite", exc.message, exc.hint) from exc
    matcher = beyond_cluster(cluster, expr)
    if matcher is not None:
        raise ApiError(
            403,
            "forbidden",
            f"the matcher {matcher.label}{matcher.op}{matcher.value!r} reaches series of clusters"
            f" other than {cluster}; this route reads cluster {cluster} only",
            hint=f"query another cluster on its own route (if you may read it), or use"
            f' {CLUSTER_LABEL}="{cluster}" or no {CLUSTER_LABEL} matcher',
        )


def _refusal(exc: ApiError) -> ApiError:
    if exc.code == "invalid_request":
        field, _, message = exc.message.partition(": ")
        if message:
            return field_error(f"query.{field}", "promql_lite", message, exc.hint or "")
        return ApiError(422, "validation_error", exc.message, hint=exc.hint)
    if exc.code == "ObservabilityNotEnabled":
        return ApiError(409, "observability_not_enabled", exc.message, hint=exc.hint)
    if exc.code == "OtherCluster":
        return ApiError(403, "forbidden", exc.message, hint=exc.hint)
    if exc.code == "ClusterNotFound":
        return ApiError(404, "not_found", exc.message, hint=exc.hint)
    return exc


@router.get(
    "/{name}/metrics/query",
    summary="PromQL-lite over the cluster's GPU (DCGM) and EFA metrics: instant, or a range",
)
async def query_metrics(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    query_: Annotated[
        str,
        Query(
            alias="query",
            min_length=1,
            max_length=MAX_QUERY,
            description='e.g. avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{pod=~"job-.*"})',
        ),
    ],
    time: Annotated[float | None, Query(ge=0, description="Instant query at (unix s)")] = None,
    window: Annotated[
        str | None, Query(pattern=DURATION_PATTERN, description="Range: the last 15m, say")
    ] = None,
    start: Annotated[float | None, Query(ge=0, description="Range start (unix s)")] = None,
    end: Annotated[float | None, Query(ge=0, description="Range end (unix s)")] = None,
    step: Annotated[
        str | None, Query(pattern=DURATION_PATTERN, description="Range step, e.g. 15s")
    ] = None,
) -> dict[str, Any]:
    (await records.cluster(pool, name)).reachable()
    check_scope(name, query_)
    payload: dict[str, Any] = {"cluster": name, "query": query_}
    for key, value in (
        ("time", time),
        ("window", window),
        ("start", start),
        ("end", end),
        ("step", step),
    ):
        if value is not None:
            payload[key] = value
    try:
        answer: dict[str, Any] = await query(request.app.state.bus, "workload", "metrics", payload)
    except ApiError as exc:
        raise _refusal(exc) from exc
    return answer
