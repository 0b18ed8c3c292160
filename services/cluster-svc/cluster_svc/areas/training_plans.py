"""The training-plans area: search SageMaker's offerings (`qry.cluster.training_plan_offerings`)
and buy one (`BuyTrainingPlan`: its dry run shows the offering and its upfront fee, the purchase
confirms that fee; `domain.training_plans`). A bought plan is used for an instance group with
capacity_type training-plan and its ARN, checked by the instance-group rules."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.training_plans import TrainingPlans
from cluster_svc.areas import Area
from cluster_svc.domain import inspection
from cluster_svc.domain.training_plans import buy_workflow, purchase_plan, purchase_problems
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.contracts.training_plans import BuyTrainingPlan, OfferingSearch
from shared.queries import BadRequest

OFFERINGS = query_subject("cluster", "training_plan_offerings")


def _search(request: dict[str, Any]) -> OfferingSearch:
    try:
        return OfferingSearch.model_validate(request.get("search") or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "search"
        hint = getattr(first.get("ctx", {}).get("error"), "hint", None)
        raise BadRequest(f"{where}: {first['msg']}", hint or "fix the search") from exc


def build(aws: AwsClients) -> Area:
    api = TrainingPlans(aws)

    async def offerings(request: dict[str, Any]) -> Any:
        return await api.search(_search(request))

    async def plan(payload: dict[str, Any]) -> Plan:
        cmd = BuyTrainingPlan.from_payload(payload)
        found = await api.search(cmd.search)
        offering, problems = purchase_problems(cmd, found, await api.describe(cmd.name))
        if problems:
            message, hint = inspection.problems_summary(problems)
            raise BadRequest(message, hint, [p.to_json() for p in problems])
        assert offering is not None
        return purchase_plan(cmd, offering)

    return Area(
        workflows={BuyTrainingPlan.__name__: buy_workflow(api)},
        planners={BuyTrainingPlan.__name__: plan},
        read_routes={OFFERINGS: offerings},
    )
