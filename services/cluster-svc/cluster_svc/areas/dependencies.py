"""Dependency reconciliation on demand: the create workflow's `dependencies` stage, run again
against the cluster as it is. A second run changes nothing and ends `noop`."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain import dependencies
from cluster_svc.domain.cluster_workflow import ClusterPorts
from shared.contracts.dependencies import DependenciesReconciled, ReconcileDependencies
from shared.contracts.events import Event
from shared.errors import PermanentError
from shared.stages import Done, Outcome, Stage, StageContext, Workflow


def reconcile_workflow(ports: ClusterPorts) -> Workflow[Any]:
    async def eks_cluster(ctx: StageContext[Any]) -> Done:
        name = ReconcileDependencies.from_payload(ctx.command).spec.name
        cluster = await ports.eks.describe_cluster(name)
        if cluster is None or cluster.status != "ACTIVE":
            raise PermanentError(
                "ClusterNotActive",
                f"EKS cluster {name} is {cluster.status if cluster else 'gone'}",
                "reconcile once the cluster is ACTIVE",
            )
        return Done(
            {
                "cluster_arn": cluster.arn,
                "cluster_name": cluster.name,
                "endpoint": cluster.endpoint,
                "ca_data": cluster.ca_data,
                "oidc_issuer": cluster.oidc_issuer,
            },
            noop=True,
        )

    def recorded(stage: str) -> Stage:
        async def run(ctx: StageContext[Any]) -> Done:
            resources = ReconcileDependencies.from_payload(ctx.command).resources
            return Done(dict(resources.get(stage, {})), noop=True)

        return Stage(stage, f"Read the recorded {stage.replace('_', ' ')}", run)

    reconcile = next(
        s for s in dependencies.create_stages(ports.kube, ports.addons) if s.name == "dependencies"
    )
    return Workflow(
        kind=ReconcileDependencies.kind(),
        domain=ReconcileDependencies.domain,
        stages=(
            Stage("eks_cluster", "Read the EKS cluster", eks_cluster),
            recorded("access_entries"),
            recorded("oidc_provider"),
            reconcile,
        ),
        on_finish=_record_components,
    )


async def _record_components(
    conn: asyncpg.Connection, operation_id: uuid.UUID, outcome: Outcome
) -> list[Event]:
    name = ReconcileDependencies.from_payload(outcome.command).spec.name
    components: dict[str, dict[str, Any]] = outcome.outputs.get("dependencies", {}).get(
        "components", {}
    )
    await conn.executemany(
        "INSERT INTO cluster_components (cluster, component, version, status) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (cluster, component) DO UPDATE SET version = $3, status = $4, updated_at = now()",
        [
            (name, c, str(v.get("version", "")), str(v.get("status", "")))
            for c, v in components.items()
        ],
    )
    if outcome.status not in ("succeeded", "noop"):
        return []
    return [DependenciesReconciled(cluster=name, components=components)]


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    return Area(workflows={ReconcileDependencies.__name__: reconcile_workflow(ports)})
