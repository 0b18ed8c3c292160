"""SageMaker training plans bought in the simulator: SearchTrainingPlanOfferings and
CreateTrainingPlan, by the rules AWS documents
(https://docs.aws.amazon.com/sagemaker/latest/dg/search-training-plan-offerings-api-cli-sdk.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTrainingPlan.html):

- a plan is for one target resource, `training-job` or `hyperpod-cluster`;
- durations come in 1-day increments from 1 to 182 days (DurationHours 24 .. 4368, a multiple
  of 24);
- the instance count is one of 1, 2, 4, 8, 16, 32 or 64; the instance type is one of botocore's
  `ReservedCapacityInstanceType` (the generic validation checks the enum);
- an offering is in one Availability Zone where the type is offered; no offering fits a window
  (StartTimeAfter .. EndTimeBefore) shorter than the duration, or starting beyond the
  simulator's booking horizon (`HORIZON_DAYS`): the list is then empty, as AWS answers;
- CreateTrainingPlan buys an offering the account was shown, once, under a new name; the plan
  is Scheduled after payment and Active from its start time, Expired at its end.

Searching by TrainingPlanArn (extension offerings) is not simulated: it is refused, naming why.
The upfront fee is the simulated price list's HyperPod rate x instances x hours (the
simulator's rule; AWS prices each offering itself).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sim.aws import moto_state
from sim.aws.account import ReservedCapacity
from sim.aws.context import SimContext
from sim.aws.errors import AwsError
from sim.aws.pricing import HYPERPOD_HOURLY

Handler = Callable[[dict[str, Any]], dict[str, Any]]

TARGETS = ("training-job", "hyperpod-cluster")
COUNTS = (1, 2, 4, 8, 16, 32, 64)
MIN_HOURS = 24
MAX_HOURS = 182 * 24
HORIZON_DAYS = 56  # offerings start within eight weeks
MAX_OFFERINGS = 3


@dataclass(frozen=True)
class Offering:
    """An offering shown to the account. One asked for without StartTimeAfter (or with one
    already past) starts when it is bought; its id names what was asked, not when, so the same
    search finds the same offering again until it is bought."""

    offering_id: str
    target: str
    instance_type: str
    count: int
    zone_name: str
    zone_id: str
    duration_hours: int
    requested_after: datetime | None
    requested_before: datetime | None
    upfront_fee: str

    def start(self, now: datetime) -> datetime:
        return max(self.requested_after or now, now)

    def view(self, now: datetime) -> dict[str, Any]:
        start = self.start(now)
        return {
            "TrainingPlanOfferingId": self.offering_id,
            "TargetResources": [self.target],
            "RequestedStartTimeAfter": self.requested_after,
            "RequestedEndTimeBefore": self.requested_before,
            "DurationHours": self.duration_hours,
            "DurationMinutes": 0,
            "UpfrontFee": self.upfront_fee,
            "CurrencyCode": "USD",
            "ReservedCapacityOfferings": [
                {
                    "ReservedCapacityType": "Instance",
                    "InstanceType": self.instance_type,
                    "InstanceCount": self.count,
                    "AvailabilityZone": self.zone_name,
                    "DurationHours": self.duration_hours,
                    "DurationMinutes": 0,
                    "StartTime": start,
                    "EndTime": start + timedelta(hours=self.duration_hours),
                }
            ],
        }


def _aware(value: datetime | None) -> datetime | None:
    """A parsed timestamp in UTC (the wire's epoch seconds may come back without a zone)."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _invalid(message: str) -> AwsError:
    return AwsError("ValidationException", message)


class TrainingPlanOfferings:
    """Offerings shown to the account, and the plans bought from them."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.offerings: dict[str, Offering] = {}
        self.bought: set[str] = set()

    def operations(self) -> dict[str, Handler]:
        return {
            "SearchTrainingPlanOfferings": self.search,
            "CreateTrainingPlan": self.create,
        }

    def _target(self, p: dict[str, Any]) -> str:
        targets = list(p.get("TargetResources") or [])
        if len(targets) != 1 or targets[0] not in TARGETS:
            raise _invalid(
                "TargetResources must name one target resource: training-job or hyperpod-cluster."
            )
        return str(targets[0])

    @staticmethod
    def _count(p: dict[str, Any]) -> int:
        count = p.get("InstanceCount")
        if count not in COUNTS:
            raise _invalid(
                f"InstanceCount {count} is not offered; choose 1, 2, 4, 8, 16, 32 or 64 instances."
            )
        return int(count)

    @staticmethod
    def _hours(p: dict[str, Any]) -> int:
        hours = p.get("DurationHours")
        if hours is None or not MIN_HOURS <= int(hours) <= MAX_HOURS or int(hours) % 24:
            raise _invalid(
                f"DurationHours {hours} is not offered; durations are 1 to 182 days in 1-day "
                "increments (24 to 4368 hours, a multiple of 24)."
            )
        return int(hours)

    def search(self, p: dict[str, Any]) -> dict[str, Any]:
        if p.get("TrainingPlanArn"):
            raise _invalid("Searching extension offerings (TrainingPlanArn) is not simulated.")
        if not p.get("InstanceType"):
            raise _invalid("InstanceType is required to search training plan offerings.")
        target = self._target(p)
        count = self._count(p)
        hours = self._hours(p)
        now = self.ctx.now()
        after = _aware(p.get("StartTimeAfter"))
        before = _aware(p.get("EndTimeBefore"))
        if before is not None and before <= (after or now):
            raise _invalid("EndTimeBefore must be later than StartTimeAfter (and than now).")
        start = max(after or now, now)
        found: list[Offering] = []
        if start <= now + timedelta(days=HORIZON_DAYS) and (
            before is None or start + timedelta(hours=hours) <= before
        ):
            instance_type = str(p["InstanceType"])
            zones = [
                (name, zone_id)
                for name, zone_id in moto_state.zones(self.ctx.account_id, self.ctx.region)
                if self.ctx.account.offered_in(instance_type, zone_id)
            ]
            rate = Decimal(HYPERPOD_HOURLY.get(instance_type, "0"))
            fee = f"{(rate * count * hours).quantize(Decimal('0.01'))}"
            for name, zone_id in zones[:MAX_OFFERINGS]:
                asked = [after.isoformat() if after else "", before.isoformat() if before else ""]
                key = "|".join([instance_type, str(count), zone_id, str(hours), target, *asked])
                offering = Offering(
                    "tpo-" + hashlib.sha256(key.encode()).hexdigest()[:32],
                    target,
                    instance_type,
                    count,
                    name,
                    zone_id,
                    hours,
                    after,
                    before,
                    fee,
                )
                if offering.offering_id in self.bought:
                    continue  # its capacity is reserved: no longer offered
                self.offerings[offering.offering_id] = offering
                found.append(offering)
        return {"TrainingPlanOfferings": [o.view(now) for o in found]}

    def create(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["TrainingPlanName"]
        if self.ctx.account.training_plan(name) is not None:
            raise AwsError("ResourceInUse", f"Training plan {name} already exists.")
        offering = self.offerings.get(p["TrainingPlanOfferingId"])
        if offering is None or offering.offering_id in self.bought:
            raise AwsError(
                "ResourceNotFound",
                f"Training plan offering {p['TrainingPlanOfferingId']} does not exist or was "
                "already used; search the offerings again.",
            )
        now = self.ctx.now()
        start = offering.start(now)
        self.bought.add(offering.offering_id)
        plan = self.ctx.account.add_training_plan(
            name,
            [ReservedCapacity(offering.instance_type, offering.count, offering.zone_id)],
            status="Scheduled",
            start_time=start,
            duration_hours=offering.duration_hours,
            target_resources=[offering.target],
            upfront_fee=offering.upfront_fee,
        )
        payment = self.ctx.profile.eks_addon_install

        def active() -> None:
            if plan.status == "Scheduled":
                plan.status = "Active"

        def expired() -> None:
            plan.status = "Expired"

        self.ctx.scheduler.after(max(payment, (start - now).total_seconds()), active)
        self.ctx.scheduler.after((plan.end_time - now).total_seconds(), expired)
        return {"TrainingPlanArn": plan.arn}
