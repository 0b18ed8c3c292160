"""The AWS call budget's arithmetic (shared/aws_budget.py): refill, wait, the declared rates."""

from __future__ import annotations

from typing import Any

import pytest

from shared.aws_budget import (
    AccountLimiter,
    WatchBudget,
    account_key,
    refilled,
    wait_seconds,
    watch_key,
)


def test_a_bucket_refills_at_its_rate_up_to_its_capacity() -> None:
    assert refilled(0.0, 20.0, 10.0, 0.5) == 5.0
    assert refilled(-3.0, 20.0, 10.0, 0.1) == pytest.approx(-2.0)
    assert refilled(15.0, 20.0, 10.0, 60.0) == 20.0
    assert refilled(4.0, 20.0, 10.0, -1.0) == 4.0  # a clock step back refills nothing


def test_a_borrowed_token_is_waited_for_until_the_refill_reaches_it() -> None:
    assert wait_seconds(0.0, 10.0) == 0.0
    assert wait_seconds(2.5, 10.0) == 0.0
    assert wait_seconds(-1.0, 10.0) == pytest.approx(0.1)
    assert wait_seconds(-30.0, 60 / 3600) == pytest.approx(1800.0)


def test_keys_name_the_account_and_region_or_the_watcher_and_cluster() -> None:
    assert account_key("123456789012", "us-west-2") == "aws:123456789012:us-west-2"
    assert watch_key("nodes", "team-a") == "watch:nodes:team-a"


@pytest.mark.parametrize("field", ["rate", "burst", "penalty"])
def test_a_limiter_refuses_a_rate_that_is_not_positive(field: str) -> None:
    options: dict[str, Any] = {field: 0.0}
    with pytest.raises(ValueError, match=f"{field} must be greater than 0"):
        AccountLimiter(None, "123456789012", **options)  # type: ignore[arg-type]


def test_a_watch_budget_refuses_no_budget_and_defaults_its_burst_to_ten_minutes() -> None:
    with pytest.raises(ValueError, match="per_hour must be greater than 0"):
        WatchBudget(None, "nodes", 0)  # type: ignore[arg-type]
    assert WatchBudget(None, "nodes", 60).burst == 10.0  # type: ignore[arg-type]
    assert WatchBudget(None, "nodes", 3).burst == 1.0  # type: ignore[arg-type]


def test_a_limiter_not_bound_to_a_loop_lets_the_call_go() -> None:
    slept: list[float] = []
    limiter = AccountLimiter(None, "123456789012", sleep=slept.append)  # type: ignore[arg-type]
    limiter.gate("us-east-1")
    assert slept == [] and limiter.waited == 0.0
