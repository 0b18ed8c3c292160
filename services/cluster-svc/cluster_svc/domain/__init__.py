"""Pure domain logic of cluster-svc: workflows, rules and diffs. No cloud clients here."""
