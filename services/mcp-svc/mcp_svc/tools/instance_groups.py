"""Instance groups of a cluster: list, add, change (explicit diff), delete; software updates."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, listed_as
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
from mcp_svc.tools.common import ClusterRef, DryRun, GroupName, RequestId, count, named, submit
from shared.boundary import api_path
from shared.contracts.cluster import InstanceGroupSpec
from shared.contracts.instance_groups import (
    InstanceGroupChange,
    NewInstanceGroup,
    SoftwareUpdateSpec,
)

# add_instance_group's group is create_cluster's instance group and one field more: listed by
# name here, its schema once (with create_cluster).
_MORE = sorted(set(NewInstanceGroup.model_fields) - set(InstanceGroupSpec.model_fields))
GROUP_LISTED = (
    "The group, as an item of create_cluster's cluster.instance_groups (name, instance_type"
    " from list_instance_types and count required; the zone, capacity_type and"
    f" interface_type fixed for its life), and {', '.join(_MORE)}: the S3 prefix of its"
    " lifecycle scripts, the cluster's if omitted"
)


class InstanceGroup(Passthrough):
    name: str = Field(description="Group name")
    instance_type: str = Field(description="e.g. ml.g5.8xlarge")
    count: int = Field(description="Instances asked for")
    status: str | None = Field(None, description="As HyperPod reports it")
    spec: dict[str, Any] | None = Field(None, description="The group's spec")
    updated_at: str | None = Field(None, description="ISO 8601")


class InstanceGroupList(Paged):
    cluster: str = Field(description="The cluster read")
    instance_groups: list[InstanceGroup] = Field(description="This page, by name")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="instance groups", rest="GET /api/v1/clusters/{name}/instance-groups")
    async def list_instance_groups(
        cluster: ClusterRef, limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> InstanceGroupList:
        """List a cluster's instance groups: type, count, status and the spec each was made
        with. Read it before adding or changing a group."""
        groups, next_token, total = await rest_page(
            gateway,
            api_path("clusters", cluster, "instance-groups"),
            {},
            InstanceGroup,
            ("instance-groups", lambda r: (r["name"],)),
            limit,
            page_token,
        )
        note = page_note(len(groups), total, page_token, next_token)
        summary = f"{cluster}: {count(total, 'instance group')}{note}" + (
            ": " + named([f"{g.name} {g.count} x {g.instance_type} ({g.status})" for g in groups])
            if groups
            else "."
        )
        return InstanceGroupList(
            summary=summary,
            cluster=cluster,
            instance_groups=groups,
            total=total,
            next_page_token=next_token,
        )

    @server.write_tool(
        area="instance groups",
        rest="POST /api/v1/clusters/{name}/instance-groups",
        body_param="group",
    )
    async def add_instance_group(
        cluster: ClusterRef,
        group: Annotated[
            NewInstanceGroup,
            Field(
                description="The group: name, instance_type (list_instance_types), count; zone,"
                " capacity_type and interface_type are fixed for its life",
                json_schema_extra=listed_as(GROUP_LISTED),
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Add an instance group to an active cluster (its /20 subnet found or made in the zone).
        Ask the user for instance type, count, zone and capacity type; check offerings and quota
        first."""
        return await submit(
            gateway,
            tool="add_instance_group",
            arguments={"cluster": cluster, "group": group, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "instance-groups"),
            body=group.model_dump(mode="json", exclude_unset=True),
            what=f"instance group {group.name} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="instance groups",
        rest="PATCH /api/v1/clusters/{name}/instance-groups/{group}",
        body_param="change",
    )
    async def update_instance_group(
        cluster: ClusterRef,
        group: GroupName,
        change: Annotated[
            InstanceGroupChange,
            Field(description='Only the fields to change, e.g. {"count": 4} to scale'),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Change an instance group by explicit diff (scale by count). Instance type, capacity type
        and EFA mode are fixed for its life; a change that matches actual state is a no-op."""
        return await submit(
            gateway,
            tool="update_instance_group",
            arguments={
                "cluster": cluster,
                "group": group,
                "change": change,
                "request_id": request_id,
            },
            method="PATCH",
            path=api_path("clusters", cluster, "instance-groups", group),
            body=change.model_dump(mode="json", exclude_unset=True),
            what=f"change of instance group {group} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="instance groups",
        rest="DELETE /api/v1/clusters/{name}/instance-groups/{group}",
        destructive=True,
    )
    async def delete_instance_group(
        cluster: ClusterRef, group: GroupName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Delete an instance group: its nodes are terminated. Needs an admin token; confirm
        with the user first."""
        return await submit(
            gateway,
            tool="delete_instance_group",
            arguments={"cluster": cluster, "group": group, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", cluster, "instance-groups", group),
            body=None,
            what=f"deletion of instance group {group} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="instance groups",
        rest="POST /api/v1/clusters/{name}/software-update",
        body_param="update",
    )
    async def update_cluster_software(
        cluster: ClusterRef,
        update: Annotated[
            SoftwareUpdateSpec,
            Field(description="Groups, AMI and batches; {} updates every group to the latest"),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Update the nodes' software (UpdateClusterSoftware) with a rolling deployment, batch
        by batch. Nodes restart: confirm the window with the user."""
        return await submit(
            gateway,
            tool="update_cluster_software",
            arguments={"cluster": cluster, "update": update, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "software-update"),
            body=update.model_dump(mode="json", exclude_unset=True),
            what=f"software update of {cluster}",
            dry_run=dry_run,
        )
