"""Dependency reconciliation on demand (domain/cluster_workflow.py), with its read-model writes."""

from __future__ import annotations

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts, reconcile_dependencies_workflow
from shared.contracts.dependencies import ReconcileDependencies


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    workflow = reconcile_dependencies_workflow(ports)
    return Area(workflows=records.recorded({ReconcileDependencies.__name__: workflow}))
