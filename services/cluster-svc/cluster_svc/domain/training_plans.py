"""Buying a training plan (pure): the offering a purchase names, found again by the search it
came from; the refusals (an offering no longer offered, a fee not the one offered, a name taken
by another plan); the dry-run plan that shows the price; and the purchase stage.

AWS has no read of one offering: the purchase carries its search, which is run again, and the
offering must be among the answers with the fee the buyer confirmed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Protocol

from cluster_svc.domain.inspection import Problem
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.contracts.training_plans import BuyTrainingPlan, OfferingSearch
from shared.errors import PermanentError
from shared.stages import Done, Stage, StageContext, Workflow

RULE_OFFERED = "offering_offered"
RULE_FEE = "upfront_fee_confirmed"
RULE_NAME = "plan_name_free"


class TrainingPlanApi(Protocol):
    """SageMaker's training-plan calls (`adapters.training_plans.TrainingPlans`)."""

    async def search(self, search: OfferingSearch) -> list[dict[str, Any]]: ...
    async def describe(self, name: str) -> dict[str, Any] | None: ...
    async def create(self, name: str, offering_id: str) -> str: ...


def fee_text(fee: str | None) -> str:
    return f"${Decimal(fee or '0'):,.2f}"


def offering_sentence(offering: dict[str, Any]) -> str:
    """e.g. "2 x ml.p5.48xlarge in us-east-1c for 48 h from 2026-12-01T20:40:00+00:00"."""
    return (
        f"{offering['instance_count']} x {offering['instance_type']} in "
        f"{offering['availability_zone']} for {offering['duration_hours']} h from "
        f"{offering['start_time']} ({', '.join(offering['target_resources'])})"
    )


def purchase_problems(
    cmd: BuyTrainingPlan, offerings: list[dict[str, Any]], existing: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The offering the purchase names, and why it cannot be bought, if it cannot."""
    if existing is not None:
        return None, [
            Problem(
                "name",
                RULE_NAME,
                f"training plan {cmd.name} exists ({existing.get('Status', 'Unknown')})",
                "choose another name, or use the plan you have",
            )
        ]
    offering = next((o for o in offerings if o["offering_id"] == cmd.offering_id), None)
    if offering is None:
        return None, [
            Problem(
                "offering_id",
                RULE_OFFERED,
                f"offering {cmd.offering_id} is not offered for this search any more",
                "search the offerings again and choose one of those answered",
            )
        ]
    confirmed = cmd.confirm_upfront_fee
    if confirmed is not None and Decimal(offering["upfront_fee"]) != Decimal(confirmed):
        return offering, [
            Problem(
                "confirm_upfront_fee",
                RULE_FEE,
                f"the offering's upfront fee is {fee_text(offering['upfront_fee'])} "
                f"{offering['currency']}, not {fee_text(confirmed)}",
                f"run the dry run and confirm {offering['upfront_fee']} to buy it",
            )
        ]
    return offering, []


def purchase_plan(cmd: BuyTrainingPlan, offering: dict[str, Any]) -> Plan:
    fee = offering["upfront_fee"]
    return Plan(
        command="BuyTrainingPlan",
        target=f"training-plans/{cmd.name}",
        noop=False,
        diff={
            "training_plan": FieldChange(
                actual=None,
                requested={
                    "name": cmd.name,
                    "offering_id": cmd.offering_id,
                    "upfront_fee": fee,
                    "currency": offering["currency"],
                    **{
                        k: offering[k]
                        for k in (
                            "instance_type",
                            "instance_count",
                            "availability_zone",
                            "start_time",
                            "end_time",
                            "duration_hours",
                            "target_resources",
                        )
                    },
                },
            )
        },
        calls=[
            PlannedCall(
                service="sagemaker",
                operation="CreateTrainingPlan",
                params={"TrainingPlanName": cmd.name, "TrainingPlanOfferingId": cmd.offering_id},
            )
        ],
        notes=[
            f"buys {offering_sentence(offering)} for an upfront fee of {fee_text(fee)} "
            f"{offering['currency']}, charged when bought and not refunded",
            f"to buy it, send confirm_upfront_fee {fee}",
        ],
    )


def _refused(problems: list[Problem]) -> PermanentError:
    first = problems[0]
    return PermanentError(first.rule, first.message, first.hint)


def buy_workflow(api: TrainingPlanApi) -> Workflow[BuyTrainingPlan]:
    async def check(ctx: StageContext[BuyTrainingPlan]) -> Done:
        cmd = ctx.cmd
        existing = await api.describe(cmd.name)
        if cmd.confirm_upfront_fee is None:
            raise PermanentError(
                RULE_FEE,
                "the purchase confirms no upfront fee",
                "run it with dry_run to see the fee, then send confirm_upfront_fee",
            )
        offering, problems = purchase_problems(cmd, await api.search(cmd.search), existing)
        if problems:
            raise _refused(problems)
        assert offering is not None
        return Done({"offering_id": cmd.offering_id, "upfront_fee": offering["upfront_fee"]})

    async def buy(ctx: StageContext[BuyTrainingPlan]) -> Done:
        cmd = ctx.cmd
        existing = await api.describe(cmd.name)
        if existing is not None:  # bought by an earlier run of this stage
            return Done(
                {"arn": existing["TrainingPlanArn"], "status": existing.get("Status")}, noop=True
            )
        arn = await api.create(cmd.name, cmd.offering_id)
        found = await api.describe(cmd.name)
        return Done({"arn": arn, "status": (found or {}).get("Status", "Pending")})

    return Workflow(
        kind=BuyTrainingPlan.kind(),
        domain=BuyTrainingPlan.domain,
        stages=(
            Stage("offering", "Find the offering and its fee again", check),
            Stage("training_plan", "Buy the training plan", buy, needs=("offering",)),
        ),
        command=BuyTrainingPlan,
    )
