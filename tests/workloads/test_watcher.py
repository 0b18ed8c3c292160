"""The status watcher on a real database with a fake cluster: a change is recorded once, with
its event, whichever of two watchers sees it; nothing changes, nothing is emitted."""

from __future__ import annotations

from typing import Any

import asyncpg

from workload_svc.watcher import StatusWatcher


class FakeKube:
    def __init__(self) -> None:
        self.job: dict[str, Any] | None = {
            "spec": {"runPolicy": {"jobMaxRetryCount": 2}},
            "status": {"conditions": [{"type": "Running", "status": "True"}]},
        }

    async def get(self, api_version: str, kind: str, name: str, namespace: str) -> Any:
        return self.job


class FakeClusters:
    def __init__(self, kube: FakeKube) -> None:
        self.the_kube = kube

    async def kube(self, cluster: str) -> FakeKube:
        return self.the_kube

    async def pods_of(
        self, kube: Any, job: str, namespace: str = "default"
    ) -> list[dict[str, Any]]:
        return [{"metadata": {"name": f"{job}-pods-0"}, "status": {"phase": "Running"}}]


async def _seed(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO clusters (name, region, status, managed, endpoint, ca_data)"
            " VALUES ('c', 'us-east-1', 'active', true, 'https://x', 'Y2E=')"
        )
        await conn.execute(
            "INSERT INTO jobs (cluster, name, recipe, api_version, kind, spec, status, budget)"
            " VALUES ('c', 'j', 'pytorch', 'sagemaker.amazonaws.com/v1', 'HyperPodPyTorchJob',"
            " '{}', 'pending', 2)"
        )


async def _events(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT payload FROM events WHERE type = 'JobStatusChanged' ORDER BY seq"
        )
    return [dict(r["payload"]) for r in rows]


async def test_each_change_is_recorded_once_with_its_event(pool: asyncpg.Pool) -> None:
    await _seed(pool)
    kube = FakeKube()
    first, second = (StatusWatcher(pool, FakeClusters(kube)) for _ in range(2))  # type: ignore[arg-type]
    assert await first.once() == 1
    assert await second.once() == 0  # already recorded
    assert await first.once() == 0
    assert kube.job is not None
    kube.job["status"] = {
        "restartCount": 1,
        "conditions": [{"type": "Restarting", "status": "True", "reason": "PodLevelRestart"}],
        "latestFaultyPodInstanceList": {"faultyPodList": ["j-pods-0"]},
    }
    assert await second.once() == 1
    kube.job["status"] = {
        "restartCount": 2,
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "JobMaxRetryCountExceeded",
                "message": "m",
            }
        ],
    }
    assert await first.once() == 1
    assert await first.once() == 0  # a failed job is no longer watched
    events = await _events(pool)
    assert [(e["status"], e["restarts"], e["faulty_pods"]) for e in events] == [
        ("running", 0, []),
        ("restarting", 1, ["j-pods-0"]),
        ("failed", 2, []),
    ]
    assert events[-1]["reason"] == "JobMaxRetryCountExceeded" and events[-1]["budget"] == 2
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT status, restarts, reason FROM jobs WHERE name = 'j'")
    assert dict(row) == {"status": "failed", "restarts": 2, "reason": "JobMaxRetryCountExceeded"}


async def test_jobs_of_an_unreachable_cluster_are_not_watched(pool: asyncpg.Pool) -> None:
    await _seed(pool)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE clusters SET status = 'deleting'")
    assert await StatusWatcher(pool, FakeClusters(FakeKube())).once() == 0  # type: ignore[arg-type]
