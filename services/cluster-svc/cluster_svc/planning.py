"""Dry runs: `qry.cluster.plan` answers what a command would do, from actual state.

Each area registers a planner per command type; the gateway asks for a plan when a mutation
is sent with `dry_run=true`, and nothing is stored or changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.queries import BadRequest, Route

PLAN = query_subject("cluster", "plan")

Planner = Callable[[dict[str, Any]], Awaitable[Plan]]


def plan_route(planners: dict[str, Planner]) -> dict[str, Route]:
    async def plan(request: dict[str, Any]) -> Any:
        command_type = request.get("type")
        payload = request.get("payload")
        planner = planners.get(str(command_type))
        if planner is None:
            raise BadRequest(
                f"no dry run for {command_type}",
                "dry_run is answered for: " + (", ".join(sorted(planners)) or "no command yet"),
            )
        if not isinstance(payload, dict):
            raise BadRequest("payload is required", "send the command as a JSON object")
        return (await planner(payload)).model_dump(mode="json")

    return {PLAN: plan}
