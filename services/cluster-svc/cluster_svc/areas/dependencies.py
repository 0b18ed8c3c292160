"""Dependency reconciliation on demand: the create workflow's `dependencies` stage, run again
against the cluster as it is. A second run changes nothing and ends `noop`."""

from __future__ import annotations

from typing import Any

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain import dependencies
from cluster_svc.domain.cluster_workflow import ClusterPorts
from shared.contracts.dependencies import ReconcileDependencies
from shared.errors import PermanentError
from shared.stages import Done, Stage, StageContext, Workflow


def reconcile_workflow(ports: ClusterPorts) -> Workflow[Any]:
    async def eks_cluster(ctx: StageContext[ReconcileDependencies]) -> Done:
        name = ctx.cmd.spec.name
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
        async def run(ctx: StageContext[ReconcileDependencies]) -> Done:
            resources = ctx.cmd.resources
            return Done(dict(resources.get(stage, {})), noop=True)

        return Stage(stage, f"Read the recorded {stage.replace('_', ' ')}", run)

    reconcile = next(
        s for s in dependencies.create_stages(ports.kube, ports.addons) if s.name == "dependencies"
    )
    return Workflow(
        kind=ReconcileDependencies.kind(),
        domain=ReconcileDependencies.domain,
        command=ReconcileDependencies,
        stages=(
            Stage("eks_cluster", "Read the EKS cluster", eks_cluster),
            recorded("access_entries"),
            recorded("oidc_provider"),
            reconcile,
        ),
    )


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    return Area(
        workflows=records.recorded({ReconcileDependencies.__name__: reconcile_workflow(ports)})
    )
