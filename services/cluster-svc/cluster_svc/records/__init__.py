"""cluster-svc's read model in PostgreSQL: every SQL statement of the service's workflows.

The workflows' start and finish hooks (written in the transactions that start and end an
operation) keep the `clusters`, `storage_buckets`, `instance_groups` and `cluster_components`
rows true; the node watcher's observations go to `cluster_nodes`. The domain decides, this
package stores, one module per family of tables; `recorded` attaches each command type's hooks
to its workflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cluster_svc.records import buckets, clusters, instance_groups
from cluster_svc.records.nodes import WatchedCluster, record_nodes, watched_clusters
from shared.stages import FinalHook, Hook, Workflow

__all__ = ["HOOKS", "WatchedCluster", "record_nodes", "recorded", "watched_clusters"]

# The start and finish hooks of each command type.
HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    **clusters.HOOKS,
    **buckets.HOOKS,
    **instance_groups.HOOKS,
}


def recorded(workflows: Mapping[str, Workflow[Any]]) -> dict[str, Workflow[Any]]:
    """The workflows, by command type, with the read-model writes of their command type."""
    result = {}
    for name, workflow in workflows.items():
        on_start, on_finish = HOOKS.get(name, (workflow.on_start, workflow.on_finish))
        result[name] = replace(workflow, on_start=on_start, on_finish=on_finish)
    return result
