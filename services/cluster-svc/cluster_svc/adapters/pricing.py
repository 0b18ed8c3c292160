"""List prices from the AWS Price List API (`pricing:GetProducts`), cached in memory.

AWS serves the API from us-east-1, eu-central-1 and ap-south-1 only, each with the prices of
every region: the reader asks the endpoint nearest the control plane's region and filters by
`regionCode`. Three reads make the table (HyperPod instances, NAT gateways, FSx for Lustre),
each paged with NextToken; the table is kept for `ttl` seconds (a day by default: the price
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
    """The price table of the clients' region, read through boto3 and cached with a TTL."""

    def __init__(
        self,
        aws: AwsClients,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.aws = aws
        self.region = aws.region
        self.endpoint_region = endpoint_region(aws.region)
        self.ttl = ttl
        self.clock = clock
        self._table: PriceTable | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()
        self.reads = 0  # GetProducts pages asked for (what the cache saves)

    def _products(self, service_code: str, filters: list[dict[str, str]]) -> list[str]:
        client = self.aws.client("pricing", self.endpoint_region)
        items: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {
                "ServiceCode": service_code,
                "Filters": [_term("regionCode", self.region), *filters],
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

    def _read(self) -> PriceTable:
        documents = [
            *self._products(SAGEMAKER, [_term("component", HYPERPOD_COMPONENT)]),
            *self._products(EC2, [_term("productFamily", "NAT Gateway")]),
            *self._products(FSX, [_term("fileSystemType", "Lustre")]),
        ]
        return price_table(
            documents,
            region=self.region,
            endpoint_region=self.endpoint_region,
            fetched_at=datetime.now(UTC),
        )

    def _fresh(self) -> bool:
        return self._table is not None and self.clock() - self._read_at < self.ttl

    async def table(self) -> PriceTable:
        """The cached table, read again once it is older than the TTL."""
        if self._fresh():
            assert self._table is not None
            return self._table
        async with self._lock:
            if self._fresh():
                assert self._table is not None
                return self._table
            try:
                table = await asyncio.to_thread(self._read)
            except (ClientError, BotoCoreError) as exc:
                if self._table is not None:
                    return self._table
                raise stage_error(exc) from exc
            self._table, self._read_at = table, self.clock()
            return table
