"""A cluster's dependencies: the declared component set (EKS add-ons and Kubernetes manifests),
what is installed, and a reconcile on demand."""

from __future__ import annotations

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
    page_note,
    rest_page,
)
from mcp_svc.tools.common import ClusterRef, DryRun, RequestId, count, submit
from shared.boundary import api_path

READY = ("installed", "upgraded", "unchanged")


class Component(Passthrough):
    name: str = Field(description="Component name")
    version: str | None = Field(None, description="Installed version")
    status: str | None = Field(None, description="e.g. installed, failed")
    updated_at: str | None = Field(None, description="ISO 8601")


class ComponentList(Paged):
    cluster: str = Field(description="The cluster read")
    components: list[Component] = Field(description="This page, by name")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="dependencies", rest="GET /api/v1/clusters/{name}/dependencies")
    async def list_dependencies(
        cluster: ClusterRef, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> ComponentList:
        """Each dependency component of a cluster (EKS add-ons, the HyperPod Helm chart's
        parts, storage drivers, ...) with its version and status."""
        components, next_token, total = await rest_page(
            gateway,
            api_path("clusters", cluster, "dependencies"),
            {},
            Component,
            ("dependencies", lambda r: (r["name"],)),
            limit,
            page_token,
        )
        pending = [c.name for c in components if c.status not in READY]
        where = " on this page" if page_token or next_token else ""
        summary = (
            f"{cluster}: {count(total, 'component')}"
            f"{page_note(len(components), total, page_token, next_token)}"
            + (
                f"; not ready{where}: {', '.join(pending[:20])}."
                if pending
                else f", all installed{where}."
            )
        )
        return ComponentList(
            summary=summary,
            cluster=cluster,
            components=components,
            total=total,
            next_page_token=next_token,
        )

    @server.write_tool(
        area="dependencies", rest="POST /api/v1/clusters/{name}/dependencies/reconcile"
    )
    async def reconcile_dependencies(
        cluster: ClusterRef, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Install or upgrade the components of a Hyperpilot-created cluster that differ from the
        declared set. Pass a new request_id to reconcile again after a finished run."""
        return await submit(
            gateway,
            tool="reconcile_dependencies",
            arguments={"cluster": cluster, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "dependencies", "reconcile"),
            body=None,
            what=f"dependency reconcile of {cluster}",
            dry_run=dry_run,
        )
