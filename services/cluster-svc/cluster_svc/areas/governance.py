"""The task-governance area: the UpdateTaskGovernance, CreateTeam, UpdateTeam and DeleteTeam
workflows and their dry runs (also the gateway's verdict: a rule broken on a field is a 422
naming it), and the live reads `qry.cluster.teams` (the scheduler config and every team's
compute quota) and `qry.cluster.pending` (why a job waits)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.capacity_watch import CapacityWatches
from cluster_svc.adapters.governance import LiveGovernance, kueue_objects, namespace_events
from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.adapters.pricing import PriceList
from cluster_svc.areas import Area
from cluster_svc.domain.capacity import cluster_capacity
from cluster_svc.domain.capacity_model import kept_node, kept_pod
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.features.steps import Step
from cluster_svc.domain.governance.actual import GovernanceActual
from cluster_svc.domain.governance.pending import JobRef, PendingFacts, explain, team_usage
from cluster_svc.domain.governance.stages import workflows
from cluster_svc.domain.governance.steps import (
    GovernanceRefusal,
    create_team_steps,
    delete_team_steps,
    governance_plan,
    team_plan,
    teams_read,
    update_team_steps,
)
from shared.contracts.governance import (
    CreateTeam,
    DeleteTeam,
    GovernanceTarget,
    UpdateTaskGovernance,
    UpdateTeam,
)
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.queries import BadRequest

TEAMS = query_subject("cluster", "teams")
PENDING = query_subject("cluster", "pending")


def _invalid(exc: ValidationError, what: str) -> BadRequest:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or what
    return BadRequest(f"{what}.{where}: {first['msg']}", f"send a valid {what}")


def _refused(exc: GovernanceRefusal) -> BadRequest:
    return BadRequest(exc.message, exc.hint or "", [exc.to_field()])


def build(
    aws: AwsClients,
    ports: ClusterPorts,
    prices: PriceList,
    watches: CapacityWatches | None = None,
) -> Area:
    kube = ports.kube if isinstance(ports.kube, EksKubeFactory) else EksKubeFactory(aws.region)
    live = LiveGovernance(aws, kube)
    watched = watches if watches is not None else CapacityWatches()

    def planner(
        kind: type[Any], plan_of: Callable[[Any, GovernanceActual], Plan]
    ) -> Callable[[dict[str, Any]], Any]:
        async def plan(payload: dict[str, Any]) -> Plan:
            try:
                command = kind.from_payload(payload)
            except ValidationError as exc:
                raise _invalid(exc, "command") from exc
            actual = await live.observe(command.target)
            try:
                return plan_of(command, actual)
            except GovernanceRefusal as exc:
                raise _refused(exc) from exc

        return plan

    def team_plan_of(
        name: str, decide: Callable[[Any, GovernanceActual], list[Step]], settings: Any
    ) -> Callable[[Any, GovernanceActual], Plan]:
        def plan_of(command: Any, actual: GovernanceActual) -> Plan:
            team = command.team.name if name == "CreateTeam" else command.team
            return team_plan(name, actual, team, decide(command, actual), settings(command))

        return plan_of

    def _target(request: dict[str, Any]) -> GovernanceTarget:
        try:
            return GovernanceTarget.from_payload(request.get("target") or {})
        except ValidationError as exc:
            raise _invalid(exc, "target") from exc

    async def teams(request: dict[str, Any]) -> Any:
        target = _target(request)
        actual = await live.observe(target)
        read = teams_read(actual)
        if read["teams"]:
            client = await live.client(target.eks_cluster)
            usage = team_usage(await kueue_objects(client, "clusterqueues"))
            for team in read["teams"]:
                team["usage"] = usage.get(team["name"], [])
        return read

    async def pending(request: dict[str, Any]) -> Any:
        target = _target(request)
        job = request.get("job") or {}
        try:
            ref = JobRef(
                cluster=target.cluster,
                name=str(job["name"]),
                namespace=str(job["namespace"]),
                kind=str(job["kind"]),
                api_version=str(job["api_version"]),
            )
        except KeyError as exc:
            raise BadRequest(
                f"job.{exc.args[0]} is required",
                "ask through GET /api/v1/clusters/{name}/jobs/{job}/pending",
            ) from exc
        client = await live.client(target.eks_cluster)
        obj, actual = await asyncio.gather(
            client.get(ref.api_version, ref.kind, ref.name, ref.namespace), live.observe(target)
        )
        table = await prices.table()  # cached: a read of AWS once a day
        watch = await watched.of(target.eks_cluster, client)
        workloads, queues, classes, events = await asyncio.gather(
            kueue_objects(client, "workloads"),
            kueue_objects(client, "clusterqueues"),
            kueue_objects(client, "workloadpriorityclasses"),
            namespace_events(client, ref.namespace),
        )
        if watch is not None:
            # from the watched model: every node's view, the job's namespace's pods
            capacity, pods = watch.read(
                lambda m: (
                    m.capacity(target.cluster, table, namespace=ref.namespace)[0],
                    m.pods_in(ref.namespace),
                )
            )
        else:
            nodes, every_pod = await asyncio.gather(
                client.nodes(HYPERPOD_NODE_SELECTOR, kept_node), client.all_pods(kept_pod)
            )
            capacity = cluster_capacity(target.cluster, nodes, every_pod, table)
            pods = list(every_pod)
        facts = PendingFacts(
            job=obj,
            workloads=workloads,
            cluster_queues=queues,
            priority_classes={
                str(c["metadata"]["name"]): int(c.get("value") or 0) for c in classes
            },
            quotas=actual.quotas,
            capacity=capacity,
            events=events,
            pods=pods,
        )
        return explain(ref, facts).model_dump(mode="json")

    return Area(
        workflows=workflows(live),
        planners={
            UpdateTaskGovernance.__name__: planner(
                UpdateTaskGovernance, lambda c, a: governance_plan(a, c.change)
            ),
            CreateTeam.__name__: planner(
                CreateTeam,
                team_plan_of(
                    "CreateTeam", lambda c, a: create_team_steps(a, c.team), lambda c: c.team
                ),
            ),
            UpdateTeam.__name__: planner(
                UpdateTeam,
                team_plan_of(
                    "UpdateTeam",
                    lambda c, a: update_team_steps(a, c.team, c.change),
                    lambda c: c.change,
                ),
            ),
            DeleteTeam.__name__: planner(
                DeleteTeam,
                team_plan_of(
                    "DeleteTeam", lambda c, a: delete_team_steps(a, c.team), lambda c: None
                ),
            ),
        },
        read_routes={TEAMS: teams, PENDING: pending},
    )
