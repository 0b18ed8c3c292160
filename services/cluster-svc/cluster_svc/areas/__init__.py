"""Areas of cluster-svc beyond cluster lifecycle (instance groups, nodes, managed features...).

Each module here composes one area: `build(aws, ports) -> Area` builds the area's adapters from
the shared AWS clients and returns its workflows (by command type), dry-run planners, live read
routes and companions. `cluster_svc.bootstrap` lists the areas the service runs.
"""

from __future__ import annotations

from shared.service import Area

__all__ = ["Area"]
