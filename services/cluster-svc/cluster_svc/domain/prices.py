"""List prices (pure): the price table read from the AWS Price List API, and what a plan adds
per hour at those prices.

The table is built from GetProducts' `PriceList` documents (`price_table`): the On-Demand USD
price of SageMaker HyperPod instances (`AmazonSageMaker`, component HyperPod, per instance-hour),
EC2 NAT gateways (`AmazonEC2`, NAT Gateway, per hour) and FSx for Lustre storage (`AmazonFSx`,
per GB-month by deployment type and throughput per TiB, billed hourly as 1/730 of a month).
The table carries its source: the API, the endpoint's region, the price list's publication date
and when it was read.

A plan's cost (`plan_cost`) sums the priced resources its AWS calls add: instance groups
(instances added or removed x the type's hourly price; a deleted group's instances from the
deletion's diff), NAT gateways and FSx file systems; resources with
no price in the table are listed as unpriced, never counted as free.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from shared.contracts.capacity import (
    ClusterCapacity,
    InfrastructureCost,
    InfrastructureFacts,
    PriceSource,
)
from shared.contracts.plan import CostItem, Plan, PlanCost

HOURS_PER_MONTH = 730
SAGEMAKER = "AmazonSageMaker"
EC2 = "AmazonEC2"
FSX = "AmazonFSx"
HYPERPOD_COMPONENT = "HyperPod"
SCRATCH_THROUGHPUT = 200  # SCRATCH_2 has one throughput: 200 MB/s per TiB


@dataclass(frozen=True)
class PriceTable:
    """USD list prices of one region, and where they come from."""

    source: PriceSource
    instance_hour: Mapping[str, float] = field(default_factory=dict)  # ml.* type -> USD/h
    nat_gateway_hour: float | None = None
    # (deployment type as FSx names it, e.g. PERSISTENT_2; MB/s per TiB) -> USD per GB-month
    lustre_gb_month: Mapping[tuple[str, int], float] = field(default_factory=dict)

    def instance(self, instance_type: str | None) -> float | None:
        """USD per hour of one instance, None when the table has no price for it."""
        if not instance_type:
            return None
        name = instance_type if instance_type.startswith("ml.") else f"ml.{instance_type}"
        return self.instance_hour.get(name)

    def lustre_hour(self, deployment: str, throughput: int | None, gib: int) -> float | None:
        """USD per hour of a Lustre file system of `gib` GiB, None if unpriced."""
        per_tib = SCRATCH_THROUGHPUT if deployment.upper().startswith("SCRATCH") else throughput
        if per_tib is None:
            return None
        monthly = self.lustre_gb_month.get((deployment.upper(), int(per_tib)))
        return None if monthly is None else monthly * gib / HOURS_PER_MONTH


def _on_demand_usd(document: Mapping[str, Any]) -> tuple[float, str] | None:
    """(price, unit) of a product's first On-Demand price dimension."""
    for term in ((document.get("terms") or {}).get("OnDemand") or {}).values():
        for dimension in (term.get("priceDimensions") or {}).values():
            usd = (dimension.get("pricePerUnit") or {}).get("USD")
            if usd is not None:
                return float(usd), str(dimension.get("unit", ""))
    return None


def _published(document: Mapping[str, Any]) -> date | None:
    raw = document.get("publicationDate")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).date()
    except ValueError:
        return None


def price_table(
    documents: Iterable[str | Mapping[str, Any]],
    *,
    region: str,
    endpoint_region: str,
    fetched_at: datetime,
) -> PriceTable:
    """The table of GetProducts' PriceList items (JSON strings, or already parsed)."""
    instances: dict[str, float] = {}
    lustre: dict[tuple[str, int], float] = {}
    nat: float | None = None
    published: set[date] = set()
    for raw in documents:
        document: Mapping[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
        product = document.get("product") or {}
        attributes = product.get("attributes") or {}
        if attributes.get("regionCode") not in (None, region):
            continue
        price = _on_demand_usd(document)
        if price is None:
            continue
        usd, unit = price
        service = document.get("serviceCode")
        day = _published(document)
        if day is not None:
            published.add(day)
        if (
            service == SAGEMAKER
            and attributes.get("component") == HYPERPOD_COMPONENT
            and unit == "Hrs"
        ):
            instances[str(attributes.get("instanceType"))] = usd
        elif service == EC2 and product.get("productFamily") == "NAT Gateway" and unit == "Hrs":
            nat = usd
        elif service == FSX and attributes.get("fileSystemType") == "Lustre" and unit == "GB-Mo":
            deployment = str(attributes.get("deploymentOption", "")).upper()
            try:
                throughput = int(str(attributes.get("throughputCapacity")))
            except ValueError:
                continue
            lustre[(deployment, throughput)] = usd
    as_of = max(published) if published else fetched_at.date()
    source = PriceSource(
        source=f"AWS Price List API (pricing:GetProducts, {endpoint_region} endpoint), "
        f"On-Demand prices published {as_of.isoformat()}",
        as_of=as_of,
        region=region,
        fetched_at=fetched_at,
    )
    return PriceTable(source, instances, nat, lustre)


# ---- what a plan adds ----------------------------------------------------------------------


def _count_before(plan: Plan, group: str) -> int | None:
    """The group's instance count before the plan: the diff's `count`, 0 for a group the plan
    adds, None when the diff does not change the count."""
    change = plan.diff.get("count")
    if change is not None and isinstance(change.actual, int):
        return int(change.actual)
    added = plan.diff.get("instance_group")
    if added is not None and added.actual is None:
        return 0
    return None


def _instance_items(
    plan: Plan, groups: Iterable[Mapping[str, Any]], creating: bool
) -> list[tuple[str, str, str, int, str | None]]:
    """(group, instance type, instances added, training plan ARN) of each group whose count
    changes."""
    items: list[tuple[str, str, str, int, str | None]] = []
    for group in groups:
        name = str(group.get("InstanceGroupName", ""))
        instance_type = str(group.get("InstanceType", ""))
        count = int(group.get("InstanceCount") or 0)
        before = 0 if creating else _count_before(plan, name)
        if before is None or count == before:
            continue
        plan_arn = group.get("TrainingPlanArn")
        items.append(("instance_group", name, instance_type, count - before, plan_arn))
    return items


def _deleted_items(plan: Plan) -> list[tuple[str, str, str, int, str | None]]:
    """The group an instance-group deletion removes, with its instances (the deletion's diff:
    `count` N -> 0, `instance_type`, `training_plan_arn` when it has one)."""
    diff = plan.diff
    group, count, kind = diff.get("instance_group"), diff.get("count"), diff.get("instance_type")
    if group is None or count is None or kind is None or not isinstance(count.actual, int):
        return []
    on_plan = diff.get("training_plan_arn")
    arn = str(on_plan.actual) if on_plan is not None and on_plan.actual else None
    return [("instance_group", str(group.actual), str(kind.actual), -count.actual, arn)]


def _rounded(value: float) -> float:
    return round(value, 4)


def plan_cost(plan: Plan, prices: PriceTable) -> PlanCost | None:
    """What the plan adds per hour at list prices; None when it touches nothing priced."""
    priced: list[CostItem] = []
    unpriced: list[str] = []
    for call in plan.calls:
        params = call.params
        if call.service == "sagemaker" and call.operation in ("CreateCluster", "UpdateCluster"):
            changed = _instance_items(
                plan, params.get("InstanceGroups") or [], call.operation == "CreateCluster"
            )
            if params.get("InstanceGroupsToDelete"):
                changed += _deleted_items(plan)
            for kind, name, instance_type, delta, plan_arn in changed:
                unit = prices.instance(instance_type)
                what = f"instance group {name}: {delta:+d} x {instance_type}"
                if plan_arn:  # paid up front with the plan: nothing by the hour
                    unit = 0.0
                    what += f" on training plan {plan_arn.rsplit('/', 1)[-1]} (prepaid)"
                if unit is None:
                    unpriced.append(what)
                    continue
                priced.append(
                    CostItem(
                        kind=kind,
                        name=name,
                        description=what,
                        quantity=delta,
                        unit_price=unit,
                        unit="instance-hour",
                        per_hour=_rounded(unit * delta),
                    )
                )
        elif call.service == "ec2" and call.operation == "CreateNatGateway":
            if prices.nat_gateway_hour is None:
                unpriced.append("NAT gateway")
                continue
            priced.append(
                CostItem(
                    kind="nat_gateway",
                    name=str(params.get("name") or "nat-gateway"),
                    description="NAT gateway: 1 x hour (data processed is billed per GB besides)",
                    quantity=1,
                    unit_price=prices.nat_gateway_hour,
                    unit="hour",
                    per_hour=_rounded(prices.nat_gateway_hour),
                )
            )
        elif call.service == "fsx" and call.operation == "CreateFileSystem":
            lustre = params.get("LustreConfiguration") or {}
            gib = int(params.get("StorageCapacity") or 0)
            deployment = str(lustre.get("DeploymentType", "SCRATCH_2"))
            throughput = lustre.get("PerUnitStorageThroughput")
            hourly = prices.lustre_hour(
                deployment, int(throughput) if throughput is not None else None, gib
            )
            what = f"FSx for Lustre {gib} GiB {deployment}" + (
                f" {throughput} MB/s/TiB" if throughput is not None else ""
            )
            if hourly is None:
                unpriced.append(what)
                continue
            priced.append(
                CostItem(
                    kind="fsx_file_system",
                    name=str(params.get("name") or "lustre"),
                    description=what,
                    quantity=gib,
                    unit_price=_rounded(hourly / gib) if gib else 0.0,
                    unit="GiB-hour",
                    per_hour=_rounded(hourly),
                )
            )
    if not priced and not unpriced:
        return None
    return PlanCost(
        adds_per_hour=_rounded(sum(i.per_hour for i in priced)),
        items=priced,
        unpriced=unpriced,
        prices=prices.source,
    )


def with_cost(plan: Plan, prices: PriceTable) -> Plan:
    """The plan with its cost and the sentence every face shows ("adds $98.32/h")."""
    cost = plan_cost(plan, prices)
    if cost is None:
        return plan
    verb = "adds" if cost.adds_per_hour >= 0 else "saves"
    sentence = f"{verb} ${abs(cost.adds_per_hour):,.2f}/h at list prices ({cost.prices.as_of})"
    if cost.unpriced:
        sentence += "; unpriced: " + ", ".join(cost.unpriced)
    return plan.model_copy(update={"cost": cost, "notes": [*plan.notes, sentence]})


# ---- what a cluster runs besides its nodes ----------------------------------------------------


def infrastructure_cost(facts: InfrastructureFacts, prices: PriceTable) -> list[InfrastructureCost]:
    """The cluster's NAT gateways and FSx for Lustre file systems at list prices per hour (a file
    system whose deployment type or size is not recorded, or that the table has no price for,
    is listed with no price, never counted as free)."""
    items = [
        InfrastructureCost(
            kind="nat_gateway",
            name=f"nat-gateway-{i + 1}",
            description="NAT gateway: 1 x hour (data processed is billed per GB besides)",
            per_hour=_rounded(prices.nat_gateway_hour)
            if prices.nat_gateway_hour is not None
            else None,
        )
        for i in range(facts.nat_gateways)
    ]
    for fs in facts.file_systems:
        deployment = fs.deployment_type
        hourly = (
            prices.lustre_hour(deployment, fs.throughput_per_tib, fs.capacity_gib)
            if deployment and fs.capacity_gib
            else None
        )
        what = f"FSx for Lustre {fs.file_system_id} (claim {fs.claim}, {fs.source})"
        if fs.capacity_gib:
            what += f": {fs.capacity_gib} GiB"
        if deployment:
            what += f" {deployment}"
        if fs.throughput_per_tib is not None:
            what += f" {fs.throughput_per_tib} MB/s/TiB"
        items.append(
            InfrastructureCost(
                kind="fsx_file_system",
                name=fs.claim,
                description=what,
                per_hour=_rounded(hourly) if hourly is not None else None,
            )
        )
    return items


def with_infrastructure(
    capacity: ClusterCapacity, facts: InfrastructureFacts, prices: PriceTable
) -> ClusterCapacity:
    """The cluster's capacity with its infrastructure priced and added to its cost per hour."""
    items = infrastructure_cost(facts, prices)
    if not items:
        return capacity
    extra = sum(i.per_hour or 0.0 for i in items)
    return capacity.model_copy(
        update={"infrastructure": items, "cost_per_hour": _rounded(capacity.cost_per_hour + extra)}
    )


def infrastructure_per_hour(facts: InfrastructureFacts, prices: PriceTable) -> float:
    return _rounded(sum(i.per_hour or 0.0 for i in infrastructure_cost(facts, prices)))
