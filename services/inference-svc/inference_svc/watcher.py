"""The status watcher: every deployed endpoint is observed in its cluster, and each change of
status, replicas or address becomes an `EndpointStatusChanged` event together with the read
model's update (one transaction; a compare-and-set, so two replicas record each change once)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from inference_svc import records
from inference_svc.access import Clusters
from inference_svc.domain.status import Observed
from shared.contracts.inference import EndpointSpec
from shared.errors import StageError
from shared.logging import get_logger

log = get_logger("inference_svc.watcher")

# Every endpoint no operation is working on, whatever its last status: a replica lost and not yet
# replaced reads as deploying, and must still be seen coming back (only a deletion ends the watch).
WATCHED = ("available", "degraded", "deploying", "failed")


def changed(row: dict[str, Any], seen: Observed) -> bool:
    before = (row["status"], row["replicas"], row["ready_replicas"], row["address"])
    return before != seen.key()


class StatusWatcher:
    def __init__(self, pool: asyncpg.Pool, clusters: Clusters, interval: float = 1.0) -> None:
        self.pool = pool
        self.clusters = clusters
        self.interval = interval

    async def run(self) -> None:
        while True:
            try:
                await self.once()
            except Exception as exc:
                log.warning("status watch failed", error=str(exc))
            await asyncio.sleep(self.interval)

    async def once(self) -> int:
        """Observe each watched endpoint once; the number of changes recorded."""
        recorded = 0
        for row in await records.watched_endpoints(self.pool, WATCHED):
            try:
                spec = EndpointSpec.from_payload(row["spec"])
                seen = await self.clusters.observe(row["cluster"], spec)
            except (StageError, ValueError) as exc:
                log.info("endpoint not observed", endpoint=row["name"], error=str(exc))
                continue
            if changed(row, seen) and await records.endpoint_observed(self.pool, row, seen):
                recorded += 1
        return recorded
