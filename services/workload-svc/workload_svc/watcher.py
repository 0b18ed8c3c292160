"""The status watcher: every job not yet finished is observed in its cluster, and each change
of phase, restarts used against the budget, faulty pods or reason becomes a `JobStatusChanged`
event together with the read model's update (one transaction; a compare-and-set, so two
replicas watching the same job record each change once)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from shared.contracts.workloads import NAMESPACE
from shared.errors import StageError
from shared.logging import get_logger
from workload_svc import records
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
        changes = 0
        for row in await records.watched_jobs(self.pool, WATCHED):
            try:
                changes += await self._observe(row)
            except StageError as exc:
                log.warning("job not observed", job=row["name"], error=exc.message)
        return changes

    async def _observe(self, row: dict[str, Any]) -> int:
        kube = await self.clusters.kube(row["cluster"])
        namespace = row.get("namespace") or NAMESPACE
        obj = await kube.get(row["api_version"], row["kind"], row["name"], namespace)
        pods = await self.clusters.pods_of(kube, row["name"], namespace) if obj is not None else []
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
                await records.job_pods(self.pool, row, seen.pods)
            return 0
        return int(await records.job_observed(self.pool, row, seen))
