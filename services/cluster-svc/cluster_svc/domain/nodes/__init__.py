"""Nodes of a HyperPod cluster: one health view, batch actions, deep health checks, recovery.

Everything here is pure or written against `NodesPort` (adapters/hyperpod_nodes.py), one module
per role: health.py, actions.py, health_checks.py, recovery.py and watch.py (the watcher's
decision; cluster_svc/records/ stores it).
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
