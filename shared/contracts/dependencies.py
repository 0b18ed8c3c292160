"""Contracts of dependency reconciliation on an existing cluster."""

from __future__ import annotations

from typing import Any

from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import Command
from shared.contracts.events import Event


class ReconcileDependencies(Command):
    """Compare the declared component set with what is installed; install or upgrade what
    differs. Carries the cluster's create spec and what its creation made."""

    domain = "cluster"
    verb = "reconcile_dependencies"

    spec: ClusterSpec
    region: str
    bucket: str
    resources: dict[str, dict[str, Any]] = {}


class DependenciesReconciled(Event):
    what = "dependencies_reconciled"
    cluster: str
    components: dict[str, dict[str, Any]]
