"""Areas of cluster-svc beyond cluster lifecycle (instance groups, nodes, managed features...).

Each module here composes one area: it builds the area's adapters from the shared AWS clients
and returns an `Area` with its workflows (by command type), dry-run planners and live read
routes. The service discovers every module in this package, so adding an area is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.planning import Planner
from shared.queries import Route
from shared.service import Companion
from shared.stages import Workflow


@dataclass(frozen=True)
class Area:
    workflows: dict[str, Workflow[Any]] = field(default_factory=dict)  # command type -> workflow
    planners: dict[str, Planner] = field(default_factory=dict)  # command type -> dry run
    read_routes: dict[str, Route] = field(default_factory=dict)  # query subject -> route
    # Long-running tasks of the area (e.g. a node-health watcher), started with the service.
    companions: tuple[Companion, ...] = ()


AreaFactory = Callable[[AwsClients, ClusterPorts], Area]


def discover() -> list[AreaFactory]:
    """Every area module's `build(aws, ports) -> Area`, in module-name order."""
    factories = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        factories.append(loaded.build)
    return factories


def build_areas(aws: AwsClients, ports: ClusterPorts) -> list[Area]:
    return [factory(aws, ports) for factory in discover()]
