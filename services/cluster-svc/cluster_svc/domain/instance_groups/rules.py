"""The rules an instance-group change must pass, from the cluster's actual state and the
account's (offerings, quotas, training plans, EFA); each broken rule is a `Problem` naming the
way out."""

from __future__ import annotations

from typing import Any

from cluster_svc.domain import inspection, network
from cluster_svc.domain.inspection import Problem
from cluster_svc.domain.instance_groups.described import (
    DescribedCluster,
    InstanceGroupApi,
    actual_view,
    normal,
)
from shared.contracts.cluster import CapacityType, ClusterSpec, InstanceGroupSpec, InterfaceType
from shared.contracts.gpu import (
    MIG_CONFIG_LABEL,
    MIG_DISABLED,
    check_mig_profile,
    profile_of_config,
)
from shared.contracts.instance_groups import (
    IMMUTABLE_FIELDS,
    MAX_INSTANCE_GROUPS,
    AddInstanceGroup,
    NewInstanceGroup,
)
from shared.contracts.plan import FieldChange
from shared.validation import RuleViolation

RULE_GROUP_EXISTS = "instance_group_exists"

RULE_NAME_AVAILABLE = "instance_group_name_available"

RULE_GROUP_LIMIT = "instance_group_limit"

RULE_FIXED = "fixed_for_group_life"

RULE_EBS_GROWS = "ebs_volume_grows_only"

RULE_MIN_COUNT = "min_count_at_most_count"

RULE_LAST_GROUP = "last_instance_group"

RULE_EFA_SUPPORTED = "efa_supported"

RULE_MIG_PROFILE = "mig_profile_of_instance_type"


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
    problems += _mig_problems(group, actual, diff)
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


def _mig_problems(
    group: str, actual: dict[str, Any], diff: dict[str, FieldChange]
) -> list[Problem]:
    """A MIG profile (mig_profile, or the label in labels) the group's type cannot take."""
    wanted: list[tuple[str, str]] = []
    if "mig_profile" in diff and diff["mig_profile"].requested != "disabled":
        wanted.append(("mig_profile", str(diff["mig_profile"].requested)))
    labelled = ((diff["labels"].requested or {}) if "labels" in diff else {}).get(MIG_CONFIG_LABEL)
    if labelled is not None and labelled != MIG_DISABLED:
        wanted.append(("labels", profile_of_config(labelled) or ""))
    problems = []
    for field, profile in wanted:
        try:
            check_mig_profile(str(actual.get("instance_type")), profile, f"group {group}")
        except RuleViolation as exc:
            problems.append(Problem(field, RULE_MIG_PROFILE, str(exc), exc.hint))
    return problems


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
    return all(normal(k, actual.get(k)) == normal(k, wanted.get(k)) for k in keys)


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
    problems += await _capacity_problems(reads, shape, spec)
    return [_strip_group_prefix(p) for p in problems]


async def _capacity_problems(
    reads: inspection.InspectionReads, shape: ClusterSpec, spec: InstanceGroupSpec
) -> list[Problem]:
    """The account's cluster-usage quota, and the group's training plan, for `shape`."""
    problems: list[Problem] = []
    demand = inspection.quota_demand(shape)
    if demand:
        quotas = await reads.cluster_quotas(sorted(demand))
        problems += inspection.quota_problems(shape, quotas, await reads.cluster_usage())
    if spec.capacity_type == CapacityType.TRAINING_PLAN and spec.training_plan_arn:
        plan = await reads.training_plan(spec.training_plan_arn)
        problems += inspection.plan_problems(shape, {spec.training_plan_arn: plan})
    return problems


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
    problems = await _capacity_problems(reads, shape, more)
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
