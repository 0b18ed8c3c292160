"""Inspect before create: the checks a cluster spec must pass against live account state.

A spec can be valid on paper and still fail twenty minutes into a create: the zone is not in
the region, the instance type is not offered there, the cluster-usage quota is too small, the
training plan reserves its capacity elsewhere, the name is taken. These checks read the account
once (through `InspectionReads`) and answer every problem at once, each with the field it
concerns and what to do instead. The same checks answer the gateway's pre-create query and run
as the `preflight` stage of `cluster.create`, so a create accepted while NATS was down is
checked too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from shared.contracts.cluster import CapacityType, ClusterSpec
from shared.contracts.commands import CreateCluster
from shared.errors import PermanentError
from shared.regions import check_served
from shared.stages import Done, Stage, StageContext
from shared.validation import RuleViolation

ML_PREFIX = "ml."
MANAGED_BY = ("managed-by", "hyperpilot")

RULE_REGION = "region_served"
RULE_ZONE = "zone_exists"
RULE_OFFERED = "instance_type_offered"
RULE_QUOTA = "cluster_quota"
RULE_PLAN_EXISTS = "training_plan_exists"
RULE_PLAN_ACTIVE = "training_plan_active"
RULE_PLAN_CAPACITY = "training_plan_capacity"
RULE_NAME = "name_available"
RULE_VPC = "vpc_exists"


@dataclass(frozen=True)
class Problem:
    """One reason a create would fail, on the field a user would change."""

    field: str
    rule: str
    message: str
    hint: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.rule, "message": self.message, "hint": self.hint}


class InspectionReads(Protocol):
    """The account reads the checks need (implemented by `adapters.inspect.Inspector`).

    Shapes: zones `{"zone_name", "zone_id"}`; a quota `{"quota_name", "value", ...}`; a training
    plan as `Inspector.training_plans` lists it (`name`, `status`, `available_instance_count`,
    `reserved_capacity: [{"instance_type", "count", "availability_zone_id"}]`)."""

    @property
    def region(self) -> str: ...

    @property
    def served(self) -> tuple[str, ...]: ...

    async def availability_zones(self) -> list[dict[str, Any]]: ...

    async def offered_zone_ids(self, instance_types: Sequence[str]) -> dict[str, list[str]]: ...

    async def cluster_quotas(self, instance_types: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    async def cluster_usage(self) -> dict[str, int]: ...

    async def training_plan(self, arn: str) -> dict[str, Any] | None: ...

    async def cluster_name_holders(self, name: str) -> list[str]: ...

    async def vpc_exists(self, vpc_id: str) -> bool: ...


# ---- instance type names -----------------------------------------------------------------


def ec2_instance_type(ml_type: str) -> str:
    """HyperPod's `ml.p5.48xlarge` runs on EC2's `p5.48xlarge`."""
    if not ml_type.startswith(ML_PREFIX):
        raise ValueError(f"{ml_type!r} is not a HyperPod (ml.*) instance type")
    return ml_type[len(ML_PREFIX) :]


def hyperpod_instance_type(ec2_type: str) -> str:
    return ML_PREFIX + ec2_type


def cluster_quota_name(ml_type: str) -> str:
    """The Service Quotas name (service `sagemaker`) that caps a type's HyperPod instances."""
    return f"{ml_type} for cluster usage"


def instance_facts(described: dict[str, Any]) -> dict[str, Any]:
    """What a job or an endpoint needs to know of a type, from EC2's DescribeInstanceTypes:
    vCPUs, memory, GPUs (count, model, memory per GPU) and EFA support. A type without GPUs
    has a GPU count of 0 and no model."""
    gpus = (described.get("GpuInfo") or {}).get("Gpus") or []
    first = gpus[0] if gpus else {}
    network = described.get("NetworkInfo") or {}
    gpu_mib = (first.get("MemoryInfo") or {}).get("SizeInMiB")
    return {
        "vcpus": (described.get("VCpuInfo") or {}).get("DefaultVCpus"),
        "memory_gib": _gib((described.get("MemoryInfo") or {}).get("SizeInMiB")),
        "gpu_count": sum(int(g.get("Count", 0)) for g in gpus),
        "gpu_model": " ".join(str(first[k]) for k in ("Manufacturer", "Name") if first.get(k))
        or None,
        "gpu_memory_gib": _gib(gpu_mib),
        "efa_supported": bool(network.get("EfaSupported")),
        "max_efa_interfaces": int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)),
    }


def _gib(mib: Any) -> float | None:
    return round(float(mib) / 1024, 1) if isinstance(mib, (int, float)) else None


def human_list(items: Iterable[str]) -> str:
    """`a`, `a and b`, `a, b and c`: how a person lists alternatives."""
    values = list(items)
    if len(values) <= 1:
        return "".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def is_managed(tags: dict[str, str]) -> bool:
    return tags.get(MANAGED_BY[0]) == MANAGED_BY[1]


def training_plan_name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def _group_field(index: int, name: str) -> str:
    return f"instance_groups[{index}].{name}"


def group_zone(spec: ClusterSpec, index: int) -> str:
    return spec.instance_groups[index].availability_zone_id or spec.availability_zone_id


# ---- the rules (pure) ----------------------------------------------------------------------


def region_problems(region: str, served: tuple[str, ...]) -> list[Problem]:
    try:
        check_served(region, served)
    except RuleViolation as exc:
        return [Problem("region", RULE_REGION, str(exc), exc.hint)]
    return []


def zone_problems(spec: ClusterSpec, region: str, zones: list[dict[str, Any]]) -> list[Problem]:
    known = sorted(z["zone_id"] for z in zones)
    problems: list[Problem] = []
    wanted = [("availability_zone_id", spec.availability_zone_id)] + [
        (_group_field(i, "availability_zone_id"), g.availability_zone_id)
        for i, g in enumerate(spec.instance_groups)
        if g.availability_zone_id and g.availability_zone_id != spec.availability_zone_id
    ]
    for field, zone_id in wanted:
        if zone_id not in known:
            problems.append(
                Problem(
                    field,
                    RULE_ZONE,
                    f"{zone_id} is not an Availability Zone of {region}",
                    f"use one of {human_list(known)}" if known else f"check the region {region}",
                )
            )
    return problems


def offering_problems(
    spec: ClusterSpec, offered: dict[str, list[str]], zone_ids: Iterable[str]
) -> list[Problem]:
    """Each group's type must be offered in its zone; say where it is offered instead."""
    existing = set(zone_ids)
    problems: list[Problem] = []
    for index, group in enumerate(spec.instance_groups):
        zone = group_zone(spec, index)
        if zone not in existing:
            continue  # reported by zone_problems
        where = sorted(offered.get(group.instance_type, []))
        if zone in where:
            continue
        if where:
            message = (
                f"{group.instance_type} is not offered in {zone}; "
                f"it is offered in {human_list(where)}"
            )
            hint = (
                f"set availability_zone_id to {where[0]}"
                if len(where) == 1
                else f"set availability_zone_id to one of {human_list(where)}"
            )
        else:
            message = f"{group.instance_type} is not offered in any zone of this region"
            hint = "choose another instance type (GET /api/v1/inspect/instance-types)"
        problems.append(Problem(_group_field(index, "instance_type"), RULE_OFFERED, message, hint))
    return problems


def quota_demand(spec: ClusterSpec) -> dict[str, tuple[int, int]]:
    """Instances per type that count against the cluster-usage quota (training-plan capacity
    does not), with the index of the first group asking for it."""
    demand: dict[str, tuple[int, int]] = {}
    for index, group in enumerate(spec.instance_groups):
        if group.capacity_type == CapacityType.TRAINING_PLAN or group.count == 0:
            continue
        count, first = demand.get(group.instance_type, (0, index))
        demand[group.instance_type] = (count + group.count, first)
    return demand


def quota_problems(
    spec: ClusterSpec, quotas: dict[str, dict[str, Any]], usage: dict[str, int]
) -> list[Problem]:
    problems: list[Problem] = []
    for instance_type, (asked, first) in quota_demand(spec).items():
        quota = quotas.get(instance_type)
        if quota is None:
            continue  # the account has no such quota to exceed
        allowed = int(quota["value"])
        used = usage.get(instance_type, 0)
        if asked + used <= allowed:
            continue
        name = quota.get("quota_name") or cluster_quota_name(instance_type)
        message = f"{name} allows {allowed}; this cluster asks for {asked}"
        if used:
            message += f" and clusters of this account already use {used}"
        needed = asked + used
        problems.append(
            Problem(
                _group_field(first, "count"),
                RULE_QUOTA,
                message,
                f"request an increase of '{name}' to at least {needed} in Service Quotas "
                f"(service sagemaker), lower the count to {max(allowed - used, 0)}, or run the "
                "group on a training plan (capacity_type training-plan)",
            )
        )
    return problems


def plan_problems(spec: ClusterSpec, plans: dict[str, dict[str, Any] | None]) -> list[Problem]:
    """A plan must exist, be Active, and reserve enough of the group's type in the group's zone.

    Groups on the same plan, type and zone share its capacity, so their counts are summed."""
    problems: list[Problem] = []
    asked: dict[tuple[str, str, str], tuple[int, int]] = {}
    for index, group in enumerate(spec.instance_groups):
        arn = group.training_plan_arn
        if group.capacity_type != CapacityType.TRAINING_PLAN or not arn:
            continue
        field = _group_field(index, "training_plan_arn")
        plan = plans.get(arn)
        name = training_plan_name(arn)
        if plan is None:
            problems.append(
                Problem(
                    field,
                    RULE_PLAN_EXISTS,
                    f"training plan {name} does not exist in this account and region",
                    "list plans with GET /api/v1/inspect/training-plans and pass one's ARN",
                )
            )
            continue
        if plan["status"] != "Active":
            problems.append(
                Problem(
                    field,
                    RULE_PLAN_ACTIVE,
                    f"training plan {name} is {plan['status']}, not Active",
                    "wait until the plan starts, choose an Active plan, or use on-demand capacity",
                )
            )
            continue
        key = (arn, group.instance_type, group_zone(spec, index))
        count, first = asked.get(key, (0, index))
        asked[key] = (count + group.count, first)
    for (arn, instance_type, zone), (count, first) in asked.items():
        problem = _capacity_problem(plans[arn] or {}, instance_type, zone, count)
        if problem is not None:
            message, hint = problem
            field = _group_field(first, "training_plan_arn")
            problems.append(Problem(field, RULE_PLAN_CAPACITY, message, hint))
    return problems


def _capacity_problem(
    plan: dict[str, Any], instance_type: str, zone: str, count: int
) -> tuple[str, str] | None:
    name = plan["name"]
    reserved: dict[str, int] = {}
    for capacity in plan.get("reserved_capacity", []):
        if capacity["instance_type"] == instance_type:
            where = capacity["availability_zone_id"]
            reserved[where] = reserved.get(where, 0) + int(capacity["count"])
    if zone not in reserved:
        if not reserved:
            return (
                f"training plan {name} reserves no {instance_type}",
                "choose a plan that reserves this instance type, or change the group's type",
            )
        elsewhere = human_list(f"{n} in {z}" for z, n in sorted(reserved.items()))
        return (
            f"training plan {name} reserves no {instance_type} in {zone}; it reserves {elsewhere}",
            f"set the group's availability_zone_id to {sorted(reserved)[0]}",
        )
    available = reserved[zone]
    if plan.get("available_instance_count") is not None:
        available = min(available, int(plan["available_instance_count"]))
    if count <= available:
        return None
    return (
        f"training plan {name} has {available} {instance_type} available in {zone}; "
        f"this cluster asks for {count}",
        f"lower the count to {available}, or buy more capacity with another training plan",
    )


def name_problems(name: str, holders: list[str]) -> list[Problem]:
    if not holders:
        return []
    return [
        Problem(
            "name",
            RULE_NAME,
            f"the name {name} is taken by an existing {human_list(holders)} cluster",
            "choose another name, or import the existing cluster (POST /api/v1/clusters/import)",
        )
    ]


def vpc_problems(vpc_id: str | None, exists: bool) -> list[Problem]:
    if vpc_id is None or exists:
        return []
    return [
        Problem(
            "network.vpc_id",
            RULE_VPC,
            f"VPC {vpc_id} does not exist in this account and region",
            "pass an existing VPC id, or leave vpc_id out to create a VPC",
        )
    ]


# ---- the checks against live state ---------------------------------------------------------


async def check_create(reads: InspectionReads, spec: ClusterSpec, region: str) -> list[Problem]:
    """Every reason `spec` cannot be created now, read from the account in one pass."""
    problems = region_problems(region, reads.served)
    if problems:
        return problems
    types = sorted({g.instance_type for g in spec.instance_groups})
    plan_arns = sorted(
        {
            g.training_plan_arn
            for g in spec.instance_groups
            if g.capacity_type == CapacityType.TRAINING_PLAN and g.training_plan_arn
        }
    )
    quota_types = sorted(quota_demand(spec))
    zones, offered, quotas, usage, holders, (vpc_ok, plans) = await asyncio.gather(
        reads.availability_zones(),
        reads.offered_zone_ids(types),
        reads.cluster_quotas(quota_types) if quota_types else _no_quotas(),
        reads.cluster_usage() if quota_types else _no_usage(),
        reads.cluster_name_holders(spec.name),
        _references(reads, spec.network.vpc_id, plan_arns),
    )
    zone_ids = [z["zone_id"] for z in zones]
    return [
        *zone_problems(spec, region, zones),
        *offering_problems(spec, offered, zone_ids),
        *quota_problems(spec, quotas, usage),
        *plan_problems(spec, plans),
        *name_problems(spec.name, holders),
        *vpc_problems(spec.network.vpc_id, vpc_ok),
    ]


async def _no_quotas() -> dict[str, dict[str, Any]]:
    return {}


async def _no_usage() -> dict[str, int]:
    return {}


async def _references(
    reads: InspectionReads, vpc_id: str | None, plan_arns: list[str]
) -> tuple[bool, dict[str, dict[str, Any] | None]]:
    """Whether the given VPC exists, and each named training plan (None when missing)."""
    vpc_ok = await reads.vpc_exists(vpc_id) if vpc_id else True
    found = await asyncio.gather(*(reads.training_plan(arn) for arn in plan_arns))
    return vpc_ok, dict(zip(plan_arns, found, strict=True))


def problems_summary(problems: Sequence[Problem]) -> tuple[str, str]:
    """One message and one next step for a stage error that carries several problems."""
    message = "; ".join(f"{p.field}: {p.message}" for p in problems)
    hint = "; ".join(dict.fromkeys(p.hint for p in problems))
    return message, hint


CHECKS = (
    RULE_REGION,
    RULE_ZONE,
    RULE_OFFERED,
    RULE_QUOTA,
    RULE_PLAN_EXISTS,
    RULE_PLAN_ACTIVE,
    RULE_PLAN_CAPACITY,
    RULE_NAME,
    RULE_VPC,
)


def create_stages(reads: InspectionReads) -> list[Stage]:
    """The `preflight` stage: the pre-create checks as the first stage of `cluster.create`.

    It only reads, so re-running it after a crash repeats nothing. Every later stage should
    need it; it fails permanently with every problem (field: message) and their next steps."""

    async def preflight(ctx: StageContext[CreateCluster]) -> Done:
        command = ctx.cmd
        problems = await check_create(reads, command.spec, command.region)
        if problems:
            message, hint = problems_summary(problems)
            raise PermanentError("PreflightFailed", message, hint)
        return Done({"checks": list(CHECKS)})

    return [Stage("preflight", "Check the spec against the account", preflight)]
