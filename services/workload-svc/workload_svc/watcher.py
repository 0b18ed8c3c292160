"""The status watcher: every job not yet finished is observed in its cluster, and each change
of phase, restarts used against the budget, faulty pods or reason becomes a `JobStatusChanged`
event together with the read model's update (one transaction; a compare-and-set, so two
replicas watching the same job record each change once)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from shared.contracts.workloads import NAMESPACE, JobStatusChanged
from shared.errors import StageError
from shared.logging import get_logger
from shared.operations import append_event
from workload_svc.access import Clusters
from workload_svc.domain.status import Observed, observe

log = get_logger("workload_svc.watcher")

WATCHED = ("pending", "running", "restarting", "suspended")


def changed(row: dict[str, Any], seen: Observed) -> bool:
    before = (row["status"], row["restarts"], tuple(row["faulty_pods"] or []), row["reason"])
    return before != seen.key()


class StatusWatcher:
    def __init__(self, pool: asyncpg.Pool, clusters: Clusters, interval: float = 0.5) -> None:
        self.pool = pool
        self.clusters = clusters
        self.interval = interval

    async def run(self) -> None:
        while True:
            try:
                await self.once()
            except Exception as exc:
                log.warning("job watch round failed", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(self.interval)

    async def once(self) -> int:
        async with self.pool.acquire() as conn:
            rows = [
                dict(r)
                for r in await conn.fetch(
                    # Only clusters that can be reached: a deleted or failed cluster's jobs
                    # keep their last observation.
                    "SELECT j.* FROM jobs j JOIN clusters c ON c.name = j.cluster"
                    " WHERE j.status = ANY($1::text[]) AND c.status IN ('active', 'imported')"
                    " AND c.endpoint IS NOT NULL",
                    list(WATCHED),
                )
            ]
        changes = 0
        for row in rows:
            try:
                changes += await self._observe(row)
            except StageError as exc:
                log.warning("job not observed", job=row["name"], error=exc.message)
        return changes

    async def _observe(self, row: dict[str, Any]) -> int:
        kube = await self.clusters.kube(row["cluster"])
        obj = await kube.get(row["api_version"], row["kind"], row["name"], NAMESPACE)
        pods = await self.clusters.pods_of(kube, row["name"]) if obj is not None else []
        seen = observe(row["kind"], obj, pods)
        if seen is None:
            seen = Observed(
                "failed",
                row["restarts"],
                row["budget"],
                [],
                [],
                "Deleted",
                f"{row['kind']} {row['name']} was deleted outside Hyperpilot",
            )
        if not changed(row, seen):
            if row["pods"] != seen.pods:
                async with self.pool.acquire() as conn:
                    await conn.execute(
                        "UPDATE jobs SET pods = $3, updated_at = now()"
                        " WHERE cluster = $1 AND name = $2",
                        row["cluster"],
                        row["name"],
                        seen.pods,
                    )
            return 0
        async with self.pool.acquire() as conn, conn.transaction():
            updated = await conn.execute(
                "UPDATE jobs SET status = $3, restarts = $4, budget = COALESCE($5, budget),"
                " faulty_pods = $6, pods = $7, reason = $8, message = $9, updated_at = now()"
                " WHERE cluster = $1 AND name = $2 AND status = $10 AND restarts = $11"
                " AND reason IS NOT DISTINCT FROM $12",
                row["cluster"],
                row["name"],
                seen.status,
                seen.restarts,
                seen.budget,
                seen.faulty_pods,
                seen.pods,
                seen.reason,
                seen.message,
                row["status"],
                row["restarts"],
                row["reason"],
            )
            if updated.endswith(" 0"):
                return 0
            await append_event(
                conn,
                operation_id=None,
                domain="workload",
                event=JobStatusChanged(
                    cluster=row["cluster"],
                    name=row["name"],
                    status=seen.status,
                    previous=row["status"],
                    restarts=seen.restarts,
                    budget=seen.budget,
                    faulty_pods=seen.faulty_pods,
                    reason=seen.reason,
                    message=seen.message,
                ),
                principal="system",
            )
        return 1
