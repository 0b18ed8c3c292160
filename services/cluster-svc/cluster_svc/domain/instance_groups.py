"""Instance groups of a HyperPod cluster: add, update by explicit diff, delete, software update.

Every decision is a pure function of the cluster's ACTUAL state (DescribeCluster) and the
command, shared by the workflow stage that acts and the planner that answers a dry run:

- An update compares each requested field with the group's described value; what is equal is
  dropped. Nothing left: the operation ends `noop` without a call. Otherwise UpdateCluster
  carries exactly one group entry, rebuilt from that group's described configuration with only
  the requested fields changed (never a list rebuilt from an allow-list, which silently drops
  members such as KubernetesConfig or TrainingPlanArn).
- Capacity type, training plan, network interface mode (efa-only) and instance type are fixed
  for the group's life: a different value is a rule violation naming the way out (a new group).
- An add settles the whole group at once; a group in another zone gets its /20 compute subnet
  from `network.ensure_compute_subnet`, recorded so deleting the cluster removes it.
- A delete sends `InstanceGroupsToDelete` only; a software update sends UpdateClusterSoftware
  with a rolling deployment config.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_svc.domain import hyperpod, inspection, lifecycle, network
from cluster_svc.domain.inspection import Problem
from cluster_svc.domain.subnets import CreateSubnet, plan_compute_subnet
from shared.contracts.cluster import CapacityType, ClusterSpec, InstanceGroupSpec, InterfaceType
from shared.contracts.instance_groups import (
    IMMUTABLE_FIELDS,
    MAX_INSTANCE_GROUPS,
    AddInstanceGroup,
    DeleteInstanceGroup,
    NewInstanceGroup,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.errors import PermanentError, TemporaryError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow

RULE_GROUP_EXISTS = "instance_group_exists"
RULE_NAME_AVAILABLE = "instance_group_name_available"
RULE_GROUP_LIMIT = "instance_group_limit"
RULE_FIXED = "fixed_for_group_life"
RULE_EBS_GROWS = "ebs_volume_grows_only"
RULE_MIN_COUNT = "min_count_at_most_count"
RULE_LAST_GROUP = "last_instance_group"
RULE_EFA_SUPPORTED = "efa_supported"

BUSY = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting"})


# ---- the actual state ----------------------------------------------------------------------


@dataclass(frozen=True)
class DescribedCluster:
    """DescribeCluster, as the instance-group decisions read it."""

    name: str
    arn: str
    status: str
    failure_message: str | None = None
    vpc_config: dict[str, Any] = field(default_factory=dict)  # SecurityGroupIds, Subnets
    eks_cluster_arn: str | None = None
    # name -> ClusterInstanceGroupDetails as DescribeCluster returns it (JSON-safe)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)


class InstanceGroupApi(Protocol):
    async def describe_cluster_groups(self, name: str) -> DescribedCluster | None: ...
    async def update_cluster(self, request: dict[str, Any]) -> str: ...
    async def update_cluster_software(self, request: dict[str, Any]) -> str: ...
    async def efa_supported(self, instance_type: str) -> bool | None: ...


# The members of ClusterInstanceGroupSpecification that DescribeCluster reports under the same
# name. An update entry carries every one the group has, so nothing is dropped.
_SAME_NAME = (
    "InstanceGroupName",
    "InstanceType",
    "LifeCycleConfig",
    "ExecutionRole",
    "ThreadsPerCore",
    "InstanceStorageConfigs",
    "OnStartDeepHealthChecks",
    "TrainingPlanArn",
    "OverrideVpcConfig",
    "ScheduledUpdateConfig",
    "CapacityRequirements",
    "NetworkInterface",
)


def group_request(details: dict[str, Any]) -> dict[str, Any]:
    """The group's described configuration as a ClusterInstanceGroupSpecification."""
    request = {k: copy.deepcopy(details[k]) for k in _SAME_NAME if details.get(k) is not None}
    request["InstanceCount"] = int(details.get("TargetCount", details.get("CurrentCount", 0)))
    if details.get("MinCount") is not None:
        request["MinInstanceCount"] = details["MinCount"]
    kube = details.get("KubernetesConfig") or {}
    labels = kube.get("DesiredLabels", kube.get("CurrentLabels"))
    taints = kube.get("DesiredTaints", kube.get("CurrentTaints"))
    wanted: dict[str, Any] = {}
    if labels:
        wanted["Labels"] = dict(labels)
    if taints:
        wanted["Taints"] = [dict(t) for t in taints]
    if wanted:
        request["KubernetesConfig"] = wanted
    return request


def _ebs_size(request: dict[str, Any]) -> int | None:
    for config in request.get("InstanceStorageConfigs") or []:
        ebs = config.get("EbsVolumeConfig")
        if ebs and ebs.get("VolumeSizeInGB") is not None:
            return int(ebs["VolumeSizeInGB"])
    return None


def actual_view(details: dict[str, Any]) -> dict[str, Any]:
    """The group's described configuration in the contract's field names."""
    request = group_request(details)
    if request.get("TrainingPlanArn"):
        capacity = CapacityType.TRAINING_PLAN.value
    elif "Spot" in (request.get("CapacityRequirements") or {}):
        capacity = CapacityType.SPOT.value
    else:
        capacity = CapacityType.ON_DEMAND.value
    kube = request.get("KubernetesConfig") or {}
    return {
        "instance_type": request.get("InstanceType"),
        "count": request["InstanceCount"],
        "min_count": request.get("MinInstanceCount"),
        "capacity_type": capacity,
        "training_plan_arn": request.get("TrainingPlanArn"),
        "interface_type": (request.get("NetworkInterface") or {}).get(
            "InterfaceType", InterfaceType.EFA.value
        ),
        "ebs_volume_gb": _ebs_size(request),
        "threads_per_core": request.get("ThreadsPerCore"),
        "deep_health_checks": list(request.get("OnStartDeepHealthChecks") or []),
        "labels": dict(kube.get("Labels") or {}),
        "taints": [
            {"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]}
            for t in kube.get("Taints") or []
        ],
    }


def _normal(name: str, value: Any) -> Any:
    if name == "deep_health_checks":
        return sorted(value or [])
    if name == "taints":
        return sorted((t["key"], t.get("value", "") or "", t["effect"]) for t in (value or []))
    if name == "labels":
        return dict(value or {})
    return value


def compute_diff(actual: dict[str, Any], change: dict[str, Any]) -> dict[str, FieldChange]:
    """Only the requested fields whose value differs from the actual one."""
    return {
        name: FieldChange(actual=actual.get(name), requested=requested)
        for name, requested in change.items()
        if _normal(name, actual.get(name)) != _normal(name, requested)
    }


def _way_out(cluster: str, group: str, name: str, value: Any) -> str:
    return (
        f"{name} is fixed for the life of a group: add a new group with {name} {value} "
        f"(POST /api/v1/clusters/{cluster}/instance-groups), move the work, then delete "
        f"group {group} (DELETE /api/v1/clusters/{cluster}/instance-groups/{group})"
    )


def change_problems(
    cluster: str, group: str, actual: dict[str, Any], diff: dict[str, FieldChange]
) -> list[Problem]:
    """The rules of a change that need the group's actual configuration."""
    problems = []
    for name in IMMUTABLE_FIELDS:
        if name in diff:
            change = diff[name]
            problems.append(
                Problem(
                    name,
                    RULE_FIXED,
                    f"group {group} has {name} {change.actual}; it cannot become {change.requested}",
                    _way_out(cluster, group, name, change.requested),
                )
            )
    if "ebs_volume_gb" in diff:
        before, after = diff["ebs_volume_gb"].actual, diff["ebs_volume_gb"].requested
        if before is not None and after < before:
            problems.append(
                Problem(
                    "ebs_volume_gb",
                    RULE_EBS_GROWS,
                    f"the EBS volume of group {group} is {before} GB; a volume cannot shrink",
                    f"keep ebs_volume_gb at {before} or more, or add a new group with the "
                    "smaller volume",
                )
            )
    count = diff["count"].requested if "count" in diff else actual.get("count")
    minimum = diff["min_count"].requested if "min_count" in diff else actual.get("min_count")
    if minimum is not None and count is not None and minimum > count:
        problems.append(
            Problem(
                "min_count" if "min_count" in diff else "count",
                RULE_MIN_COUNT,
                f"min_count {minimum} would exceed count {count}",
                f"make count at least {minimum}, or lower min_count in the same request",
            )
        )
    return problems


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


# ---- decisions -----------------------------------------------------------------------------


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
    return Decision(
        diff={"instance_group": FieldChange(actual=group, requested=None)},
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


# ---- adding a group ------------------------------------------------------------------------


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


def add_problems(cluster: DescribedCluster, group: NewInstanceGroup) -> list[Problem]:
    """The rules of an add that read the cluster: a free name and the group limit."""
    if group.name in cluster.groups:
        return [
            Problem(
                "name",
                RULE_NAME_AVAILABLE,
                f"HyperPod cluster {cluster.name} already has an instance group {group.name}",
                f"choose another name, or change {group.name} with "
                f"PATCH /api/v1/clusters/{{name}}/instance-groups/{group.name}",
            )
        ]
    if len(cluster.groups) >= MAX_INSTANCE_GROUPS:
        return [
            Problem(
                "name",
                RULE_GROUP_LIMIT,
                f"HyperPod cluster {cluster.name} has {len(cluster.groups)} instance groups, "
                f"the most a cluster can have ({MAX_INSTANCE_GROUPS})",
                "delete a group you no longer use, or scale an existing group of the same type",
            )
        ]
    return []


def efa_problems(group: NewInstanceGroup, supported: bool | None) -> list[Problem]:
    """EFA-only interfaces need an instance type with EFA."""
    if group.interface_type != InterfaceType.EFA_ONLY or supported is not False:
        return []
    return [
        Problem(
            "interface_type",
            RULE_EFA_SUPPORTED,
            f"{group.instance_type} has no EFA, so it cannot run with interface_type efa-only",
            "use interface_type efa, or an instance type with EFA (such as ml.p5.48xlarge)",
        )
    ]


def same_group(details: dict[str, Any], group: NewInstanceGroup) -> bool:
    """Whether a described group already is the requested one (a replayed add)."""
    actual = actual_view(details)
    wanted = group.group_spec().model_dump(mode="json")
    keys = ("instance_type", "count", "capacity_type", "interface_type", "training_plan_arn")
    return all(_normal(k, actual.get(k)) == _normal(k, wanted.get(k)) for k in keys)


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


async def cluster_zones(ec2: network.Ec2, cluster: DescribedCluster) -> tuple[str | None, set[str]]:
    """The VPC and the zones of the cluster's own subnets."""
    vpc_id: str | None = None
    zones: set[str] = set()
    for subnet_id in cluster.vpc_config.get("Subnets") or []:
        subnet = await ec2.subnet(subnet_id)
        if subnet is not None:
            vpc_id = vpc_id or subnet.vpc_id
            zones.add(subnet.zone_id)
    return vpc_id, zones


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


def _strip_group_prefix(problem: Problem) -> Problem:
    name = problem.field
    if name.startswith("instance_groups."):
        name = name.split(".", 2)[-1]
    return Problem(name, problem.rule, problem.message, problem.hint)


async def account_problems(
    reads: inspection.InspectionReads, group: NewInstanceGroup, zone: str | None
) -> list[Problem]:
    """Offering, quota and training-plan checks of the new group, as a create checks them."""
    if zone is None:
        return []
    spec = group.group_spec().model_copy(update={"availability_zone_id": zone})
    shape = ClusterSpec.model_construct(
        name="check", availability_zone_id=zone, instance_groups=[spec]
    )
    offered = await reads.offered_zone_ids([spec.instance_type])
    zones = [z["zone_id"] for z in await reads.availability_zones()]
    problems = inspection.offering_problems(shape, offered, zones)
    demand = inspection.quota_demand(shape)
    if demand:
        quotas = await reads.cluster_quotas(sorted(demand))
        problems += inspection.quota_problems(shape, quotas, await reads.cluster_usage())
    if spec.capacity_type == CapacityType.TRAINING_PLAN and spec.training_plan_arn:
        plan = await reads.training_plan(spec.training_plan_arn)
        problems += inspection.plan_problems(shape, {spec.training_plan_arn: plan})
    return [_strip_group_prefix(p) for p in problems]


async def group_zone(
    ec2: network.Ec2, cluster: DescribedCluster, details: dict[str, Any]
) -> str | None:
    """The zone of a group's nodes: its override subnets', else the cluster's subnets'."""
    override = (details.get("OverrideVpcConfig") or {}).get("Subnets")
    for subnet_id in override or cluster.vpc_config.get("Subnets") or []:
        subnet = await ec2.subnet(subnet_id)
        if subnet is not None:
            return str(subnet.zone_id)
    return None


async def scale_problems(
    reads: inspection.InspectionReads,
    ec2: network.Ec2,
    cluster: DescribedCluster,
    group: str,
    diff: dict[str, FieldChange],
) -> list[Problem]:
    """A scale-up must fit the account's cluster-usage quota, or the group's training plan."""
    if "count" not in diff:
        return []
    before, after = int(diff["count"].actual or 0), int(diff["count"].requested)
    if after <= before:
        return []
    details = cluster.groups[group]
    zone = await group_zone(ec2, cluster, details)
    if zone is None:
        return []
    actual = actual_view(details)
    more = InstanceGroupSpec.model_construct(
        name=group,
        instance_type=actual["instance_type"],
        count=after - before,
        capacity_type=CapacityType(actual["capacity_type"]),
        training_plan_arn=actual["training_plan_arn"],
        availability_zone_id=zone,
    )
    shape = ClusterSpec.model_construct(
        name=cluster.name, availability_zone_id=zone, instance_groups=[more]
    )
    problems: list[Problem] = []
    demand = inspection.quota_demand(shape)
    if demand:
        quotas = await reads.cluster_quotas(sorted(demand))
        problems += inspection.quota_problems(shape, quotas, await reads.cluster_usage())
    if more.capacity_type == CapacityType.TRAINING_PLAN and more.training_plan_arn:
        plan = await reads.training_plan(more.training_plan_arn)
        problems += inspection.plan_problems(shape, {more.training_plan_arn: plan})
    prefix = f"scaling group {group} from {before} to {after} adds {after - before}: "
    return [Problem("count", p.rule, prefix + p.message, p.hint) for p in problems]


async def home_zone(
    ec2: network.Ec2, command: AddInstanceGroup, cluster: DescribedCluster
) -> str | None:
    """The zone a group without one lands in: the group's, the cluster's compute zone, or the
    zone of the cluster's subnets when they are in one."""
    if command.group.availability_zone_id:
        return command.group.availability_zone_id
    if command.cluster_zone_id:
        return command.cluster_zone_id
    _, zones = await cluster_zones(ec2, cluster)
    return next(iter(zones)) if len(zones) == 1 else None


async def new_group_problems(
    api: InstanceGroupApi,
    ec2: network.Ec2,
    reads: inspection.InspectionReads,
    command: AddInstanceGroup,
    cluster: DescribedCluster,
) -> list[Problem]:
    """Every reason the group cannot be added now: the cluster's rules first, then the
    account's (offerings, quotas, training plans) and the instance type's EFA."""
    problems = add_problems(cluster, command.group)
    if problems:
        return problems
    zone = await home_zone(ec2, command, cluster)
    problems = await account_problems(reads, command.group, zone)
    if command.group.interface_type == InterfaceType.EFA_ONLY:
        problems += efa_problems(
            command.group, await api.efa_supported(command.group.instance_type)
        )
    return problems


# ---- waiting -------------------------------------------------------------------------------


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


# ---- workflows -----------------------------------------------------------------------------


async def _describe(api: InstanceGroupApi, name: str) -> DescribedCluster:
    cluster = await api.describe_cluster_groups(name)
    if cluster is None:
        raise PermanentError(
            "ResourceNotFound",
            f"no HyperPod cluster named {name} in this account and region",
            "check the cluster with GET /api/v1/clusters; it may have been deleted outside "
            "Hyperpilot",
        )
    return cluster


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
        return await _describe(self.api, ctx.cmd.hyperpod_cluster)

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


def update_stages(
    api: InstanceGroupApi, ec2: network.Ec2, reads: inspection.InspectionReads
) -> list[Stage]:
    async def update_group(ctx: StageContext[UpdateInstanceGroup]) -> Done | Submitted:
        command = ctx.cmd
        cluster = await _describe(api, command.hyperpod_cluster)
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
        command = ctx.cmd
        cluster = await _describe(api, command.hyperpod_cluster)
        decision = decide_delete(cluster, command.group)
        if decision.problems:
            raise decision.error("InstanceGroupDeleteRefused")
        if decision.noop:
            return Done(noop=True)
        _ready(cluster)
        request = decision.calls[0].params
        arn = await api.update_cluster(request)
        return Submitted(arn, {"request": request})

    async def delete_group_poll(ctx: StageContext[DeleteInstanceGroup]) -> Done | Pending:
        command = ctx.cmd
        cluster = await api.describe_cluster_groups(command.hyperpod_cluster)
        return settled(cluster, command.hyperpod_cluster, command.group, None)

    return [Stage("delete_group", "Delete the instance group", delete_group, delete_group_poll)]


def software_stages(api: InstanceGroupApi) -> list[Stage]:
    async def update_software(ctx: StageContext[UpdateClusterSoftware]) -> Done | Submitted:
        command = ctx.cmd
        cluster = await _describe(api, command.hyperpod_cluster)
        decision = decide_software(cluster, command)
        if decision.problems:
            raise decision.error("SoftwareUpdateRefused")
        if decision.noop:
            return Done(noop=True)
        _ready(cluster)
        request = decision.calls[0].params
        arn = await api.update_cluster_software(request)
        return Submitted(arn, {"request": request})

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


# ---- dry runs ------------------------------------------------------------------------------


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
        cluster = await _describe(api, command.hyperpod_cluster)
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
        cluster = await _describe(api, command.hyperpod_cluster)
        decision = decide_update(cluster, command.group, command.change.changed())
        target = f"{command.cluster}/instance-groups/{command.group}"
        if decision.calls:
            problems = await scale_problems(reads, ec2, cluster, command.group, decision.diff)
            if problems:
                return Decision(problems=problems, diff=decision.diff), target
        return decision, target

    async def delete(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = DeleteInstanceGroup.from_payload(payload)
        cluster = await _describe(api, command.hyperpod_cluster)
        return decide_delete(
            cluster, command.group
        ), f"{command.cluster}/instance-groups/{command.group}"

    async def software(payload: dict[str, Any]) -> tuple[Decision, str]:
        command = UpdateClusterSoftware.from_payload(payload)
        cluster = await _describe(api, command.hyperpod_cluster)
        return decide_software(cluster, command), f"{command.cluster}/software"

    return {
        AddInstanceGroup.__name__: add,
        UpdateInstanceGroup.__name__: update,
        DeleteInstanceGroup.__name__: delete,
        UpdateClusterSoftware.__name__: software,
    }


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
