"""The instance-group workflows' stages: each reads the actual state, decides with the pure
decisions, makes its one call and waits until HyperPod settles."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from cluster_svc.domain import inspection, network
from cluster_svc.domain.instance_groups.decisions import (
    Decision,
    Placement,
    add_entry,
    decide_delete,
    decide_software,
    decide_update,
)
from cluster_svc.domain.instance_groups.described import (
    BUSY,
    DescribedCluster,
    InstanceGroupApi,
    describe,
)
from cluster_svc.domain.instance_groups.rules import (
    add_problems,
    cluster_zones,
    new_group_problems,
    same_group,
    scale_problems,
)
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.contracts.plan import FieldChange
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow


def settled(
    cluster: DescribedCluster | None, hyperpod_cluster: str, group: str, count: int | None
) -> Done | Pending:
    """Done once the cluster is InService and the group runs `count` nodes (or is gone when
    `count` is None); a rollback (target back to the former size) fails with AWS's reason."""
    if cluster is None:
        raise PermanentError(
            "HyperPodClusterGone",
            f"HyperPod cluster {hyperpod_cluster} disappeared during the change",
            "check the cluster with GET /api/v1/clusters",
        )
    if cluster.status == "Failed":
        raise PermanentError(
            "HyperPodClusterFailed",
            f"HyperPod cluster {cluster.name} failed: {cluster.failure_message or 'no reason given'}",
            "fix what the message names, then retry the operation",
        )
    if cluster.status != "InService":
        return Pending(f"HyperPod cluster {cluster.status}")
    details = cluster.groups.get(group)
    if count is None:
        return Pending(f"group {group} is {details.get('Status')}") if details else Done()
    if details is None or int(details.get("TargetCount", -1)) != count:
        reason = cluster.failure_message or "HyperPod rolled the change back"
        raise PermanentError(
            "InstanceGroupRolledBack",
            f"instance group {group} did not reach {count} instances: {reason}",
            "if capacity was short, retry later, use another zone or a training plan "
            "(capacity_type training-plan with a plan's ARN); if a quota, request an increase",
        )
    status = details.get("Status", "InService")
    current = int(details.get("CurrentCount", 0))
    if status != "InService" or current < count:
        return Pending(f"group {group}: {current}/{count} instances, {status}")
    return Done({"current_count": current, "target_count": count})


class Described:
    """DescribeCluster once per pass of an add: the stage that reads it passes it to the next
    stage of the same pass, which takes it (a retry, a later attempt or another replica reads
    it again). Kept in memory only, briefly: the stages run one right after the other."""

    FRESH_SECONDS = 30.0

    def __init__(self, api: InstanceGroupApi) -> None:
        self.api = api
        self._kept: dict[uuid.UUID, tuple[float, DescribedCluster]] = {}

    async def take(self, ctx: StageContext[AddInstanceGroup]) -> DescribedCluster:
        """The description the previous stage of this pass passed along, else a fresh one."""
        kept = self._kept.pop(ctx.operation_id, None)
        if kept is not None and time.monotonic() - kept[0] < self.FRESH_SECONDS:
            return kept[1]
        return await describe(self.api, ctx.cmd.hyperpod_cluster)

    def keep(self, ctx: StageContext[AddInstanceGroup], cluster: DescribedCluster) -> None:
        """Pass `cluster` to the next stage of this pass."""
        now = time.monotonic()
        self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.FRESH_SECONDS}
        self._kept[ctx.operation_id] = (now, cluster)


def _ready(cluster: DescribedCluster) -> None:
    """HyperPod changes only an InService cluster; a busy one is waited for."""
    if cluster.status == "InService":
        return
    if cluster.status in BUSY:
        raise TemporaryError(
            "ClusterBusy",
            f"HyperPod cluster {cluster.name} is {cluster.status}",
            "wait for the change in progress to finish, then retry the operation",
        )
    raise PermanentError(
        "ClusterNotInService",
        f"HyperPod cluster {cluster.name} is {cluster.status}",
        "a cluster can be changed only when InService",
    )


def _diff_json(diff: dict[str, FieldChange]) -> dict[str, Any]:
    return {k: v.model_dump(mode="json") for k, v in diff.items()}


async def _act(
    cluster: DescribedCluster,
    decision: Decision,
    refusal: str,
    call: Callable[[dict[str, Any]], Awaitable[str]],
) -> Done | Submitted:
    """Refuse, do nothing, or make the decision's one call once the cluster is InService."""
    if decision.problems:
        raise decision.error(refusal)
    if decision.noop:
        return Done(noop=True)
    _ready(cluster)
    request = decision.calls[0].params
    return Submitted(await call(request), {"request": request})


def update_stages(
    api: InstanceGroupApi, ec2: network.Ec2, reads: inspection.InspectionReads
) -> list[Stage]:
    async def update_group(ctx: StageContext[UpdateInstanceGroup]) -> Done | Submitted:
        command = ctx.cmd
        cluster = await describe(api, command.hyperpod_cluster)
        decision = decide_update(cluster, command.group, command.change.changed())
        if decision.problems:
            raise decision.error("InstanceGroupChangeRefused")
        if decision.noop:
            return Done({"diff": {}}, noop=True)
        problems = await scale_problems(reads, ec2, cluster, command.group, decision.diff)
        if problems:
            raise Decision(problems=problems).error("InstanceGroupChangeRefused")
        _ready(cluster)
        request = decision.calls[0].params
        arn = await api.update_cluster(request)
        return Submitted(arn, {"diff": _diff_json(decision.diff), "request": request})

    async def update_group_poll(ctx: StageContext[UpdateInstanceGroup]) -> Done | Pending:
        command = ctx.cmd
        count = ctx.own_outputs["request"]["InstanceGroups"][0]["InstanceCount"]
        cluster = await api.describe_cluster_groups(command.hyperpod_cluster)
        return settled(cluster, command.hyperpod_cluster, command.group, count)

    return [
        Stage(
            "update_group",
            "Change the instance group (only the changed fields)",
            update_group,
            update_group_poll,
        )
    ]


def delete_stages(api: InstanceGroupApi) -> list[Stage]:
    async def delete_group(ctx: StageContext[DeleteInstanceGroup]) -> Done | Submitted:
        cluster = await describe(api, ctx.cmd.hyperpod_cluster)
        decision = decide_delete(cluster, ctx.cmd.group)
        return await _act(cluster, decision, "InstanceGroupDeleteRefused", api.update_cluster)

    async def delete_group_poll(ctx: StageContext[DeleteInstanceGroup]) -> Done | Pending:
        command = ctx.cmd
        cluster = await api.describe_cluster_groups(command.hyperpod_cluster)
        return settled(cluster, command.hyperpod_cluster, command.group, None)

    return [Stage("delete_group", "Delete the instance group", delete_group, delete_group_poll)]


def software_stages(api: InstanceGroupApi) -> list[Stage]:
    async def update_software(ctx: StageContext[UpdateClusterSoftware]) -> Done | Submitted:
        cluster = await describe(api, ctx.cmd.hyperpod_cluster)
        decision = decide_software(cluster, ctx.cmd)
        return await _act(cluster, decision, "SoftwareUpdateRefused", api.update_cluster_software)

    async def update_software_poll(ctx: StageContext[UpdateClusterSoftware]) -> Done | Pending:
        command = ctx.cmd
        cluster = await api.describe_cluster_groups(command.hyperpod_cluster)
        if cluster is None:
            raise PermanentError(
                "HyperPodClusterGone",
                f"HyperPod cluster {command.hyperpod_cluster} disappeared during the update",
                "check the cluster with GET /api/v1/clusters",
            )
        names = command.spec.instance_groups or sorted(cluster.groups)
        updating = [g for g in names if cluster.groups.get(g, {}).get("Status") != "InService"]
        if cluster.status != "InService" or updating:
            return Pending(f"HyperPod cluster {cluster.status}; updating {', '.join(updating)}")
        images = {g: cluster.groups[g].get("CurrentImageId") for g in names}
        return Done({"instance_groups": names, "images": images})

    return [
        Stage(
            "update_software",
            "Roll the new software through the instance groups",
            update_software,
            update_software_poll,
        )
    ]


def add_stages(
    api: InstanceGroupApi, ec2: network.Ec2, reads: inspection.InspectionReads
) -> list[Stage]:
    described = Described(api)

    async def validate(ctx: StageContext[AddInstanceGroup]) -> Done:
        command = ctx.cmd
        cluster = await described.take(ctx)
        existing = cluster.groups.get(command.group.name)
        if existing is None or not same_group(existing, command.group):
            problems = await new_group_problems(api, ec2, reads, command, cluster)
            if problems:
                raise Decision(problems=problems).error("InstanceGroupRefused")
        described.keep(ctx, cluster)
        return Done(noop=True)  # only read

    async def compute_subnet(ctx: StageContext[AddInstanceGroup]) -> Done:
        command = ctx.cmd
        zone = command.group.availability_zone_id
        if zone is None:
            return Done(noop=True)  # what validate read goes on to add_group
        cluster = await described.take(ctx)
        vpc_id, zones = await cluster_zones(ec2, cluster)
        if zones == {zone}:
            described.keep(ctx, cluster)
            return Done({"availability_zone_id": zone}, noop=True)
        vpc_id = (command.resources.get("network") or {}).get("vpc_id") or vpc_id
        if vpc_id is None:
            raise PermanentError(
                "VpcUnknown",
                f"cannot tell the VPC of HyperPod cluster {cluster.name}",
                "omit availability_zone_id to use the cluster's own subnets",
            )
        subnet_id, cidr, made = await network.ensure_compute_subnet(
            ec2, vpc_id, zone, cluster=command.cluster
        )
        table = (command.resources.get("network") or {}).get("private_route_table_id")
        if table and await ec2.route_table_of_subnet(subnet_id) is None:
            await ec2.associate(table, subnet_id)
        described.keep(ctx, cluster)
        return Done(
            {
                "subnet_id": subnet_id,
                "cidr": cidr,
                "availability_zone_id": zone,
                "created": [subnet_id] if made else [],
            },
            noop=not made,
        )

    async def add_group(ctx: StageContext[AddInstanceGroup]) -> Done | Submitted:
        command = ctx.cmd
        cluster = await described.take(ctx)
        name = command.group.name
        existing = cluster.groups.get(name)
        if existing is not None:
            if not same_group(existing, command.group):
                raise Decision(problems=add_problems(cluster, command.group)).error(
                    "InstanceGroupRefused"
                )
            if isinstance(settled(cluster, cluster.name, name, command.group.count), Done):
                return Done({"instance_group": name}, noop=True)
            return Submitted(cluster.arn, {"instance_group": name})
        _ready(cluster)
        subnet = ctx.outputs.get("compute_subnet", {})
        placement = Placement(
            zone_id=subnet.get("availability_zone_id"), subnet_id=subnet.get("subnet_id")
        )
        request = {
            "ClusterName": cluster.name,
            "InstanceGroups": [add_entry(command, cluster, placement)],
        }
        arn = await api.update_cluster(request)
        return Submitted(arn, {"instance_group": name, "request": request})

    async def add_group_poll(ctx: StageContext[AddInstanceGroup]) -> Done | Pending:
        command = ctx.cmd
        cluster = await api.describe_cluster_groups(command.hyperpod_cluster)
        return settled(cluster, command.hyperpod_cluster, command.group.name, command.group.count)

    return [
        Stage("validate", "Check the group against the cluster and the account", validate),
        Stage(
            "compute_subnet",
            "Prepare the /20 compute subnet of the group's zone",
            compute_subnet,
            needs=("validate",),
        ),
        Stage(
            "add_group",
            "Add the instance group and wait for its nodes",
            add_group,
            add_group_poll,
            needs=("compute_subnet",),
        ),
    ]


def workflows(
    api: InstanceGroupApi, ec2: network.Ec2, reads: inspection.InspectionReads
) -> dict[str, Workflow[Any]]:
    return {
        AddInstanceGroup.__name__: Workflow(
            kind=AddInstanceGroup.kind(),
            domain=AddInstanceGroup.domain,
            command=AddInstanceGroup,
            stages=tuple(add_stages(api, ec2, reads)),
        ),
        UpdateInstanceGroup.__name__: Workflow(
            kind=UpdateInstanceGroup.kind(),
            domain=UpdateInstanceGroup.domain,
            command=UpdateInstanceGroup,
            stages=tuple(update_stages(api, ec2, reads)),
        ),
        DeleteInstanceGroup.__name__: Workflow(
            kind=DeleteInstanceGroup.kind(),
            domain=DeleteInstanceGroup.domain,
            command=DeleteInstanceGroup,
            stages=tuple(delete_stages(api)),
        ),
        UpdateClusterSoftware.__name__: Workflow(
            kind=UpdateClusterSoftware.kind(),
            domain=UpdateClusterSoftware.domain,
            command=UpdateClusterSoftware,
            stages=tuple(software_stages(api)),
        ),
    }
