"""The training-plan search and purchase contracts refuse what AWS would, on the field, with the
fix (shared.contracts.training_plans)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from shared.contracts.training_plans import BuyTrainingPlan, OfferingSearch

GOOD: dict[str, Any] = {"instance_type": "ml.p5.48xlarge", "instance_count": 2, "duration_days": 7}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"instance_type": "ml.g5.xlarge"}, "training plans do not reserve ml.g5.xlarge"),
        ({"instance_count": 3}, "3 instances is not offered"),
        ({"duration_days": 183}, "183 days is not offered"),
        ({"duration_days": 0}, "0 days is not offered"),
        ({"end_before": "2020-01-01T00:00:00Z"}, "end_before is not after start_after and now"),
        (
            {"start_after": "2030-01-02T00:00:00Z", "end_before": "2030-01-01T00:00:00Z"},
            "end_before is not after start_after",
        ),
    ],
)
def test_a_search_breaking_a_rule_is_refused(change: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as exc:
        OfferingSearch.model_validate({**GOOD, **change})
    assert says in str(exc.value)


def test_a_time_without_a_zone_is_utc() -> None:
    search = OfferingSearch.model_validate({**GOOD, "start_after": "2030-01-01T00:00:00"})
    assert search.start_after == datetime(2030, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("fee", ["NaN", "-1", "ten dollars", "Infinity"])
def test_a_fee_that_is_not_an_amount_is_refused(fee: str) -> None:
    with pytest.raises(ValidationError) as exc:
        BuyTrainingPlan(
            name="p5",
            offering_id="tpo-1",
            search=OfferingSearch(**GOOD),
            confirm_upfront_fee=fee,
            region="us-east-1",
        )
    assert "is not an amount" in str(exc.value)
