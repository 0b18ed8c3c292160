"""List prices: the price table read from the AWS Price List API (`adapters.pricing`), the
read that shows it (`qry.cluster.prices`), and every dry run priced with it: a plan that adds
instance groups, NAT gateways or FSx file systems says what it adds per hour
(`domain.prices.with_cost`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cluster_svc.adapters.pricing import PriceList
from cluster_svc.areas import Area
from cluster_svc.domain.prices import PriceTable, with_cost
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.service import Planner

PRICES = query_subject("cluster", "prices")


def table_json(table: PriceTable) -> dict[str, Any]:
    return {
        "prices": table.source.model_dump(mode="json"),
        "instance_types": [
            {"instance_type": name, "price_per_hour": price}
            for name, price in sorted(table.instance_hour.items())
        ],
        "nat_gateway_per_hour": table.nat_gateway_hour,
        "fsx_lustre_per_gb_month": [
            {"deployment_type": deployment, "throughput_per_tib": throughput, "price": price}
            for (deployment, throughput), price in sorted(table.lustre_gb_month.items())
        ],
    }


def build(prices: PriceList) -> Area:
    async def read(_request: dict[str, Any]) -> Any:
        return table_json(await prices.table())

    return Area(read_routes={PRICES: read})


def _priced_planner(planner: Planner, prices: PriceList) -> Planner:
    async def plan(payload: dict[str, Any]) -> Plan:
        answer = await planner(payload)
        try:
            table = await prices.table()
        except StageError as exc:
            note = f"not priced: the price list could not be read ({exc.code}: {exc.message})"
            return answer.model_copy(update={"notes": [*answer.notes, note]})
        return with_cost(answer, table)

    return plan


def priced(areas: list[Area], prices: PriceList) -> list[Area]:
    """The areas with every dry run priced."""
    return [
        replace(area, planners={k: _priced_planner(p, prices) for k, p in area.planners.items()})
        for area in areas
    ]
