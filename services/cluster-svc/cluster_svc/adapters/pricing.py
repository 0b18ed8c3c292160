"""List prices from the AWS Price List API (`pricing:GetProducts`), cached in memory.

AWS serves the API from us-east-1, eu-central-1 and ap-south-1 only, each with the prices of
every region: the reader asks the endpoint nearest the control plane's region and filters by
`regionCode`. Three reads make the table (HyperPod instances, NAT gateways, FSx for Lustre),
each paged with NextToken; each region's table (the region of the running command or query:
a cluster's prices are its region's) is kept for `ttl` seconds (a day by default: the price
list is republished rarely) and read again after. Concurrent readers share one read. A failed
read is the reader's error (no table is made up); a table already held keeps serving until it
is replaced.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cluster_svc.adapters.aws import AwsClients, stage_error
from cluster_svc.domain.prices import (
    EC2,
    FSX,
    HYPERPOD_COMPONENT,
    SAGEMAKER,
    PriceTable,
    price_table,
)

PRICE_LIST_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
DEFAULT_TTL = 24 * 3600.0


def endpoint_region(region: str) -> str:
    """The Price List endpoint to ask for `region`'s prices."""
    if region.startswith("eu-") or region.startswith("me-") or region.startswith("af-"):
        return "eu-central-1"
    if region.startswith("ap-"):
        return "ap-south-1"
    return "us-east-1"


def _term(field: str, value: str) -> dict[str, str]:
    return {"Type": "TERM_MATCH", "Field": field, "Value": value}


class PriceList:
    """The price table of each region asked for (the region of the running command or query,
    else the default region), read through boto3 and cached per region with a TTL."""

    def __init__(
        self,
        aws: AwsClients,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.aws = aws
        self.ttl = ttl
        self.clock = clock
        self._tables: dict[str, tuple[PriceTable, float]] = {}  # region -> (table, read at)
        self._locks: dict[str, asyncio.Lock] = {}
        self.reads = 0  # GetProducts pages asked for (what the cache saves)

    def _products(self, region: str, service_code: str, filters: list[dict[str, str]]) -> list[str]:
        client = self.aws.client("pricing", endpoint_region(region))
        items: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {
                "ServiceCode": service_code,
                "Filters": [_term("regionCode", region), *filters],
                "FormatVersion": "aws_v1",
                "MaxResults": 100,
            }
            if token:
                params["NextToken"] = token
            page = client.get_products(**params)
            self.reads += 1
            items.extend(page.get("PriceList") or [])
            token = page.get("NextToken")
            if not token:
                return items

    def _read(self, region: str) -> PriceTable:
        documents = [
            *self._products(region, SAGEMAKER, [_term("component", HYPERPOD_COMPONENT)]),
            *self._products(region, EC2, [_term("productFamily", "NAT Gateway")]),
            *self._products(region, FSX, [_term("fileSystemType", "Lustre")]),
        ]
        return price_table(
            documents,
            region=region,
            endpoint_region=endpoint_region(region),
            fetched_at=datetime.now(UTC),
        )

    def _fresh(self, region: str) -> PriceTable | None:
        held = self._tables.get(region)
        if held is not None and self.clock() - held[1] < self.ttl:
            return held[0]
        return None

    async def table(self) -> PriceTable:
        """The region's cached table, read again once it is older than the TTL."""
        region = self.aws.region
        if (fresh := self._fresh(region)) is not None:
            return fresh
        async with self._locks.setdefault(region, asyncio.Lock()):
            if (fresh := self._fresh(region)) is not None:
                return fresh
            try:
                table = await asyncio.to_thread(self._read, region)
            except (ClientError, BotoCoreError) as exc:
                if region in self._tables:
                    return self._tables[region][0]
                raise stage_error(exc) from exc
            self._tables[region] = (table, self.clock())
            return table
