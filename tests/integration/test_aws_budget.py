"""The AWS call budget with real PostgreSQL and boto3 over HTTP against the simulated AWS: two
replicas (two pools, two limiters) share one bucket per account and region, every request of a
client made by `aws_session` spends from it, a throttling answer slows every replica, and a
watcher's declared budget per cluster refuses what it does not hold."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from botocore.config import Config

from shared.adapters import aws_session
from shared.aws_budget import AccountLimiter, WatchBudget, figures
from shared.db import create_pool
from sim.aws import SimulatedAws
from sim.testing import aws_env, inject_fault, simulated_aws

ACCOUNT = "333333333333"
REGION = "us-east-1"
sim = simulated_aws(profile="fast", account_id=ACCOUNT, set_env=False, scope="module")


@pytest.fixture
def sim_env(sim: SimulatedAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedAws]:
    for key, value in aws_env(sim).items():
        monkeypatch.setenv(key, value)
    yield sim
    aws_session.use_budget(None)


@pytest.fixture
async def second_pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    p = await create_pool(database_url, min_size=1, max_size=10)
    yield p
    await p.close()


async def test_two_replicas_share_one_bucket_per_account_and_region(
    pool: asyncpg.Pool, second_pool: asyncpg.Pool
) -> None:
    rate, burst, calls = 40.0, 5.0, 40
    replicas = [AccountLimiter(p, ACCOUNT, rate=rate, burst=burst) for p in (pool, second_pool)]
    loop = asyncio.get_running_loop()
    for limiter in replicas:
        limiter.bind(loop)
    started = time.monotonic()
    await asyncio.gather(*(asyncio.to_thread(replicas[i % 2].gate, REGION) for i in range(calls)))
    elapsed = time.monotonic() - started
    # Together, not each: (40 - 5) tokens beyond the burst at 40/s is 0.875 s at the least;
    # two private buckets would have let both replicas' 20 go in 0.375 s.
    assert elapsed >= (calls - burst) / rate * 0.95
    [bucket] = await figures(pool, "aws:")
    assert bucket.key == f"aws:{ACCOUNT}:{REGION}" and bucket.calls == calls
    assert sum(r.waited for r in replicas) > 0
    # Another region is another bucket, full.
    assert await replicas[0].take("eu-west-1") == 0.0


async def test_every_request_of_a_session_client_spends_and_throttling_slows_everyone(
    sim_env: SimulatedAws, pool: asyncpg.Pool
) -> None:
    resolved: list[str] = []

    def account() -> str:
        resolved.append(aws_session.account_id(REGION, sim_env.endpoint_url))
        return resolved[-1]

    limiter = AccountLimiter(pool, account, rate=50.0, burst=50.0, penalty=0.5)
    limiter.bind(asyncio.get_running_loop())
    aws_session.use_budget(limiter)
    sagemaker = aws_session.client("sagemaker", REGION, sim_env.endpoint_url)
    eks = aws_session.client("eks", REGION, sim_env.endpoint_url)
    for _ in range(3):
        await asyncio.to_thread(sagemaker.list_clusters)
    await asyncio.to_thread(eks.list_clusters)
    # The account was resolved once through STS, which names the bucket and is not spent.
    assert resolved == [ACCOUNT]
    [bucket] = await figures(pool, "aws:")
    assert (bucket.key, bucket.calls, bucket.throttled) == (f"aws:{ACCOUNT}:{REGION}", 4, 0)

    # botocore's own retry (standard mode) meets the throttle; the answer empties the shared
    # bucket, so the retry, like any replica's next call, waits out the penalty (0.5 s).
    with inject_fault(sim_env, "throttle", service="sagemaker", operation="ListClusters"):
        started = time.monotonic()
        await asyncio.to_thread(sagemaker.list_clusters)
        assert time.monotonic() - started >= 0.4
    [bucket] = await figures(pool, "aws:")
    assert (bucket.calls, bucket.throttled) == (6, 1)  # each HTTP attempt spends

    aws_session.use_budget(None)
    await asyncio.to_thread(eks.list_clusters)
    [bucket] = await figures(pool, "aws:")
    assert bucket.calls == 6  # nothing spent once the budget is removed


def _clocked(pool: asyncpg.Pool, per_hour: float, burst: float) -> tuple[WatchBudget, Any]:
    """A node-watcher budget refilled on the test's clock (a loaded machine's sleeps are no
    measure), and the function that moves that clock on."""
    now = [datetime(2026, 12, 1, 12, 0, tzinfo=UTC)]

    def advance(by: timedelta) -> None:
        now[0] += by

    return WatchBudget(pool, "nodes", per_hour, burst, clock=lambda: now[0]), advance


async def test_a_watch_budget_refuses_what_the_cluster_has_not_got(pool: asyncpg.Pool) -> None:
    budget, advance = _clocked(pool, per_hour=3600.0, burst=3.0)  # one call a second
    assert await budget.spend("team-a", 3)
    assert not await budget.spend("team-a", 1)
    assert await budget.spend("team-b", 2)  # each cluster its own bucket
    advance(timedelta(seconds=1.1))
    assert await budget.spend("team-a", 1)
    assert not await budget.spend("team-a", 1)
    # One observation dearer than the burst (a cluster of many nodes) still fits, once full.
    assert await budget.spend("team-c", 11)
    spent: dict[str, Any] = {b.key: b.calls for b in await figures(pool, "watch:")}
    assert spent == {"watch:nodes:team-a": 4, "watch:nodes:team-b": 2, "watch:nodes:team-c": 11}


async def test_a_read_on_credit_goes_into_debt_no_further_than_its_overdraft(
    pool: asyncpg.Pool,
) -> None:
    budget, advance = _clocked(pool, per_hour=30.0, burst=5.0)
    assert await budget.spend("c", 4)
    assert not await budget.spend("c", 3)  # 1 left: no overdraft, no read
    assert await budget.spend("c", 3, overdraft=30)  # -2
    assert await budget.spend("c", 28, overdraft=30)  # -30: as deep as allowed
    assert not await budget.spend("c", 1, overdraft=30)
    advance(timedelta(minutes=2))  # one call refilled: -29
    assert await budget.spend("c", 1, overdraft=30)
    assert not await budget.spend("c", 1)  # the debt first: nothing else is spent meanwhile
    [spent] = await figures(pool, "watch:nodes:c")
    assert spent.calls == 36 and spent.tokens == pytest.approx(-30.0)
    # A fresh bucket (full) takes a read on credit too.
    assert await budget.spend("d", 8, overdraft=30)


async def test_a_watch_budget_refills_on_its_clock_and_records_calls_beyond_the_spend(
    pool: asyncpg.Pool,
) -> None:
    budget, advance = _clocked(pool, per_hour=60.0, burst=10.0)
    assert await budget.spend("big", 10)
    await budget.charge("big", 2)  # the listing took two pages more than foreseen
    advance(timedelta(minutes=2))  # 2 calls refilled: the debt of 2 paid, nothing left
    assert not await budget.spend("big", 1)
    advance(timedelta(minutes=1))
    assert await budget.spend("big", 1)
    [spent] = await figures(pool, "watch:nodes:big")
    assert spent.calls == 13


async def test_an_operation_aws_limits_more_tightly_spends_from_its_own_bucket_and_is_not_throttled(
    sim_env: SimulatedAws, pool: asyncpg.Pool
) -> None:
    # The Price List API publishes 10 at once and 5 a second for GetProducts (the simulated AWS
    # throttles at that); the account bucket alone (10 a second, 20 at once) would go beyond it.
    limiter = AccountLimiter(pool, ACCOUNT)
    limiter.bind(asyncio.get_running_loop())
    aws_session.use_budget(limiter)
    no_retries = Config(retries={"total_max_attempts": 1})
    pricing = aws_session.client("pricing", REGION, sim_env.endpoint_url, no_retries)
    throttled_before = sim_env.throttle.throttled
    started = time.monotonic()
    for _ in range(14):
        await asyncio.to_thread(pricing.get_products, ServiceCode="AmazonEC2", MaxResults=1)
    elapsed = time.monotonic() - started
    # 5 tokens beyond the burst kept here (10 less a token of headroom) at 5 a second: 1 s at
    # the least, and no throttling answer
    assert elapsed >= 1.0 * 0.95
    assert sim_env.throttle.throttled == throttled_before
    spent = {b.key: b.calls for b in await figures(pool, "op:")}
    assert spent == {f"op:{ACCOUNT}:{REGION}:pricing:GetProducts": 14}
    # a read whose published bucket is wider than the account's costs no second token
    sagemaker = aws_session.client("sagemaker", REGION, sim_env.endpoint_url, no_retries)
    await asyncio.to_thread(sagemaker.list_clusters)
    assert {b.key for b in await figures(pool, "op:")} == set(spent)
