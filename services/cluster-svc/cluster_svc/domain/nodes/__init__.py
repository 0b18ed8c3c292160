"""Nodes of a HyperPod cluster: one health view, batch actions, deep health checks, recovery.

Everything here is pure or written against `NodesPort` (adapters/hyperpod_nodes.py), one module
per role: health.py, actions.py, health_checks.py, recovery.py and watch.py (the watcher's
decision; cluster_svc/records.py stores it).
- `health_view` joins HyperPod's instance status, the Kubernetes node conditions and HyperPod's
  health labels and taints into one verdict with the next step;
- `decide_action` splits a reboot/replace/delete into API-sized batches and says which nodes are
  skipped (already in that state) or unknown; the dry run and the workflow both use it;
- `action_progress` reads what happened to each node since the batch calls;
- `diff_nodes` turns two observations of a cluster into events (failure, replacement, recovery);
- `decide_recovery` compares the cluster's NodeRecovery with the requested mode.

Escalation order (docs/node-operations.md): investigate -> reboot -> replace. Every failure
names the next step.
"""

from cluster_svc.domain.nodes.actions import (
    BATCH_OPERATIONS,
    SETTLE_SECONDS,
    ActionDecision,
    action_plan,
    action_progress,
    action_workflow,
    decide_action,
    failures_error,
)
from cluster_svc.domain.nodes.health import (
    INSTANCE_ID_LABEL,
    BatchResult,
    ClusterRecovery,
    KubeNode,
    NodeInstance,
    NodesPort,
    health_view,
    join_nodes,
    summary,
)
from cluster_svc.domain.nodes.health_checks import (
    decide_health_check,
    health_check_plan,
    health_check_progress,
    health_check_workflow,
)
from cluster_svc.domain.nodes.recovery import (
    decide_recovery,
    node_recovery_workflow,
    read_recovery,
    recovery_plan,
)
from cluster_svc.domain.nodes.watch import (
    NodeChanges,
    NodeRecord,
    diff_nodes,
    record_of,
    watch_changes,
)

__all__ = [
    "BATCH_OPERATIONS",
    "INSTANCE_ID_LABEL",
    "SETTLE_SECONDS",
    "ActionDecision",
    "BatchResult",
    "ClusterRecovery",
    "KubeNode",
    "NodeChanges",
    "NodeInstance",
    "NodeRecord",
    "NodesPort",
    "action_plan",
    "action_progress",
    "action_workflow",
    "decide_action",
    "decide_health_check",
    "decide_recovery",
    "diff_nodes",
    "failures_error",
    "health_check_plan",
    "health_check_progress",
    "health_check_workflow",
    "health_view",
    "join_nodes",
    "node_recovery_workflow",
    "read_recovery",
    "record_of",
    "recovery_plan",
    "summary",
    "watch_changes",
]
