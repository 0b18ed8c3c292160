"""Cluster lifecycle: list, describe, create, import, select the active one, delete."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mcp_svc.client import Gateway
from mcp_svc.errors import GatewayError
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
from mcp_svc.tools.common import ClusterRef, DryRun, Region, RequestId, count, named, submit
from shared.boundary import api_path
from shared.contracts.cluster import ClusterSpec, ImportSpec


class ClusterRead(Passthrough):
    name: str = Field(description="Cluster name")
    region: str = Field(description="AWS region")
    status: str = Field(description="pending, creating, active, failed, deleting, imported, ...")
    managed: bool = Field(description="True when Hyperpilot created it (delete removes it)")
    active: bool = Field(description="The cluster commands without a cluster name use")
    eks_cluster_arn: str | None = Field(None, description="EKS cluster ARN")
    hyperpod_cluster_arn: str | None = Field(None, description="HyperPod cluster ARN")
    endpoint: str | None = Field(None, description="Kubernetes API server URL")
    operation_id: str | None = Field(None, description="The operation that created or imported it")
    spec: dict[str, Any] | None = Field(None, description="The cluster spec it was made from")
    created_at: str | None = Field(None, description="ISO 8601")
    updated_at: str | None = Field(None, description="ISO 8601")


class InstanceGroupRead(Passthrough):
    name: str = Field(description="Group name")
    instance_type: str = Field(description="e.g. ml.g5.8xlarge")
    count: int = Field(description="Instances asked for")
    status: str | None = Field(None, description="As HyperPod reports it")


class ComponentRead(Passthrough):
    name: str = Field(description="Component name")
    version: str | None = Field(None, description="Installed version")
    status: str | None = Field(None, description="e.g. installed, failed")
    message: str | None = Field(None, description="Why, when not installed")


class ClusterDescribed(ClusterRead):
    resources: dict[str, Any] | None = Field(None, description="What each create stage made")
    instance_groups: list[InstanceGroupRead] = Field([], description="Its groups")
    components: list[ComponentRead] = Field([], description="Installed dependencies")


class ClusterList(Paged):
    clusters: list[ClusterRead] = Field(description="This page, oldest first")
    active: str | None = Field(description="Name of the active cluster, if any")


class ClusterDescription(ToolResult):
    cluster: ClusterDescribed = Field(description="The cluster")


class ActiveCluster(ToolResult):
    cluster: ClusterRead | None = Field(description="The active cluster; null when none is")


class ActiveClusterSet(ToolResult):
    name: str = Field(description="The cluster now active")
    operation_id: None = Field(None, description="Switching is immediate: no operation")
    status_tool: Literal["get_active_cluster"] = Field(
        "get_active_cluster", description="Confirms it"
    )
    cluster: ClusterRead = Field(description="The cluster")


def with_region(spec: BaseModel, region: str | None) -> dict[str, Any]:
    """The REST body: the spec's fields as sent, and the region when one is given."""
    body: dict[str, Any] = spec.model_dump(mode="json", exclude_unset=True)
    return body if region is None else {**body, "region": region}


def _one_line(c: ClusterRead) -> str:
    return f"{c.name} ({c.status}{', active' if c.active else ''})"


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="clusters", rest="GET /api/v1/clusters")
    async def list_clusters(limit: PageLimit = PAGE, page_token: PageToken = None) -> ClusterList:
        """List the clusters Hyperpilot knows (created or imported) with their status; the
        active one is marked. Call this first, before creating anything."""
        clusters, next_token, total = await rest_page(
            gateway,
            "/api/v1/clusters",
            {},
            ClusterRead,
            ("clusters", lambda r: (r["created_at"], r["name"])),
            limit,
            page_token,
        )
        active = next((c.name for c in clusters if c.active), None)
        if active is None and total > len(clusters):  # on another page, or none is active
            try:
                found = await gateway.get("/api/v1/clusters/active")
            except GatewayError as exc:
                if exc.error.get("code") != "no_active_cluster":
                    raise
                found = None
            active = found.get("name") if isinstance(found, dict) else None
        if clusters:
            summary = (
                f"{count(total, 'cluster')}"
                f"{page_note(len(clusters), total, page_token, next_token)}: "
                + named([_one_line(c) for c in clusters])
            )
        else:
            summary = "No clusters yet." if not total else "No clusters after page_token."
        return ClusterList(
            summary=summary,
            clusters=clusters,
            active=active,
            total=total,
            next_page_token=next_token,
        )

    @server.read_tool(area="clusters", rest="GET /api/v1/clusters/{name}")
    async def get_cluster(name: ClusterRef) -> ClusterDescription:
        """Describe a cluster: status, region, ARNs, the resources each create stage made, its
        instance groups and installed components."""
        row = await gateway.get(api_path("clusters", name))
        cluster = ClusterDescribed.model_validate(row)
        groups = ", ".join(
            f"{g.name}: {g.count} x {g.instance_type} ({g.status})" for g in cluster.instance_groups
        )
        ready = sum(
            1 for c in cluster.components if c.status in ("installed", "upgraded", "unchanged")
        )
        summary = (
            f"Cluster {cluster.name} is {cluster.status} in {cluster.region}"
            f"{' (active)' if cluster.active else ''}; "
            f"{count(len(cluster.instance_groups), 'instance group')}{': ' + groups if groups else ''}; "
            f"{ready}/{len(cluster.components)} components installed."
        )
        return ClusterDescription(summary=summary, cluster=cluster)

    @server.read_tool(area="clusters", rest="GET /api/v1/clusters/active")
    async def get_active_cluster() -> ActiveCluster:
        """The active cluster: the one commands without a cluster name act on (null if none)."""
        try:
            row = await gateway.get("/api/v1/clusters/active")
        except GatewayError as exc:
            if exc.error.get("code") == "no_active_cluster":
                return ActiveCluster(
                    summary="No cluster is active; select one with set_active_cluster.",
                    cluster=None,
                )
            raise
        cluster = ClusterRead.model_validate(row)
        return ActiveCluster(
            summary=f"The active cluster is {cluster.name} ({cluster.status}).", cluster=cluster
        )

    @server.write_tool(area="clusters", rest="POST /api/v1/clusters", body_param="cluster")
    async def create_cluster(
        cluster: Annotated[
            ClusterSpec,
            Field(
                description="The cluster; its zone and instance types from"
                " list_availability_zones / list_instance_types"
            ),
        ],
        region: Region = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Create an EKS + HyperPod cluster (network, IAM, bucket, EKS, add-ons, HyperPod, storage)
        as one operation. Inspect first and ask the user only for zone, instance type, count and
        capacity type."""
        return await submit(
            gateway,
            tool="create_cluster",
            arguments={"cluster": cluster, "region": region, "request_id": request_id},
            method="POST",
            path="/api/v1/clusters",
            body=with_region(cluster, region),
            what=f"cluster {cluster.name}",
            dry_run=dry_run,
        )

    @server.write_tool(area="clusters", rest="POST /api/v1/clusters/import", body_param="cluster")
    async def import_cluster(
        cluster: Annotated[
            ImportSpec,
            Field(description="eks_cluster_name from list_account_clusters"),
        ],
        region: Region = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Import an existing EKS (and HyperPod) cluster so Hyperpilot can operate it. Deleting
        an imported cluster later only forgets it; nothing in AWS is removed."""
        return await submit(
            gateway,
            tool="import_cluster",
            arguments={"cluster": cluster, "region": region, "request_id": request_id},
            method="POST",
            path="/api/v1/clusters/import",
            body=with_region(cluster, region),
            what=f"import of {cluster.eks_cluster_name}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="clusters", rest="PUT /api/v1/clusters/active", status_tool="get_active_cluster"
    )
    async def set_active_cluster(name: ClusterRef) -> ActiveClusterSet:
        """Select the active cluster (an active or imported one): the cluster that commands
        without a cluster name act on. Takes effect at once; no operation is started."""
        row = await gateway.mutate(
            "PUT",
            "/api/v1/clusters/active",
            tool="set_active_cluster",
            arguments={"name": name},
            body={"name": name},
        )
        cluster = ClusterRead.model_validate(row)
        return ActiveClusterSet(
            summary=f"{cluster.name} is now the active cluster; confirm with get_active_cluster.",
            name=cluster.name,
            cluster=cluster,
        )

    @server.write_tool(area="clusters", rest="DELETE /api/v1/clusters/{name}", destructive=True)
    async def delete_cluster(
        name: ClusterRef, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Delete what Hyperpilot created for a cluster, in reverse dependency order (an imported
        cluster is only forgotten). Admin token; always confirm with the user first."""
        return await submit(
            gateway,
            tool="delete_cluster",
            arguments={"name": name, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", name),
            body=None,
            what=f"deletion of cluster {name}",
            dry_run=dry_run,
        )
