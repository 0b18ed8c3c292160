"""Load: 1,000 operations submitted concurrently are all accepted, all end terminal, and none is
lost or duplicated (one operation and one AWS mutation each). Slow: run with `make reliability`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

from hyperpilot.infra import Postgres
from sim.aws import SimulatedAws
from tests.conftest import TEMPLATE
from tests.e2e.conftest import TOKEN, _stack

OPERATIONS = 1000


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_thousand_concurrent_operations_all_end_once(
    postgres: Postgres, sim_aws: SimulatedAws, tmp_path: Path
) -> None:
    database_url = postgres.create_database(f"load{time.time_ns()}", template=TEMPLATE)
    env = {
        "MUTATIONS_PER_MINUTE": "100000",
        "MUTATION_BURST": "100000",
        "CONSUMER_CONCURRENCY": "32",
    }
    with _stack(tmp_path, database_url, sim_aws, env) as running:
        prefix = f"load{time.time_ns() % 10**8}"
        names = [f"{prefix}-{i}" for i in range(OPERATIONS)]

        async def submit() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=64)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(
                base_url=running.stack.url, headers=headers, limits=limits, timeout=60
            ) as client:
                return await asyncio.gather(
                    *(client.post("/api/v1/storage/buckets", json={"name": n}) for n in names)
                )

        started = time.monotonic()
        responses = asyncio.run(submit())
        accepted = time.monotonic() - started
        assert [r.status_code for r in responses] == [202] * OPERATIONS
        ids = {r.json()["operation_id"] for r in responses}
        assert len(ids) == OPERATIONS

        api = running.client

        def count(status: str) -> int:
            answer = api.get("/api/v1/operations", params={"limit": 1, "status": status})
            return int(answer.headers["X-Total-Count"])

        deadline = time.monotonic() + 900
        while (done := count("succeeded")) < OPERATIONS and time.monotonic() < deadline:
            time.sleep(2)
        finished = time.monotonic() - started
        failed = api.get("/api/v1/operations", params={"status": "failed"}).json()["items"]
        assert failed == [] and done == OPERATIONS, (done, failed[:3])
        creates = [
            c["params"]["Bucket"]
            for c in sim_aws.call_log("s3", "CreateBucket")
            if c["params"]["Bucket"].startswith(prefix + "-")
        ]
        assert sorted(creates) == sorted(names)  # each exactly once
        result = {
            "operations": OPERATIONS,
            "accepted_seconds": round(accepted, 2),
            "all_terminal_seconds": round(finished, 2),
            "lost": OPERATIONS - done,
            "duplicated": len(creates) - len(set(creates)),
        }
        (Path(__file__).resolve().parents[2] / "bench" / "results" / "load.json").write_text(
            json.dumps(result, indent=2) + "\n"
        )
