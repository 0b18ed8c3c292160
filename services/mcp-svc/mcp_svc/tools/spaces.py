"""Development spaces (JupyterLab, Code Editor) on a cluster: the caller's own, OwnerOnly."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import (
    PAGE,
    OperationStarted,
    Paged,
    PageLimit,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    rest_page,
)
from mcp_svc.tools.common import ClusterRef, DryRun, RequestId, count, named, submit
from shared.boundary import api_path
from shared.contracts.spaces import SPACE_NAME_PATTERN, SpaceChange, SpaceSpec

SpaceName = Annotated[
    str, Field(min_length=1, max_length=40, pattern=SPACE_NAME_PATTERN, description="Space")
]


class Space(Passthrough):
    name: str = Field(description="Space name")
    owner: str | None = Field(None, description="Its creator")
    status: str = Field(description="Running, Starting, Stopping, Stopped or Failed")
    port_forward: str | None = Field(None, description="For a local IDE")


class SpaceList(Paged):
    spaces: list[Space] = Field(description="This page, by name")


class SpaceTemplate(Passthrough):
    name: str = Field(description="Template name")


class SpaceTemplates(ToolResult):
    templates: list[SpaceTemplate] = Field(description="Defaults and bounds")


class SpaceDescription(ToolResult):
    space: Space = Field(description="The space")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="spaces", rest="GET /api/v1/clusters/{name}/spaces")
    async def list_spaces(
        cluster: ClusterRef, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> SpaceList:
        """The caller's spaces on a cluster (an admin's: all) with their status."""
        spaces, next_token, total = await rest_page(
            gateway,
            api_path("clusters", cluster, "spaces"),
            {},
            Space,
            ("spaces", lambda r: (r["name"],)),
            limit,
            page_token,
        )
        note = page_note(len(spaces), total, page_token, next_token)
        summary = f"{count(total, 'space')}{note}" + (
            ": " + named([f"{s.name} ({s.status})" for s in spaces]) if spaces else "."
        )
        return SpaceList(summary=summary, spaces=spaces, total=total, next_page_token=next_token)

    @server.read_tool(area="spaces", rest="GET /api/v1/clusters/{name}/space-templates")
    async def list_space_templates(cluster: ClusterRef) -> SpaceTemplates:
        """Space templates (create_space's template): defaults and bounds."""
        rows: list[dict[str, Any]] = await gateway.get(
            api_path("clusters", cluster, "space-templates")
        )
        found = [SpaceTemplate.model_validate(r) for r in rows]
        summary = f"{count(len(found), 'template')}" + (
            ": " + named([t.name for t in found]) if found else "."
        )
        return SpaceTemplates(summary=summary, templates=found)

    @server.read_tool(area="spaces", rest="GET /api/v1/clusters/{name}/spaces/{space}")
    async def get_space(cluster: ClusterRef, space: SpaceName) -> SpaceDescription:
        """A space: settings, status, gateway URL, port-forward command."""
        found = Space.model_validate(
            await gateway.get(api_path("clusters", cluster, "spaces", space))
        )
        return SpaceDescription(summary=f"Space {found.name} is {found.status}.", space=found)

    @server.write_tool(
        area="spaces", rest="POST /api/v1/clusters/{name}/spaces", body_param="space"
    )
    async def create_space(
        cluster: ClusterRef,
        space: Annotated[
            SpaceSpec,
            Field(description="name, app_type, image, cpu, memory, gpu, volumes, template"),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Create a space the caller owns; ask for GPUs, never infer them."""
        return await submit(
            gateway,
            tool="create_space",
            arguments={"cluster": cluster, "space": space, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "spaces"),
            body=space.model_dump(mode="json", exclude_none=True),
            what=f"space {space.name}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="spaces", rest="PATCH /api/v1/clusters/{name}/spaces/{space}", body_param="change"
    )
    async def update_space(
        cluster: ClusterRef,
        space: SpaceName,
        change: Annotated[SpaceChange, Field(description="Only what changes")],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Change a space's image, resources, volumes or idle shutdown."""
        return await submit(
            gateway,
            tool="update_space",
            arguments={
                "cluster": cluster,
                "space": space,
                "change": change,
                "request_id": request_id,
            },
            method="PATCH",
            path=api_path("clusters", cluster, "spaces", space),
            body=change.requested(),
            what=f"space {space}",
            dry_run=dry_run,
        )

    @server.write_tool(area="spaces", rest="POST /api/v1/clusters/{name}/spaces/{space}/start")
    async def set_space_status(
        cluster: ClusterRef,
        space: SpaceName,
        action: Annotated[Literal["start", "stop"], Field(description="start or stop")],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Start or stop a space (POST .../start or .../stop)."""
        return await submit(
            gateway,
            tool="set_space_status",
            arguments={
                "cluster": cluster,
                "space": space,
                "action": action,
                "request_id": request_id,
            },
            method="POST",
            path=api_path("clusters", cluster, "spaces", space, action),
            body=None,
            what=f"space {space}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="spaces", rest="DELETE /api/v1/clusters/{name}/spaces/{space}", destructive=True
    )
    async def delete_space(
        cluster: ClusterRef, space: SpaceName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Delete a space; confirm with the user first."""
        return await submit(
            gateway,
            tool="delete_space",
            arguments={"cluster": cluster, "space": space, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", cluster, "spaces", space),
            body=None,
            what=f"space {space}",
            dry_run=dry_run,
        )
