"""The status watcher: every deployed endpoint is observed in its cluster, and each change of
status, replicas or address becomes an `EndpointStatusChanged` event together with the read
model's update (one transaction; a compare-and-set, so two replicas record each change once)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from inference_svc.access import IN_PROGRESS, Clusters
from inference_svc.domain.status import Observed
from shared.contracts.inference import EndpointSpec, EndpointStatusChanged
from shared.errors import StageError
from shared.logging import get_logger
from shared.operations import append_event

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
        async with self.pool.acquire() as conn:
            rows = await conn.fetch(
                f"SELECT e.* FROM endpoints e WHERE e.status = ANY($1::text[]) AND NOT {IN_PROGRESS}",
                list(WATCHED),
            )
        recorded = 0
        for row in rows:
            try:
                spec = EndpointSpec.from_payload(row["spec"])
                seen = await self.clusters.observe(row["cluster"], spec)
            except (StageError, ValueError) as exc:
                log.info("endpoint not observed", endpoint=row["name"], error=str(exc))
                continue
            if changed(dict(row), seen) and await self._record(dict(row), seen):
                recorded += 1
        return recorded

    async def _record(self, row: dict[str, Any], seen: Observed) -> bool:
        async with self.pool.acquire() as conn, conn.transaction():
            updated = await conn.fetchval(
                "UPDATE endpoints SET status = $3, replicas = $4, ready_replicas = $5,"
                " address = $6, message = $7, updated_at = now()"
                " WHERE cluster = $1 AND name = $2 AND status = $8 AND replicas = $9"
                " AND ready_replicas = $10 RETURNING name",
                row["cluster"],
                row["name"],
                seen.status,
                seen.replicas,
                seen.ready_replicas,
                seen.address,
                seen.message,
                row["status"],
                row["replicas"],
                row["ready_replicas"],
            )
            if updated is None:
                return False
            await append_event(
                conn,
                operation_id=None,
                domain="inference",
                event=EndpointStatusChanged(
                    cluster=row["cluster"],
                    name=row["name"],
                    status=seen.status,
                    previous=row["status"],
                    ready_replicas=seen.ready_replicas,
                    replicas=seen.replicas,
                    message=seen.message,
                ),
                principal="system:inference-svc",
            )
        return True
