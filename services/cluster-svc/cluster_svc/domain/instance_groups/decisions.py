"""What an instance-group command would do against the actual state (a `Decision`: refuse,
nothing, or exactly these calls), shared by the stage that acts and the dry run."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from cluster_svc.domain import hyperpod, inspection, lifecycle, network
from cluster_svc.domain.inspection import Problem
from cluster_svc.domain.instance_groups.described import (
    DescribedCluster,
    InstanceGroupApi,
    actual_view,
    compute_diff,
    describe,
    group_request,
)
from cluster_svc.domain.instance_groups.rules import (
    RULE_GROUP_EXISTS,
    RULE_LAST_GROUP,
    add_problems,
    change_problems,
    cluster_zones,
    new_group_problems,
    same_group,
    scale_problems,
)
from cluster_svc.domain.subnets import CreateSubnet, plan_compute_subnet
from shared.contracts.cluster import ClusterSpec
from shared.contracts.gpu import MIG_CONFIG_LABEL, mig_config
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    DeleteInstanceGroup,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError


def apply_change(request: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The group entry with only `change` applied (fields fixed for the group's life are never
    changed here: a change to them is refused before)."""
    entry = copy.deepcopy(request)
    for name, value in change.items():
        if name == "count":
            entry["InstanceCount"] = value
        elif name == "min_count":
            entry["MinInstanceCount"] = value
        elif name == "ebs_volume_gb":
            configs = entry.setdefault("InstanceStorageConfigs", [])
            for config in configs:
                if "EbsVolumeConfig" in config:
                    config["EbsVolumeConfig"]["VolumeSizeInGB"] = value
                    break
            else:
                configs.append({"EbsVolumeConfig": {"VolumeSizeInGB": value}})
        elif name == "deep_health_checks":
            if value:
                entry["OnStartDeepHealthChecks"] = list(value)
            else:
                entry.pop("OnStartDeepHealthChecks", None)
        elif name == "mig_profile":
            kube = entry.setdefault("KubernetesConfig", {})
            profile = None if value == "disabled" else value
            kube["Labels"] = {**(kube.get("Labels") or {}), MIG_CONFIG_LABEL: mig_config(profile)}
        elif name in ("labels", "taints"):
            kube = entry.setdefault("KubernetesConfig", {})
            if name == "labels":
                kube["Labels"] = dict(value)
            else:
                kube["Taints"] = [
                    {
                        "Key": t["key"],
                        **({"Value": t["value"]} if t.get("value") else {}),
                        "Effect": t["effect"],
                    }
                    for t in value
                ]
    return entry


@dataclass(frozen=True)
class Decision:
    """What a command would do against the actual state: refuse (problems), nothing (noop), or
    exactly these calls."""

    problems: list[Problem] = field(default_factory=list)
    diff: dict[str, FieldChange] = field(default_factory=dict)
    calls: list[PlannedCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def noop(self) -> bool:
        return not self.problems and not self.calls

    def error(self, code: str) -> PermanentError:
        message, hint = inspection.problems_summary(self.problems)
        return PermanentError(code, message, hint)


def _missing_group(cluster: DescribedCluster, group: str) -> Problem:
    known = ", ".join(sorted(cluster.groups)) or "none"
    return Problem(
        "group",
        RULE_GROUP_EXISTS,
        f"HyperPod cluster {cluster.name} has no instance group {group} (groups: {known})",
        f"use one of the groups listed by GET /api/v1/clusters/{{name}}/instance-groups, "
        f"or add {group} with POST",
    )


def decide_update(cluster: DescribedCluster, group: str, change: dict[str, Any]) -> Decision:
    details = cluster.groups.get(group)
    if details is None:
        return Decision(problems=[_missing_group(cluster, group)])
    actual = actual_view(details)
    diff = compute_diff(actual, change)
    problems = change_problems(cluster.name, group, actual, diff)
    if problems:
        return Decision(problems=problems, diff=diff)
    if not diff:
        return Decision(notes=[f"group {group} already has every requested value"])
    entry = apply_change(group_request(details), {k: change[k] for k in diff})
    request = {"ClusterName": cluster.name, "InstanceGroups": [entry]}
    return Decision(
        diff=diff,
        calls=[PlannedCall(service="sagemaker", operation="UpdateCluster", params=request)],
    )


def decide_delete(cluster: DescribedCluster, group: str) -> Decision:
    if group not in cluster.groups:
        return Decision(notes=[f"group {group} does not exist: nothing to delete"])
    if len(cluster.groups) == 1:
        return Decision(
            problems=[
                Problem(
                    "group",
                    RULE_LAST_GROUP,
                    f"{group} is the only instance group of HyperPod cluster {cluster.name}",
                    "add another group first, or delete the whole cluster",
                )
            ]
        )
    request = {"ClusterName": cluster.name, "InstanceGroupsToDelete": [group]}
    details = cluster.groups[group]
    # what goes with the group: its instances (the cost of the plan is what they save)
    removed = {
        "instance_group": FieldChange(actual=group, requested=None),
        "count": FieldChange(actual=int(details.get("CurrentCount", 0)), requested=0),
        "instance_type": FieldChange(actual=details.get("InstanceType"), requested=None),
    }
    if details.get("TrainingPlanArn"):
        removed["training_plan_arn"] = FieldChange(
            actual=details["TrainingPlanArn"], requested=None
        )
    return Decision(
        diff=removed,
        calls=[PlannedCall(service="sagemaker", operation="UpdateCluster", params=request)],
    )


def software_request(cluster: DescribedCluster, command: UpdateClusterSoftware) -> dict[str, Any]:
    spec = command.spec

    def batch(size: Any) -> dict[str, Any]:
        kind = "INSTANCE_COUNT" if size.type == "count" else "CAPACITY_PERCENTAGE"
        return {"Type": kind, "Value": size.value}

    policy: dict[str, Any] = {"MaximumBatchSize": batch(spec.batch_size)}
    if spec.rollback_batch_size is not None:
        policy["RollbackMaximumBatchSize"] = batch(spec.rollback_batch_size)
    deployment: dict[str, Any] = {
        "RollingUpdatePolicy": policy,
        "WaitIntervalInSeconds": spec.wait_interval_seconds,
    }
    if spec.rollback_alarms:
        deployment["AutoRollbackConfiguration"] = [{"AlarmName": a} for a in spec.rollback_alarms]
    request: dict[str, Any] = {"ClusterName": cluster.name, "DeploymentConfig": deployment}
    if spec.instance_groups:
        request["InstanceGroups"] = [{"InstanceGroupName": g} for g in spec.instance_groups]
    if spec.image_id:
        request["ImageId"] = spec.image_id
    return request


def decide_software(cluster: DescribedCluster, command: UpdateClusterSoftware) -> Decision:
    names = command.spec.instance_groups or sorted(cluster.groups)
    missing = [g for g in names if g not in cluster.groups]
    if missing:
        return Decision(
            problems=[
                Problem(
                    "instance_groups",
                    RULE_GROUP_EXISTS,
                    f"HyperPod cluster {cluster.name} has no instance group "
                    f"{', '.join(missing)} (groups: {', '.join(sorted(cluster.groups))})",
                    "name existing groups, or omit instance_groups to update every group",
                )
            ]
        )
    image = command.spec.image_id
    if image and image.startswith("ami-"):
        current = {g: cluster.groups[g].get("CurrentImageId") for g in names}
        if all(v == image for v in current.values()):
            return Decision(notes=[f"every group already runs {image}"])
        diff = {"image_id": FieldChange(actual=current, requested=image)}
    else:
        diff = {"software": FieldChange(actual="installed release", requested=image or "latest")}
    return Decision(
        diff=diff,
        calls=[
            PlannedCall(
                service="sagemaker",
                operation="UpdateClusterSoftware",
                params=software_request(cluster, command),
            )
        ],
    )


@dataclass(frozen=True)
class Placement:
    """Where a new group's nodes go: the cluster's own subnets (no subnet), or the /20 compute
    subnet of the group's zone (an existing one, or `create_cidr` to be made)."""

    zone_id: str | None = None
    subnet_id: str | None = None
    create_cidr: str | None = None

    @property
    def overrides(self) -> bool:
        return self.zone_id is not None and (self.subnet_id or self.create_cidr) is not None


def _lifecycle_config(
    command: AddInstanceGroup, cluster: DescribedCluster
) -> dict[str, Any] | None:
    uri = command.group.lifecycle_script_uri or (command.resources.get("bucket") or {}).get(
        "lifecycle_script_uri"
    )
    if uri:
        return {"SourceS3Uri": uri, "OnCreate": lifecycle.ON_CREATE}
    for details in cluster.groups.values():
        if details.get("LifeCycleConfig"):
            return dict(copy.deepcopy(details["LifeCycleConfig"]))
    return None


def _execution_role(command: AddInstanceGroup, cluster: DescribedCluster) -> str | None:
    role = (command.resources.get("execution_role") or {}).get("role_arn")
    if role:
        return str(role)
    for details in cluster.groups.values():
        if details.get("ExecutionRole"):
            return str(details["ExecutionRole"])
    return None


def add_entry(
    command: AddInstanceGroup, cluster: DescribedCluster, placement: Placement
) -> dict[str, Any]:
    """The new group's ClusterInstanceGroupSpecification, made by the same builder as a cluster
    create. References come from the create operation's outputs when Hyperpilot made the
    cluster, else from the cluster's described configuration."""
    role = _execution_role(command, cluster)
    life = _lifecycle_config(command, cluster)
    security_groups = list(cluster.vpc_config.get("SecurityGroupIds") or [])
    missing = [
        what
        for what, value in (
            ("execution role", role),
            ("lifecycle scripts", life),
            ("security group", security_groups),
        )
        if not value
    ]
    if missing or role is None or life is None:
        raise PermanentError(
            "ClusterReferencesMissing",
            f"cannot tell the {', '.join(missing)} of HyperPod cluster {cluster.name}",
            "pass lifecycle_script_uri (an s3:// prefix with the lifecycle scripts) in the "
            "group; a cluster without any group has no execution role to lend: add its first "
            "group with the SageMaker UpdateCluster API",
        )
    subnet = placement.subnet_id or f"<new /20 {placement.create_cidr} in {placement.zone_id}>"
    refs = hyperpod.ClusterRefs(
        eks_cluster_arn=cluster.eks_cluster_arn or "",
        security_group_id=security_groups[0],
        subnet_id=(cluster.vpc_config.get("Subnets") or [""])[0],
        subnets_by_zone={placement.zone_id: subnet}
        if placement.overrides and placement.zone_id
        else {},
        execution_role_arn=role,
        lifecycle_script_uri=life["SourceS3Uri"],
    )
    spec = command.group.group_spec().model_copy(
        update={"availability_zone_id": placement.zone_id if placement.overrides else None}
    )
    # The builder overrides the VPC config of a group outside the cluster's zone.
    shape = ClusterSpec.model_construct(
        name=command.cluster, availability_zone_id="cluster", instance_groups=[spec]
    )
    entry = hyperpod.instance_group_request(spec, shape, refs)
    entry["LifeCycleConfig"] = life
    return entry


def decide_add(
    command: AddInstanceGroup, cluster: DescribedCluster, placement: Placement
) -> Decision:
    group = command.group
    existing = cluster.groups.get(group.name)
    if existing is not None and same_group(existing, group):
        return Decision(notes=[f"group {group.name} already exists as requested"])
    problems = add_problems(cluster, group)
    if problems:
        return Decision(problems=problems)
    calls = []
    notes = []
    if placement.create_cidr:
        calls.append(
            PlannedCall(
                service="ec2",
                operation="CreateSubnet",
                params={
                    "CidrBlock": placement.create_cidr,
                    "AvailabilityZoneId": placement.zone_id,
                },
            )
        )
        notes.append(f"a /20 compute subnet {placement.create_cidr} is made in {placement.zone_id}")
    elif placement.overrides:
        notes.append(f"the group uses compute subnet {placement.subnet_id} in {placement.zone_id}")
    entry = add_entry(command, cluster, placement)
    calls.append(
        PlannedCall(
            service="sagemaker",
            operation="UpdateCluster",
            params={"ClusterName": cluster.name, "InstanceGroups": [entry]},
        )
    )
    diff = {"instance_group": FieldChange(actual=None, requested=group.model_dump(mode="json"))}
    return Decision(diff=diff, calls=calls, notes=notes)


async def plan_placement(
    ec2: network.Ec2, command: AddInstanceGroup, cluster: DescribedCluster
) -> Placement:
    """Where the group would go, without making anything (the dry run's view of the subnet
    decision `network.ensure_compute_subnet` takes)."""
    zone = command.group.availability_zone_id
    if zone is None:
        return Placement()
    vpc_id, zones = await cluster_zones(ec2, cluster)
    if zones == {zone} or vpc_id is None:
        return Placement(zone_id=zone)
    vpc = await ec2.vpc(vpc_id)
    if vpc is None:
        return Placement(zone_id=zone)
    decision = plan_compute_subnet(
        vpc_id, vpc.cidrs, await ec2.subnets(vpc_id), zone, None, command.cluster
    )
    if isinstance(decision, CreateSubnet):
        return Placement(zone_id=zone, create_cidr=decision.cidr)
    return Placement(zone_id=zone, subnet_id=decision.subnet.subnet_id)


def to_plan(decision: Decision, command_type: str, target: str) -> Plan:
    return Plan(
        command=command_type,
        target=target,
        noop=decision.noop,
        diff=decision.diff,
        calls=decision.calls,
        notes=decision.notes,
    )


Decide = Callable[[dict[str, Any]], Awaitable[tuple[Decision, str]]]


def deciders(
    api: InstanceGroupApi, ec2: network.Ec2, reads: inspection.InspectionReads
) -> dict[str, Decide]:
    """Per command type: the decision from actual state and the plan's target. The same pure
    decisions as the stages, so a dry run shows what the operation would do."""

    async def add(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = AddInstanceGroup.from_payload(payload)
        cluster = await describe(api, command.hyperpod_cluster)
        target = f"{command.cluster}/instance-groups/{command.group.name}"
        existing = cluster.groups.get(command.group.name)
        if existing is None or not same_group(existing, command.group):
            problems = await new_group_problems(api, ec2, reads, command, cluster)
            if problems:
                return Decision(problems=problems), target
        placement = await plan_placement(ec2, command, cluster)
        return decide_add(command, cluster, placement), target

    async def update(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = UpdateInstanceGroup.from_payload(payload)
        cluster = await describe(api, command.hyperpod_cluster)
        decision = decide_update(cluster, command.group, command.change.changed())
        target = f"{command.cluster}/instance-groups/{command.group}"
        if decision.calls:
            problems = await scale_problems(reads, ec2, cluster, command.group, decision.diff)
            if problems:
                return Decision(problems=problems, diff=decision.diff), target
        return decision, target

    async def delete(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = DeleteInstanceGroup.from_payload(payload)
        cluster = await describe(api, command.hyperpod_cluster)
        return decide_delete(
            cluster, command.group
        ), f"{command.cluster}/instance-groups/{command.group}"

    async def software(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = UpdateClusterSoftware.from_payload(payload)
        cluster = await describe(api, command.hyperpod_cluster)
        return decide_software(cluster, command), f"{command.cluster}/software"

    return {
        AddInstanceGroup.__name__: add,
        UpdateInstanceGroup.__name__: update,
        DeleteInstanceGroup.__name__: delete,
        UpdateClusterSoftware.__name__: software,
    }
