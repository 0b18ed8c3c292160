"""Instance groups of a cluster: list, add, change (explicit diff), delete; software updates."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import OperationStarted, Passthrough, ToolResult
from mcp_svc.tools.common import (
    ClusterRef,
    DryRun,
    GroupName,
    RequestId,
    body_of,
    count,
    submit,
)
from shared.boundary import api_path
from shared.contracts.cluster import (
    ML_INSTANCE_PATTERN,
    TRAINING_PLAN_ARN_PATTERN,
    CapacityType,
    ClusterName,
    DeepHealthCheck,
    InterfaceType,
    Taint,
    ZoneId,
)
from shared.contracts.instance_groups import LIFECYCLE_URI_PATTERN, BatchSize

Labels = Annotated[
    dict[str, str] | None, Field(description="Kubernetes labels of the nodes (the whole map)")
]
Taints = Annotated[list[Taint] | None, Field(max_length=50, description="Kubernetes taints")]
HealthChecks = Annotated[
    list[DeepHealthCheck] | None,
    Field(description="Deep health checks new nodes pass before accepting work"),
]


class InstanceGroup(Passthrough):
    name: str = Field(description="Group name")
    instance_type: str = Field(description="e.g. ml.g5.8xlarge")
    count: int = Field(description="Instances asked for")
    status: str | None = Field(None, description="As HyperPod reports it")
    spec: dict[str, Any] | None = Field(None, description="The group's spec")
    updated_at: str | None = Field(None, description="ISO 8601")


class InstanceGroupList(ToolResult):
    cluster: str = Field(description="The cluster read")
    instance_groups: list[InstanceGroup] = Field(description="Its groups")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="instance groups", rest="GET /api/v1/clusters/{name}/instance-groups")
    async def list_instance_groups(cluster: ClusterRef) -> InstanceGroupList:
        """List a cluster's instance groups: type, count, status and the spec each was made
        with. Read it before adding or changing a group."""
        rows = await gateway.get(api_path("clusters", cluster, "instance-groups"))
        groups = [InstanceGroup.model_validate(r) for r in rows]
        summary = f"{cluster}: {count(len(groups), 'instance group')}" + (
            ": " + ", ".join(f"{g.name} {g.count} x {g.instance_type} ({g.status})" for g in groups)
            if groups
            else "."
        )
        return InstanceGroupList(summary=summary, cluster=cluster, instance_groups=groups)

    @server.write_tool(area="instance groups", rest="POST /api/v1/clusters/{name}/instance-groups")
    async def add_instance_group(
        cluster: ClusterRef,
        name: Annotated[ClusterName, Field(description="Name of the new instance group")],
        instance_type: Annotated[
            str,
            Field(
                pattern=ML_INSTANCE_PATTERN,
                description="HyperPod instance type offered in the zone (list_instance_types)",
            ),
        ],
        count: Annotated[int, Field(ge=0, le=6758, description="Instances to run now")],
        availability_zone_id: Annotated[
            ZoneId | None,
            Field(
                description="Zone id of the group's /20 compute subnet; the cluster's if omitted"
            ),
        ] = None,
        capacity_type: Annotated[
            CapacityType,
            Field(description="on-demand, spot or training-plan: fixed for the group's life"),
        ] = CapacityType.ON_DEMAND,
        training_plan_arn: Annotated[
            str | None,
            Field(
                pattern=TRAINING_PLAN_ARN_PATTERN,
                description="Required with capacity_type training-plan (list_training_plans)",
            ),
        ] = None,
        interface_type: Annotated[
            InterfaceType, Field(description="efa or efa-only: fixed for the group's life")
        ] = InterfaceType.EFA,
        min_count: Annotated[
            int | None, Field(ge=0, le=6758, description="Fewest instances to keep (autoscaling)")
        ] = None,
        ebs_volume_gb: Annotated[
            int, Field(ge=1, le=16384, description="Extra EBS volume per instance, GB")
        ] = 500,
        threads_per_core: Annotated[
            Literal[1, 2], Field(description="1 disables hyperthreading")
        ] = 1,
        deep_health_checks: HealthChecks = None,
        labels: Labels = None,
        taints: Taints = None,
        lifecycle_script_uri: Annotated[
            str | None,
            Field(
                pattern=LIFECYCLE_URI_PATTERN,
                description="S3 prefix of the group's lifecycle scripts; the cluster's if omitted",
            ),
        ] = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Add an instance group to an active cluster in one create-time operation: type,
        count, zone (a /20 compute subnet is found or made there), capacity type, EFA mode,
        storage, health checks, labels and taints. Ask the user for the decisions only
        (instance type, count, zone, capacity type); check offerings and the quota first."""
        arguments = {
            "cluster": cluster,
            "name": name,
            "instance_type": instance_type,
            "count": count,
            "availability_zone_id": availability_zone_id,
            "capacity_type": capacity_type,
            "training_plan_arn": training_plan_arn,
            "interface_type": interface_type,
            "min_count": min_count,
            "ebs_volume_gb": ebs_volume_gb,
            "threads_per_core": threads_per_core,
            "deep_health_checks": deep_health_checks,
            "labels": labels,
            "taints": taints,
            "lifecycle_script_uri": lifecycle_script_uri,
            "request_id": request_id,
        }
        return await submit(
            gateway,
            tool="add_instance_group",
            arguments=arguments,
            method="POST",
            path=api_path("clusters", cluster, "instance-groups"),
            body=body_of(arguments),
            what=f"instance group {name} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="instance groups", rest="PATCH /api/v1/clusters/{name}/instance-groups/{group}"
    )
    async def update_instance_group(
        cluster: ClusterRef,
        group: GroupName,
        count: Annotated[int | None, Field(ge=0, le=6758, description="Instances to run")] = None,
        min_count: Annotated[
            int | None, Field(ge=0, le=6758, description="Fewest instances to keep")
        ] = None,
        ebs_volume_gb: Annotated[
            int | None,
            Field(ge=1, le=16384, description="EBS volume per instance, GB (grows only)"),
        ] = None,
        deep_health_checks: HealthChecks = None,
        labels: Labels = None,
        taints: Taints = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Change an instance group by explicit diff: send only the fields to change (scale by
        count). Instance type, capacity type and EFA mode are fixed for the group's life (add a
        new group instead). A change that matches actual state is a no-op."""
        arguments = {
            "cluster": cluster,
            "group": group,
            "count": count,
            "min_count": min_count,
            "ebs_volume_gb": ebs_volume_gb,
            "deep_health_checks": deep_health_checks,
            "labels": labels,
            "taints": taints,
            "request_id": request_id,
        }
        return await submit(
            gateway,
            tool="update_instance_group",
            arguments=arguments,
            method="PATCH",
            path=api_path("clusters", cluster, "instance-groups", group),
            body=body_of(arguments, exclude=("cluster", "group", "request_id")),
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

    @server.write_tool(area="instance groups", rest="POST /api/v1/clusters/{name}/software-update")
    async def update_cluster_software(
        cluster: ClusterRef,
        instance_groups: Annotated[
            list[str] | None,
            Field(max_length=20, description="Groups to update; every group if omitted"),
        ] = None,
        image_id: Annotated[
            str | None,
            Field(
                pattern=r"^(ami-[0-9a-f]{8,17}|default|latest)$",
                description="AMI to move to; the latest HyperPod release if omitted",
            ),
        ] = None,
        batch_size: Annotated[
            BatchSize | None, Field(description="Nodes per batch (count or percentage)")
        ] = None,
        rollback_batch_size: Annotated[
            BatchSize | None, Field(description="Nodes per batch when rolling back")
        ] = None,
        wait_interval_seconds: Annotated[
            int, Field(ge=0, le=3600, description="Pause between batches, seconds")
        ] = 0,
        rollback_alarms: Annotated[
            list[str] | None,
            Field(max_length=10, description="CloudWatch alarms that roll the update back"),
        ] = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Update the nodes' software (UpdateClusterSoftware) with a rolling deployment, batch
        by batch. Nodes restart: confirm the window with the user."""
        arguments = {
            "cluster": cluster,
            "instance_groups": instance_groups,
            "image_id": image_id,
            "batch_size": batch_size,
            "rollback_batch_size": rollback_batch_size,
            "wait_interval_seconds": wait_interval_seconds,
            "rollback_alarms": rollback_alarms,
            "request_id": request_id,
        }
        return await submit(
            gateway,
            tool="update_cluster_software",
            arguments=arguments,
            method="POST",
            path=api_path("clusters", cluster, "software-update"),
            body=body_of(arguments),
            what=f"software update of {cluster}",
            dry_run=dry_run,
        )
