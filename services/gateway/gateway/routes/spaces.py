"""Development spaces on a cluster (JupyterLab or Code Editor, through the SageMaker Spaces
add-on): create, list, describe, update, start, stop, delete, and open.

A space is OwnerOnly: its creator (the token's principal, recorded on the Workspace as
`workspace.jupyter.org/created-by`) is the only one who reads, opens or changes it; an admin
lists, stops and deletes anyone's. Mutations need the operator role and are operations (202)
carried out by workload-svc, with `?dry_run=true`. Opening goes through the gateway: the
space's page is fetched by workload-svc through the API server's service proxy and answered
here, authorized by the caller's token; no port is opened. A local IDE connects with the
port-forward command the space's description carries. Shapes in shared/contracts/spaces.py,
described in docs/spaces.md.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request
from fastapi.responses import JSONResponse, Response

from gateway import pages, records
from gateway.accept import on_cluster, refusal_mapper
from gateway.auth import Principal
from gateway.deps import Mutation, OperatorMutation, Viewer
from gateway.errors import ApiError
from gateway.queries import query
from gateway.routes.cluster_storage import checked_volumes
from gateway.routes.models import ACCEPTED, LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.commands import Command
from shared.contracts.spaces import (
    SPACE_NAME_PATTERN,
    CreateSpace,
    DeleteSpace,
    SetSpaceStatus,
    SpaceChange,
    SpaceSpec,
    UpdateSpace,
)

router = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/clusters", tags=["spaces"])

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]
SpacePath = Annotated[str, Path(min_length=1, max_length=40, pattern=SPACE_NAME_PATTERN)]
PURPOSE = "spaces run on an active or imported cluster"
REFUSAL = refusal_mapper(
    invalid=("InvalidSpace", "space_rule"),
    conflicts=frozenset(
        {"SpaceExists", "OperatorMissing", "ClusterNotReady", "SpaceNotRunning", "SpaceUnavailable"}
    ),
    missing=frozenset({"SpaceNotFound", "ClusterNotFound"}),
)


async def _space(request: Request, cluster: str, space: str) -> dict[str, Any]:
    found: dict[str, Any] = await query(
        request.app.state.bus, "workload", "space", {"cluster": cluster, "name": space}
    )
    return found


def _owner_only(space: dict[str, Any], principal: Principal, *, admin_may: bool) -> None:
    """Refused unless the caller owns the space (or, where `admin_may`, is an admin)."""
    if space.get("owner") == principal.name or (admin_may and principal.allows("admin")):
        return
    raise ApiError(
        403,
        "not_space_owner",
        f"space {space['name']} is OwnerOnly and belongs to {space.get('owner')!r}, not to"
        f" token {principal.name!r}",
        hint="open your own space, or create one (POST /api/v1/clusters/{name}/spaces)",
    )


def _usable_then(cluster: records.ClusterRecord, command: Command) -> Command:
    cluster.usable(PURPOSE)
    return command


async def _on_space(
    request: Request,
    mutation: Mutation,
    cluster: str,
    space: str,
    kind: type[Command],
    command: Command,
    requested: dict[str, Any],
    *,
    admin_may: bool,
) -> JSONResponse:
    _owner_only(await _space(request, cluster, space), mutation.principal, admin_may=admin_may)
    return await on_cluster(
        request.app.state.bus,
        mutation,
        cluster,
        kind,
        lambda c: _usable_then(c, command),
        requested=requested,
        target=("space", f"{cluster}/{space}"),
        refusal=REFUSAL,
    )


@router.get(
    "/{name}/spaces",
    summary="The cluster's spaces you own (an admin: every space), by name, a page at a time",
    responses={**LIVE_READ_ERRORS, **pages.paged(), **pages.BAD_TOKEN},
)
async def list_spaces(
    name: ClusterNamePath,
    request: Request,
    principal: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> Any:
    pages.key_of("spaces", page_token, 1)  # a bad token is refused before the live read
    await records.cluster(request.app.state.pool, name)
    found: list[dict[str, Any]] = await query(
        request.app.state.bus, "workload", "spaces", {"cluster": name}
    )
    if not principal.allows("admin"):
        found = [s for s in found if s.get("owner") == principal.name]
    # Read live from the cluster's Workspaces, all in one namespace: the name is the key.
    return pages.send_read(response, "spaces", found, limit, page_token, lambda s: (s["name"],))


@router.post(
    "/{name}/spaces",
    status_code=202,
    responses=ACCEPTED,
    summary="Create a space (JupyterLab or Code Editor) with CPU/GPU/memory, the cluster's"
    " storage claims mounted and idle shutdown; you own it",
)
async def create_space(
    name: ClusterNamePath,
    spec: Annotated[SpaceSpec, Body()],
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    await records.cluster(mutation.pool, name)  # an unknown cluster is 404, not a claim's 422
    await checked_volumes(mutation.pool, name, spec.volumes)
    return await on_cluster(
        request.app.state.bus,
        mutation,
        name,
        CreateSpace,
        lambda c: CreateSpace(
            cluster=c.usable(PURPOSE).name, owner=mutation.principal.name, spec=spec
        ),
        requested=spec.model_dump(mode="json", exclude_unset=True),
        target=("space", f"{name}/{spec.name}"),
        refusal=REFUSAL,
    )


@router.get(
    "/{name}/space-templates",
    summary="The cluster's space templates (WorkspaceTemplate): defaults and bounds",
    responses=LIVE_READ_ERRORS,
)
async def list_space_templates(name: ClusterNamePath, request: Request, _: Viewer) -> Any:
    await records.cluster(request.app.state.pool, name)
    return await query(request.app.state.bus, "workload", "space_templates", {"cluster": name})


@router.get(
    "/{name}/spaces/{space}",
    summary="A space: settings, status, URL, port-forward",
    responses=LIVE_READ_ERRORS,
)
async def describe_space(
    name: ClusterNamePath, space: SpacePath, request: Request, principal: Viewer
) -> Any:
    found = await _space(request, name, space)
    _owner_only(found, principal, admin_may=True)
    return found


@router.patch(
    "/{name}/spaces/{space}",
    status_code=202,
    responses=ACCEPTED,
    summary="Change a space's image, CPU, memory, GPUs, volumes or idle shutdown: only what"
    " changes",
)
async def update_space(
    name: ClusterNamePath,
    space: SpacePath,
    change: Annotated[SpaceChange, Body()],
    request: Request,
    mutation: OperatorMutation,
) -> JSONResponse:
    if change.volumes:
        await checked_volumes(mutation.pool, name, change.volumes)
    command = UpdateSpace(cluster=name, name=space, change=change)
    return await _on_space(
        request, mutation, name, space, UpdateSpace, command, change.requested(), admin_may=False
    )


async def _set_status(
    request: Request, mutation: Mutation, name: str, space: str, desired: str
) -> JSONResponse:
    """Start (owner only) or stop (owner or admin) a space."""
    command = SetSpaceStatus(cluster=name, name=space, desired=desired)
    return await _on_space(
        request,
        mutation,
        name,
        space,
        SetSpaceStatus,
        command,
        {"desired_status": desired},
        admin_may=desired == "Stopped",
    )


@router.post("/{name}/spaces/{space}/start", status_code=202, responses=ACCEPTED)
async def start_space(
    name: ClusterNamePath, space: SpacePath, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    """Start a stopped space and wait until it is Running."""
    return await _set_status(request, mutation, name, space, "Running")


@router.post("/{name}/spaces/{space}/stop", status_code=202, responses=ACCEPTED)
async def stop_space(
    name: ClusterNamePath, space: SpacePath, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    """Stop a space (its pod goes; its settings and volumes stay)."""
    return await _set_status(request, mutation, name, space, "Stopped")


@router.delete("/{name}/spaces/{space}", status_code=202, responses=ACCEPTED)
async def delete_space(
    name: ClusterNamePath, space: SpacePath, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    """Delete a space: its Workspace, pod and Service; the claims it mounted stay."""
    command = DeleteSpace(cluster=name, name=space)
    return await _on_space(
        request, mutation, name, space, DeleteSpace, command, {"delete": True}, admin_may=True
    )


@router.get(
    "/{name}/spaces/{space}/lab/{path:path}",
    summary="The space's web app, through the gateway, for its owner only",
    response_class=Response,
    responses=LIVE_READ_ERRORS,
)
async def open_space(
    name: ClusterNamePath, space: SpacePath, path: str, request: Request, principal: Viewer
) -> Response:
    found = await _space(request, name, space)
    _owner_only(found, principal, admin_may=False)
    if len(path) > 1000:
        raise ApiError(
            422, "validation_error", "path is longer than 1000 characters", hint="shorten it"
        )
    try:
        answer: dict[str, Any] = await query(
            request.app.state.bus,
            "workload",
            "space_http",
            {"cluster": name, "name": space, "path": path},
            timeout=35.0,
        )
    except ApiError as exc:
        raise REFUSAL(exc) from None
    return Response(
        content=str(answer.get("body") or ""),
        status_code=int(answer.get("status") or 502),
        media_type=str(answer.get("content_type") or "text/plain"),
        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )
