"""The instance-groups area: add, update (explicit diff), delete and software update of the
groups of a HyperPod cluster, and their dry runs (`qry.cluster.plan`, also the gateway's verdict
before it accepts: each broken rule is refused with its field, rule, message and hint)."""

from __future__ import annotations

from typing import Any

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.areas import Area
from cluster_svc.domain import inspection
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.instance_groups.decisions import deciders, to_plan
from cluster_svc.domain.instance_groups.stages import workflows
from shared.contracts.plan import Plan
from shared.queries import BadRequest
from shared.service import Planner


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    api = SageMakerClusters(aws)
    by_type = deciders(api, ports.ec2, ports.inspector)

    def planner(command_type: str) -> Planner:
        decide = by_type[command_type]

        async def plan(payload: dict[str, Any]) -> Plan:
            decision, target = await decide(payload)
            if decision.problems:
                message, hint = inspection.problems_summary(decision.problems)
                raise BadRequest(message, hint, [p.to_json() for p in decision.problems])
            return to_plan(decision, command_type, target)

        return plan

    return Area(
        workflows=records.recorded(workflows(api, ports.ec2, ports.inspector)),
        planners={name: planner(name) for name in by_type},
    )
