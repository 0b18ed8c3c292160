"""Task governance: teams (compute quotas), priorities and why a job is pending. Reads for every
token; changes need an admin token."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, reference
from mcp_svc.results import (
    PAGE,
    OperationStarted,
    Paged,
    PageLimit,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    rest_page_of,
)
from mcp_svc.tools.common import ClusterRef, DryRun, JobName, RequestId, count, submit
from mcp_svc.tools.inference import EndpointName
from shared.boundary import GOVERNED_NAME_PATTERN, api_path
from shared.contracts.governance import NewTeam, TaskGovernanceChange, TeamChange

TeamName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=40,
        pattern=GOVERNED_NAME_PATTERN,
        description="From list_teams",
    ),
]


class Teams(Paged):
    teams: Passthrough = Field(
        description="As REST answers it (docs/governance.md); its teams: this page, by name"
    )


class Pending(ToolResult):
    reason: str = Field(description="quota, capacity, inadmissible, priority_class_missing, ...")
    pending: bool = Field(description="false: the job is admitted or running")
    fixes: list[str] = Field(description="What would let the job run")
    facts: dict[str, Any] = Field(description="What the answer rests on")


def teams_summary(raw: dict[str, Any], total: int | None = None, note: str = "") -> str:
    governance = raw.get("task_governance") or {}
    if not governance.get("enabled"):
        return (
            f"{raw.get('cluster')}: task governance is off (add-on"
            f" {governance.get('addon_status') or 'absent'}); enable it with"
            " update_task_governance."
        )
    classes = ", ".join(
        f"{p['name']} {p['weight']}" for p in governance.get("priority_classes") or []
    )
    teams = raw.get("teams") or []

    def quota(team: dict[str, Any]) -> str:
        parts = [
            f"{r.get('count', r.get('accelerators', '?'))} {r['instance_type']}"
            + ("" if "count" in r else " GPUs")
            for r in team.get("resources") or []
        ]
        return f"{team['name']} ({', '.join(parts)}; {team.get('sharing')})"

    return (
        f"{raw.get('cluster')}: {count(len(teams) if total is None else total, 'team')}{note}"
        + (f": {'; '.join(quota(t) for t in teams)}" if teams else "")
        + f". Priority classes: {classes or 'none'}."
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="task governance", rest="GET /api/v1/clusters/{name}/teams")
    async def list_teams(
        cluster: ClusterRef, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> Teams:
        """Task governance of a cluster, read live: the add-on, priority classes (a job's
        priority), fair share and every team's quota, sharing and namespace."""
        teams, next_token, total, raw = await rest_page_of(
            gateway,
            api_path("clusters", cluster, "teams"),
            {},
            Passthrough,
            ("teams", lambda r: (r["name"],)),
            limit,
            page_token,
            items="teams",
        )
        raw = {**raw, "teams": [t.model_dump() for t in teams]}
        note = page_note(len(teams), total, page_token, next_token)
        return Teams(
            summary=teams_summary(raw, total, note),
            teams=Passthrough.model_validate(raw),
            total=total,
            next_page_token=next_token,
        )

    @server.read_tool(area="task governance", rest="GET /api/v1/clusters/{name}/jobs/{job}/pending")
    async def explain_pending(cluster: ClusterRef, job: JobName) -> Pending:
        """Why a job is pending: Kueue's admission, the team's quota and borrowing, others' idle
        quota, priorities, free GPUs per node, node health and events, with the fixes."""
        raw = await gateway.get(api_path("clusters", cluster, "jobs", job, "pending"))
        return Pending(
            summary=str(raw.get("summary")),
            reason=str(raw.get("reason")),
            pending=bool(raw.get("pending")),
            fixes=list(raw.get("fixes") or []),
            facts=dict(raw.get("facts") or {}),
        )

    @server.read_tool(
        area="task governance",
        rest="GET /api/v1/clusters/{name}/endpoints/{endpoint}/pending",
    )
    async def explain_endpoint_pending(cluster: ClusterRef, endpoint: EndpointName) -> Pending:
        """Why a team's self-managed endpoint has pods waiting: Kueue's admission of its pods
        (one Workload each), the team's quota and borrowing, free GPUs, with the fixes."""
        raw = await gateway.get(api_path("clusters", cluster, "endpoints", endpoint, "pending"))
        return Pending(
            summary=str(raw.get("summary")),
            reason=str(raw.get("reason")),
            pending=bool(raw.get("pending")),
            fixes=list(raw.get("fixes") or []),
            facts=dict(raw.get("facts") or {}),
        )

    @server.write_tool(
        area="task governance",
        rest="PATCH /api/v1/clusters/{name}/task-governance",
        body_param="change",
    )
    async def update_task_governance(
        cluster: ClusterRef,
        change: Annotated[
            TaskGovernanceChange,
            Field(description='Only what changes, e.g. {"enabled": true}'),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Enable or disable task governance (the EKS add-on, then the scheduler config), or
        change its priority classes, fair share and idle resource sharing. Admin token."""
        return await submit(
            gateway,
            tool="update_task_governance",
            arguments={"cluster": cluster, "change": change, "request_id": request_id},
            method="PATCH",
            path=api_path("clusters", cluster, "task-governance"),
            body=change.requested(),
            what=f"task governance change on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="task governance", rest="POST /api/v1/clusters/{name}/teams", body_param="team"
    )
    async def create_team(
        cluster: ClusterRef,
        team: Annotated[NewTeam, Field(description="The team and its quota per instance type")],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Create a team: a compute quota (instances or GPUs per instance type), lend/borrow,
        preemption, fair-share weight; its jobs go to namespace hyperpod-ns-<team>. Admin."""
        return await submit(
            gateway,
            tool="create_team",
            arguments={"cluster": cluster, "team": team, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "teams"),
            body=team.model_dump(mode="json", exclude_none=True),
            what=f"team {team.name} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="task governance",
        rest="PATCH /api/v1/clusters/{name}/teams/{team}",
        body_param="change",
    )
    async def update_team(
        cluster: ClusterRef,
        team: TeamName,
        change: Annotated[
            TeamChange, Field(description='Only what changes, e.g. {"sharing": "Lend"}')
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Change a team's quota, sharing, borrow limit, preemption, weight or activation.
        Admin token."""
        return await submit(
            gateway,
            tool="update_team",
            arguments={
                "cluster": cluster,
                "team": team,
                "change": change,
                "request_id": request_id,
            },
            method="PATCH",
            path=api_path("clusters", cluster, "teams", team),
            body=change.model_dump(mode="json", exclude_none=True),
            what=f"change of team {team} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="task governance",
        rest="DELETE /api/v1/clusters/{name}/teams/{team}",
        destructive=True,
    )
    async def delete_team(
        cluster: ClusterRef, team: TeamName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Delete a team's compute quota. Admin token; confirm with the user first."""
        return await submit(
            gateway,
            tool="delete_team",
            arguments={"cluster": cluster, "team": team, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", cluster, "teams", team),
            body=None,
            what=f"deletion of team {team} on {cluster}",
            dry_run=dry_run,
        )
