"""One module per area, each with `register(server, gateway)` adding its tools."""

from __future__ import annotations

from collections.abc import Callable

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.tools import (
    adoption,
    capacity,
    clusters,
    dependencies,
    diagnostics,
    events,
    features,
    governance,
    inference,
    inspect,
    instance_groups,
    metrics,
    nodes,
    operations,
    pricing,
    schemas,
    spaces,
    storage,
    training,
)

Register = Callable[[HyperpilotServer, Gateway], None]

AREAS: tuple[tuple[str, Register], ...] = (
    ("clusters", clusters.register),
    ("adoption", adoption.register),
    ("inspect", inspect.register),
    ("dependencies", dependencies.register),
    ("instance groups", instance_groups.register),
    ("features", features.register),
    ("nodes", nodes.register),
    ("capacity", capacity.register),
    ("cost", pricing.register),
    ("task governance", governance.register),
    ("storage", storage.register),
    ("training", training.register),
    ("spaces", spaces.register),
    ("diagnostics", diagnostics.register),
    ("metrics", metrics.register),
    ("inference", inference.register),
    ("operations", operations.register),
    ("events", events.register),
    ("tools", schemas.register),
)
