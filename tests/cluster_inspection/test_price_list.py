"""The price table read through boto3 from the simulated AWS Price List API
(cluster_svc.adapters.pricing): its source and date, the cache's TTL, one read for concurrent
readers, and a failed read that keeps the table it holds or fails with AWS's error."""

from __future__ import annotations

import asyncio

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.pricing import PriceList, endpoint_region
from shared.errors import StageError
from sim.aws import SimulatedAws
from sim.testing import inject_fault

from .conftest import REGION


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_table_is_read_once_per_ttl_with_its_source_and_date(
    sim: SimulatedAws,
) -> None:
    clock = Clock()
    prices = PriceList(AwsClients(REGION, sim.endpoint_url), ttl=60, clock=clock)
    first, second = await asyncio.gather(prices.table(), prices.table())
    assert first is second
    assert prices.reads == 3  # one page each: HyperPod instances, NAT gateways, Lustre
    assert first.instance("ml.p5.48xlarge") == 113.068
    assert first.nat_gateway_hour == 0.045
    assert first.lustre_gb_month[("PERSISTENT_2", 250)] == 0.21
    assert first.source.as_of.isoformat() == "2026-11-20"
    assert first.source.fetched_at is not None
    assert "AWS Price List API (pricing:GetProducts, us-east-1 endpoint)" in first.source.source
    clock.now += 59
    assert await prices.table() is first and prices.reads == 3
    clock.now += 2
    again = await prices.table()
    assert again is not first and prices.reads == 6


async def test_a_failed_read_keeps_the_held_table_or_says_why(sim: SimulatedAws) -> None:
    clock = Clock()
    prices = PriceList(AwsClients(REGION, sim.endpoint_url), ttl=60, clock=clock)
    with (
        inject_fault(sim, "server_error", service="pricing", operation="GetProducts", times=1),
        pytest.raises(StageError) as exc,
    ):
        await prices.table()
    assert exc.value.code == "InternalErrorException"  # the Price List API's own 5xx
    held = await prices.table()
    clock.now += 120
    with inject_fault(sim, "server_error", service="pricing", operation="GetProducts", times=1):
        assert await prices.table() is held


def test_the_endpoint_is_one_aws_serves_the_price_list_from() -> None:
    assert endpoint_region("us-west-2") == "us-east-1"
    assert endpoint_region("eu-west-1") == "eu-central-1"
    assert endpoint_region("ap-northeast-1") == "ap-south-1"


async def test_each_region_has_its_own_table_read_in_its_scope(sim: SimulatedAws) -> None:
    """A cluster's prices are its region's: inside a command's or query's region scope the
    table read is that region's, cached apart from the default region's."""
    from shared.regions import region_scope
    from shared.service import region_of

    prices = PriceList(AwsClients(REGION, sim.endpoint_url, served=(REGION, "us-west-2")))
    home = await prices.table()
    with region_scope(region_of({"target": {"region": "us-west-2"}})):
        west = await prices.table()
        assert await prices.table() is west
    assert home.source.region == REGION and west.source.region == "us-west-2"
    assert west.instance("ml.p5.48xlarge") and west.nat_gateway_hour  # priced there too
    assert await prices.table() is home and prices.reads == 6
    assert region_of({"region": "eu-west-1", "target": {"region": "us-west-2"}}) == "eu-west-1"
    assert region_of(["not", "a", "payload"]) is None
