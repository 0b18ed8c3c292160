"""Amazon Managed Grafana workspaces (moto has no grafana backend): CreateWorkspace,
DescribeWorkspace, ListWorkspaces, DeleteWorkspace, as the API reference answers them
(https://docs.aws.amazon.com/grafana/latest/APIReference/API_CreateWorkspace.html and
API_WorkspaceDescription.html: status CREATING then ACTIVE, DELETING then gone; the
workspace's endpoint `g-<id>.grafana-workspace.<region>.amazonaws.com`). Requests are checked
against botocore's model before they get here (sim.aws.validation)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from sim.aws.clock import utcnow
from sim.aws.context import SimContext
from sim.aws.errors import AwsError

Handler = Callable[[dict[str, Any]], dict[str, Any]]
GRAFANA_VERSION = "10.4"


class Grafana:
    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.workspaces: dict[str, dict[str, Any]] = {}

    def operations(self) -> dict[str, Handler]:
        return {
            "CreateWorkspace": self.create,
            "DescribeWorkspace": self.describe,
            "ListWorkspaces": self.list,
            "DeleteWorkspace": self.delete,
        }

    def _found(self, workspace_id: str) -> dict[str, Any]:
        found = self.workspaces.get(workspace_id)
        if found is None:
            raise AwsError(
                "ResourceNotFoundException", f"Workspace {workspace_id} does not exist.", 404
            )
        return found

    def create(self, p: dict[str, Any]) -> dict[str, Any]:
        workspace_id = "g-" + secrets.token_hex(5)
        now = utcnow()
        region = self.ctx.region
        workspace = {
            "id": workspace_id,
            "name": p.get("workspaceName"),
            "description": p.get("workspaceDescription"),
            "accountAccessType": p["accountAccessType"],
            "permissionType": p["permissionType"],
            "authentication": {"providers": list(p["authenticationProviders"])},
            "dataSources": list(p.get("workspaceDataSources") or []),
            "endpoint": f"{workspace_id}.grafana-workspace.{region}.amazonaws.com",
            "grafanaVersion": p.get("grafanaVersion") or GRAFANA_VERSION,
            "status": "CREATING",
            "created": now,
            "modified": now,
            "workspaceRoleArn": p.get("workspaceRoleArn"),
            "tags": dict(p.get("tags") or {}),
        }
        self.workspaces[workspace_id] = workspace

        def ready() -> None:
            if workspace.get("status") == "CREATING":
                workspace["status"] = "ACTIVE"
                workspace["modified"] = utcnow()

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, ready)
        return {"workspace": dict(workspace)}

    def describe(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"workspace": dict(self._found(str(p["workspaceId"])))}

    def list(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "workspaces": [
                {
                    k: w[k]
                    for k in (
                        "id",
                        "name",
                        "endpoint",
                        "grafanaVersion",
                        "status",
                        "created",
                        "modified",
                        "authentication",
                        "tags",
                    )
                }
                for w in self.workspaces.values()
            ]
        }

    def delete(self, p: dict[str, Any]) -> dict[str, Any]:
        workspace_id = str(p["workspaceId"])
        found = self._found(workspace_id)
        found["status"] = "DELETING"

        def gone() -> None:
            self.workspaces.pop(workspace_id, None)

        self.ctx.scheduler.after(self.ctx.profile.eks_addon_install, gone)
        return {"workspace": dict(found)}
