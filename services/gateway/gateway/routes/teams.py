"""Task governance of a cluster: the feature (the task-governance EKS add-on and the scheduler
config: priority classes, fair share, idle resource sharing), its teams (SageMaker compute
quotas) and why a job is pending.

Viewers read; only admins change task governance and teams. Every mutation is an operation
carried out by cluster-svc and accepts `?dry_run=true` (the plan computed from actual state);
a rule that needs actual state (task governance enabled, instance types the cluster runs) is a
422 naming the field, the rule and the fix. Shapes in shared/contracts/governance.py,
described in docs/governance.md.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse

from gateway import pages, records
from gateway.accept import on_cluster, refusal_mapper
from gateway.deps import AdminMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS, ok
from gateway.routing import PrefixedRoute
from shared.boundary import GOVERNED_NAME_PATTERN
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.governance import (
    CreateTeam,
    DeleteTeam,
    GovernanceTarget,
    NewTeam,
    PendingExplanation,
    TaskGovernanceChange,
    TeamChange,
    UpdateTaskGovernance,
    UpdateTeam,
)
from shared.contracts.inference import (
    ENDPOINT_NAME_PATTERN,
    SELF_MANAGED_KINDS,
    workers_deployment,
)
from shared.contracts.workloads import JOB_NAME_PATTERN

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/clusters",
    tags=["task governance"],
    responses=LIVE_READ_ERRORS,
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
TeamPath = Annotated[str, Path(min_length=1, max_length=40, pattern=GOVERNED_NAME_PATTERN)]
JobNamePath = Annotated[str, Path(min_length=1, max_length=40, pattern=JOB_NAME_PATTERN)]
PURPOSE = "task governance runs on an active or imported cluster"
REFUSAL = refusal_mapper(
    conflicts=frozenset(
        {
            "TeamExists",
            "TeamsExist",
            "AddonFailed",
            "ClusterNotInService",
            "SchedulerConfigFailed",
            "ComputeQuotaFailed",
        }
    ),
    missing=frozenset({"TeamNotFound"}),
)


def target(cluster: records.ClusterRecord) -> GovernanceTarget:
    """Where the cluster's task governance lives: its EKS and HyperPod clusters."""
    cluster.usable(PURPOSE)
    names = cluster.feature_target()
    if names.hyperpod_cluster is None:
        raise ApiError(
            409,
            "no_hyperpod_cluster",
            f"cluster {cluster.name} has no HyperPod cluster; task governance runs on one",
            hint="import the cluster again with hyperpod_cluster_name",
        )
    return GovernanceTarget(
        cluster=cluster.name,
        region=cluster.region,
        eks_cluster=names.eks_cluster,
        hyperpod_cluster=names.hyperpod_cluster,
        bucket=names.bucket,
    )


@router.get(
    "/{name}/teams",
    response_model=None,
    responses={**pages.paged(), **pages.BAD_TOKEN},
    summary="Task governance (add-on, priority classes, fair share) and the teams' quotas, read"
    " live; `teams` holds a page of them, by name",
)
async def list_teams(
    name: ClusterNamePath,
    request: Request,
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> Any:
    pages.key_of("teams", page_token, 1)  # a bad token is refused before the live read
    cluster = await records.cluster(pool, name)
    found: dict[str, Any] = await query(
        request.app.state.bus,
        "cluster",
        "teams",
        {"target": target(cluster).model_dump(mode="json")},
    )
    # The compute quotas are read whole from SageMaker (ListComputeQuotas pages by its own
    # NextToken inside cluster-svc); a team's name is unique on its cluster, so it is the key.
    found["teams"] = pages.send_read(
        response, "teams", found.get("teams") or [], limit, page_token, lambda t: (t["name"],)
    )
    return found


@router.patch(
    "/{name}/task-governance",
    status_code=202,
    responses=ACCEPTED,
    summary="Enable or disable task governance, or change its priority classes, fair share"
    " and idle resource sharing: send only what changes",
)
async def update_task_governance(
    name: ClusterNamePath,
    body: TaskGovernanceChange,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        UpdateTaskGovernance,
        lambda c: UpdateTaskGovernance(target=target(c), change=body),
        requested=body.requested(),
        target=("cluster", name),
        refusal=REFUSAL,
    )


@router.post(
    "/{name}/teams",
    status_code=202,
    responses=ACCEPTED,
    summary="Create a team: a compute quota per instance type, lend/borrow, preemption, fair"
    " share weight; its namespace is hyperpod-ns-<team>",
)
async def create_team(
    name: ClusterNamePath, body: NewTeam, request: Request, mutation: AdminMutation
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        CreateTeam,
        lambda c: CreateTeam(target=target(c), team=body),
        requested=body.model_dump(mode="json", exclude_none=True),
        target=("team", f"{name}/{body.name}"),
        refusal=REFUSAL,
    )


@router.patch(
    "/{name}/teams/{team}",
    status_code=202,
    responses=ACCEPTED,
    summary="Change a team's quota or sharing: send only what changes",
)
async def update_team(
    name: ClusterNamePath,
    team: TeamPath,
    body: TeamChange,
    request: Request,
    mutation: AdminMutation,
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        UpdateTeam,
        lambda c: UpdateTeam(target=target(c), team=team, change=body),
        requested=body.model_dump(mode="json", exclude_none=True),
        target=("team", f"{name}/{team}"),
        refusal=REFUSAL,
    )


@router.delete(
    "/{name}/teams/{team}",
    status_code=202,
    responses=ACCEPTED,
    summary="Delete a team (its compute quota)",
)
async def delete_team(
    name: ClusterNamePath, team: TeamPath, request: Request, mutation: AdminMutation
) -> JSONResponse:
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        DeleteTeam,
        lambda c: DeleteTeam(target=target(c), team=team),
        requested={"team": team},
        target=("team", f"{name}/{team}"),
        refusal=REFUSAL,
    )


@router.get(
    "/{name}/jobs/{job}/pending",
    response_model=None,
    responses=ok(PendingExplanation),
    summary="Why is the job pending? Kueue's admission, the team's quota and borrowing, free"
    " GPUs per node, node health and events, joined into an answer with the fixes",
)
async def explain_pending(
    name: ClusterNamePath, job: JobNamePath, request: Request, pool: Pool, _: Viewer
) -> Any:
    cluster = await records.cluster(pool, name)
    found = await records.job(pool, name, job)
    return await _explain(
        request, cluster, found.name, found.namespace, found.kind, found.api_version
    )


async def _explain(
    request: Request,
    cluster: records.ClusterRecord,
    workload: str,
    namespace: str,
    kind: str,
    api_version: str,
) -> Any:
    """cluster-svc's pending explainer for one workload object (a job, or an endpoint's
    workers' Deployment)."""
    return await query(
        request.app.state.bus,
        "cluster",
        "pending",
        {
            "target": target(cluster).model_dump(mode="json"),
            "job": {
                "name": workload,
                "namespace": namespace,
                "kind": kind,
                "api_version": api_version,
            },
        },
        timeout=20.0,
    )


EndpointNamePath = Annotated[str, Path(min_length=1, max_length=40, pattern=ENDPOINT_NAME_PATTERN)]


def _workers(record: records.EndpointRecord) -> str:
    """The endpoint's workers' Deployment (the object Kueue queues, pod by pod), named as the
    endpoint's deploy names it: known before the deploy finishes, which a pending one never
    does."""
    if record.kind in SELF_MANAGED_KINDS:
        return workers_deployment(record.name, record.kind)
    raise ApiError(
        409,
        "not_governed",
        f"endpoint {record.name} ({record.kind}) has no Deployment of its own that Kueue queues:"
        " only self-managed endpoints (container, sglang) take a team",
        hint=f"GET /api/v1/endpoints/{record.name}?cluster={record.cluster}",
    )


@router.get(
    "/{name}/endpoints/{endpoint}/pending",
    response_model=None,
    responses=ok(PendingExplanation),
    summary="Why are the endpoint's pods pending? Kueue's admission of its pods, the team's"
    " quota and borrowing, free GPUs per node, node health and events, with the fixes",
)
async def explain_endpoint_pending(
    name: ClusterNamePath, endpoint: EndpointNamePath, request: Request, pool: Pool, _: Viewer
) -> Any:
    cluster = await records.cluster(pool, name)
    found = await records.endpoint(pool, name, endpoint)
    return await _explain(
        request, cluster, _workers(found), found.namespace, "Deployment", "apps/v1"
    )
