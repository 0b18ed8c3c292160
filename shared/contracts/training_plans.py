"""Training plans: searching SageMaker's offerings and buying one (docs/capacity.md).

The rules are AWS's (SearchTrainingPlanOfferings, CreateTrainingPlan): a plan reserves one
instance type in one Availability Zone for one target resource, for 1 to 182 whole days, with
1, 2, 4, 8, 16, 32 or 64 instances. A purchase names the search it came from and the offering,
and confirms the offering's upfront fee: the dry run shows the fee (it needs no confirmation),
the purchase is refused unless the fee confirmed is the fee AWS offers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.contracts.commands import Command
from shared.contracts.spec import Spec
from shared.regions import REGION_PATTERN
from shared.validation import RuleViolation

# botocore's ReservedCapacityInstanceType (sagemaker 2017-07-24)
PLAN_INSTANCE_TYPES = (
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.4xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge",
    "ml.p6-b300.48xlarge",
    "ml.p6e-gb200.36xlarge",
    "ml.trn1.32xlarge",
    "ml.trn2.48xlarge",
)
PLAN_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MAX_DAYS = 182
PLAN_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$"
OFFERING_PATTERN = r"^[a-z0-9\-]{1,256}$"
Target = Literal["hyperpod-cluster", "training-job"]


class OfferingSearch(Spec):
    """What to search offerings for."""

    instance_type: str = Field(description="One of the types training plans reserve")
    instance_count: int = Field(description="1, 2, 4, 8, 16, 32 or 64")
    duration_days: int = Field(description="1 to 182 whole days")
    target: Target = Field(
        "hyperpod-cluster", description="What the plan is for: a HyperPod cluster or training jobs"
    )
    start_after: datetime | None = Field(None, description="Earliest start (default: now)")
    end_before: datetime | None = Field(None, description="Latest end")
    region: str | None = Field(
        None,
        pattern=REGION_PATTERN,
        description="The region to reserve in: one the control plane serves (default: its"
        " default region)",
    )

    @field_validator("instance_type")
    @classmethod
    def _type(cls, value: str) -> str:
        if value not in PLAN_INSTANCE_TYPES:
            raise RuleViolation(
                f"training plans do not reserve {value}",
                "choose one of " + ", ".join(PLAN_INSTANCE_TYPES),
            )
        return value

    @field_validator("instance_count")
    @classmethod
    def _count(cls, value: int) -> int:
        if value not in PLAN_COUNTS:
            raise RuleViolation(
                f"{value} instances is not offered", "choose 1, 2, 4, 8, 16, 32 or 64 instances"
            )
        return value

    @field_validator("duration_days")
    @classmethod
    def _days(cls, value: int) -> int:
        if not 1 <= value <= MAX_DAYS:
            raise RuleViolation(
                f"{value} days is not offered", f"choose 1 to {MAX_DAYS} days (whole days)"
            )
        return value

    @field_validator("start_after", "end_before")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """A time without a zone is UTC."""
        if value is None or value.tzinfo is not None:
            return value
        return value.replace(tzinfo=UTC)

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.end_before is None:
            return self
        earliest = max(self.start_after or datetime.now(UTC), datetime.now(UTC))
        if self.end_before <= earliest:
            raise RuleViolation(
                "end_before is not after start_after and now",
                "give a window that ends in the future, longer than the duration",
            )
        return self


def check_fee(value: str | None) -> str | None:
    """An amount in USD as a decimal string (how AWS gives an upfront fee)."""
    if value is None:
        return None
    try:
        fee = Decimal(value)
    except InvalidOperation as exc:
        raise RuleViolation(
            f"{value!r} is not an amount", "copy the upfront fee the dry run shows, e.g. 10854.53"
        ) from exc
    if not fee.is_finite() or fee < 0:
        raise RuleViolation(f"{value!r} is not an amount", "copy the upfront fee the dry run shows")
    return value


class BuyTrainingPlan(Command):
    domain = "cluster"
    verb = "buy_training_plan"

    name: str = Field(pattern=PLAN_NAME_PATTERN, description="The new plan's name")
    offering_id: str = Field(pattern=OFFERING_PATTERN, description="The offering to buy")
    search: OfferingSearch = Field(description="The search that showed the offering")
    confirm_upfront_fee: str | None = Field(
        None,
        description="The offering's upfront fee in USD as the dry run shows it, e.g. 10854.53;"
        " a purchase without it is refused (a dry run needs none)",
    )
    region: str

    _fee = field_validator("confirm_upfront_fee")(check_fee)
