"""cluster-svc's read model in PostgreSQL: every SQL statement of the service's workflows.

The workflows' start and finish hooks (written in the transactions that start and end an
operation) keep the `clusters`, `storage_buckets`, `instance_groups` and `cluster_components`
rows true; the node watcher's observations go to `cluster_nodes`. The domain decides, this
package stores, one module per family of tables; `recorded` attaches each command type's hooks
to its workflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_svc.records import adoption, buckets, clusters, instance_groups
from cluster_svc.records.nodes import WatchedCluster, record_nodes, watched_clusters
from shared import read_model
from shared.stages import Workflow

__all__ = ["HOOKS", "WatchedCluster", "record_nodes", "recorded", "watched_clusters"]

# The start and finish hooks of each command type.
HOOKS: dict[str, read_model.Writes] = {
    **clusters.HOOKS,
    **buckets.HOOKS,
    **instance_groups.HOOKS,
    **adoption.HOOKS,
}


def recorded(workflows: Mapping[str, Workflow[Any]]) -> dict[str, Workflow[Any]]:
    """The workflows, by command type, with the read-model writes of their command type."""
    return read_model.recorded(workflows, HOOKS)
