"""The instance-groups area: add, update (explicit diff), delete and software update of the
groups of a HyperPod cluster; their dry runs; and `qry.cluster.instance_group_check`, the live
check the gateway asks before it accepts (the rule problems and the plan, in one read)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.areas import Area
from cluster_svc.domain import inspection
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.instance_groups.decisions import Decide, Decision, deciders, to_plan
from cluster_svc.domain.instance_groups.stages import workflows
from cluster_svc.planning import Planner
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.queries import BadRequest, Route

CHECK = query_subject("cluster", "instance_group_check")


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    api = SageMakerClusters(aws)
    by_type = deciders(api, ports.ec2, ports.inspector)

    def planner(command_type: str) -> Planner:
        decide = by_type[command_type]

        async def plan(payload: dict[str, Any]) -> Plan:
            decision, target = await _decide(decide, payload)
            if decision.problems:
                message, hint = inspection.problems_summary(decision.problems)
                raise BadRequest(message, hint)
            return to_plan(decision, command_type, target)

        return plan

    async def check(request: dict[str, Any]) -> Any:
        command_type = str(request.get("type"))
        decide = by_type.get(command_type)
        if decide is None:
            raise BadRequest(
                f"no check for {command_type}", "check one of: " + ", ".join(sorted(by_type))
            )
        decision, target = await _decide(decide, request.get("payload"))
        return {
            "problems": [p.to_json() for p in decision.problems],
            "plan": None
            if decision.problems
            else to_plan(decision, command_type, target).model_dump(mode="json"),
        }

    routes: dict[str, Route] = {CHECK: check}
    return Area(
        workflows=records.recorded(workflows(api, ports.ec2, ports.inspector)),
        planners={name: planner(name) for name in by_type},
        read_routes=routes,
    )


async def _decide(decide: Decide, payload: Any) -> tuple[Decision, str]:
    if not isinstance(payload, dict):
        raise BadRequest("payload is required", "send the command as a JSON object")
    try:
        return await decide(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise BadRequest(
            f"{where}: {first['msg']}", "send the command as the contract says"
        ) from exc
