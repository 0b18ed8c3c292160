"""Dry runs: `qry.cluster.plan` answers what a command would do, from actual state.

Each area registers a planner per command type (`shared.service.Planner`); the gateway asks for
a plan when a mutation is sent with `dry_run=true`, and nothing is stored or changed.
"""

from __future__ import annotations

from shared.contracts.subjects import query_subject
from shared.service import Planner

PLAN = query_subject("cluster", "plan")

__all__ = ["PLAN", "Planner"]
