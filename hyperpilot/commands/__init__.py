"""The command areas of `hyperpilot`, one module each; each is a typer app added by name.

A new area is one module here that defines `app = Area(...)` and one entry in AREAS.
"""

from __future__ import annotations

from hyperpilot.commands import (  # access and adoption add commands to other areas
    access,  # noqa: F401
    adoption,  # noqa: F401
    capacity,
    clusters,
    dependencies,
    diagnose,
    endpoints,
    events,
    features,
    inspect,
    instance_groups,
    jobs,
    metrics,
    nodes,
    operations,
    profile,
    spaces,
    storage,
    teams,
    training_plans,
)
from hyperpilot.commands.common import Area

AREAS: tuple[Area, ...] = (
    clusters.app,
    instance_groups.app,
    nodes.app,
    capacity.app,
    features.app,
    teams.app,
    dependencies.app,
    jobs.app,
    spaces.app,
    endpoints.app,
    diagnose.app,
    metrics.app,
    storage.app,
    operations.app,
    events.app,
    inspect.app,
    training_plans.app,
    training_plans.prices_app,
    profile.app,
)
