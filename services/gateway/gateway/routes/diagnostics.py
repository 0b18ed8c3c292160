"""Diagnostics reads of a cluster's Kubernetes API: events, pods, a container's log (the running
instance's or the one before its last restart). Viewer role; nothing here changes a cluster.

The gateway never talks to Kubernetes: workload-svc answers `qry.workload.kube_events`,
`qry.workload.pods` and `qry.workload.pod_logs` (request/reply). The parameters and their rules
are `shared.contracts.diagnostics`, the same the MCP tools and workload-svc check.

- `GET /api/v1/clusters/{name}/kubernetes-events?namespace=&kind=&object=&type=&limit=`: the
  newest events (newest last), of one namespace or all (`*` or omitted), about one object, of
  one type (Normal, Warning);
- `GET /api/v1/clusters/{name}/pods?namespace=&selector=`: pods with their phase, kubectl's
  STATUS (CrashLoopBackOff, ImagePullBackOff, OOMKilled, ...), node, readiness and each
  container's state, restart count and last termination (reason, exit code);
- `GET /api/v1/clusters/{name}/pods/{namespace}/{pod}/logs?container=&tail=&previous=`: the last
  lines of a container's log as text, like the job log download; `previous=true` reads the
  container's instance before its last restart.
"""

from __future__ import annotations

from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import AfterValidator

from gateway import records
from gateway.deps import Pool, Viewer
from gateway.errors import ApiError, field_error
from gateway.queries import query
from gateway.routes.models import LIVE_READ_ERRORS, as_json
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.diagnostics import (
    CONTAINER_PATTERN,
    DEFAULT_EVENTS,
    DEFAULT_TAIL,
    KIND_PATTERN,
    MAX_EVENTS,
    MAX_SELECTOR,
    MAX_TAIL,
    NAMESPACE_OR_ALL_PATTERN,
    NAMESPACE_PATTERN,
    OBJECT_PATTERN,
    POD_PATTERN,
    EventType,
    check_label_selector,
)
from shared.contracts.workloads import NAMESPACE

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["diagnostics"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
MISSING = frozenset({"ClusterNotFound", "PodNotFound", "PreviousLogNotFound"})
# A rule workload-svc checked against the live pod, by the field it is about.
RULES = {"container": "container_of_pod"}


async def _cluster(pool: asyncpg.Pool, name: str) -> None:
    (await records.cluster(pool, name)).reachable()


def _refusal(exc: ApiError) -> ApiError:
    """workload-svc's refusal as it reads at the edge: a field (422), gone (404), state (409)."""
    if exc.code == "invalid_request":
        field, _, message = exc.message.partition(": ")
        if message:
            rule = RULES.get(field, "invalid_value")
            return field_error(f"query.{field}", rule, message, exc.hint or "")
        return ApiError(422, "validation_error", exc.message, hint=exc.hint)
    if exc.code in MISSING:
        return ApiError(404, "not_found", exc.message, hint=exc.hint)
    if exc.code == "ClusterNotReady":
        return ApiError(409, "cluster_not_ready", exc.message, hint=exc.hint)
    return exc


async def _ask(request: Request, name: str, payload: dict[str, Any]) -> Any:
    try:
        return await query(request.app.state.bus, "workload", name, payload)
    except ApiError as exc:
        raise _refusal(exc) from exc


@router.get(
    "/{name}/kubernetes-events",
    summary="The cluster's Kubernetes events, newest last (one namespace or all; by object, type)",
)
async def kubernetes_events(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    namespace: Annotated[
        str | None,
        Query(pattern=NAMESPACE_OR_ALL_PATTERN, description="A namespace; omitted or *: all"),
    ] = None,
    kind: Annotated[
        str | None,
        Query(pattern=KIND_PATTERN, description="Only events about objects of this kind (Pod)"),
    ] = None,
    object_: Annotated[
        str | None,
        Query(alias="object", pattern=OBJECT_PATTERN, description="Only events about this object"),
    ] = None,
    type_: Annotated[EventType | None, Query(alias="type", description="Normal or Warning")] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_EVENTS, description="The newest this many events")
    ] = DEFAULT_EVENTS,
) -> dict[str, Any]:
    await _cluster(pool, name)
    payload: dict[str, Any] = {"cluster": name, "limit": limit}
    for key, value in (
        ("namespace", namespace),
        ("kind", kind),
        ("object", object_),
        ("type", type_),
    ):
        if value is not None:
            payload[key] = value
    answer: dict[str, Any] = await _ask(request, "kube_events", payload)
    return answer


@router.get(
    "/{name}/pods",
    summary="Pods with their status, node, restarts and each container's state and last"
    " termination",
)
async def list_pods(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    namespace: Annotated[
        str, Query(pattern=NAMESPACE_OR_ALL_PATTERN, description="A namespace, or * for all")
    ] = NAMESPACE,
    selector: Annotated[
        str,
        Query(max_length=MAX_SELECTOR, description="A label selector, e.g. app=web"),
        AfterValidator(check_label_selector),
    ] = "",
) -> dict[str, Any]:
    await _cluster(pool, name)
    answer: dict[str, Any] = await _ask(
        request, "pods", {"cluster": name, "namespace": namespace, "selector": selector}
    )
    return answer


@router.get(
    "/{name}/pods/{namespace}/{pod}/logs",
    response_class=PlainTextResponse,
    responses=as_json(LIVE_READ_ERRORS),
    summary="The last lines of a container's log (text); previous=true: the instance before its"
    " last restart",
)
async def pod_logs(
    name: ClusterNamePath,
    namespace: Annotated[str, Path(pattern=NAMESPACE_PATTERN)],
    pod: Annotated[str, Path(max_length=253, pattern=POD_PATTERN)],
    request: Request,
    pool: Pool,
    _: Viewer,
    container: Annotated[
        str | None,
        Query(pattern=CONTAINER_PATTERN, description="The pod's default container if omitted"),
    ] = None,
    tail: Annotated[
        int, Query(ge=1, le=MAX_TAIL, description="The last this many lines")
    ] = DEFAULT_TAIL,
    previous: Annotated[
        bool, Query(description="The container's log before its last restart")
    ] = False,
) -> PlainTextResponse:
    await _cluster(pool, name)
    payload: dict[str, Any] = {
        "cluster": name,
        "namespace": namespace,
        "pod": pod,
        "tail": tail,
        "previous": previous,
    }
    if container is not None:
        payload["container"] = container
    answer = await _ask(request, "pod_logs", payload)
    suffix = "-previous" if previous else ""
    return PlainTextResponse(
        "".join(line + "\n" for line in answer["lines"]),
        headers={
            "Content-Disposition": (
                f'attachment; filename="{namespace}-{pod}-{answer["container"]}{suffix}.log"'
            ),
            "X-Container": str(answer["container"]),
            "X-Containers": ",".join(answer.get("containers") or []),
            "X-Restart-Count": str(answer.get("restart_count", 0)),
            "X-Previous": "true" if previous else "false",
            "X-Truncated": "true" if answer.get("truncated") else "false",
        },
    )
