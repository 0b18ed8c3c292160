"""Drift: a difference between what Hyperpilot recorded of a cluster and what AWS and
Kubernetes say now, found by cluster-svc's drift watcher (or a refresh), and what a user does
about it: accept the actual value into the record, or restore the recorded one (a normal
operation, dry run first)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from shared.contracts.events import Event
from shared.contracts.spec import Spec

# A drift field: `instance_groups.<group>.count|instance_type|present`,
# `components.<component>`, `hyperpod_cluster.status`.
FIELD_PATTERN = r"^[a-z_]+(\.[A-Za-z0-9][A-Za-z0-9._-]{0,127})+$"


class DriftDetected(Event):
    what = "drift_detected"
    cluster: str
    field: str
    recorded: Any = None
    actual: Any = None


class DriftResolved(Event):
    """The recorded and actual values agree again (restored, accepted, or changed back)."""

    what = "drift_resolved"
    cluster: str
    field: str
    value: Any = None


class DriftAccepted(Event):
    """The actual values were written into the record."""

    what = "drift_accepted"
    cluster: str
    fields: dict[str, dict[str, Any]]  # field -> {recorded, actual}


DriftFieldName = Annotated[
    str,
    Field(
        min_length=3,
        max_length=200,
        pattern=FIELD_PATTERN,
        description="One drifted field, e.g. instance_groups.gpu.count or components.keda",
    ),
]


class DriftFields(Spec):
    fields: list[DriftFieldName] | None = Field(
        None,
        max_length=100,
        description="The drifted fields (GET /api/v1/clusters/{name}/drift); all if omitted",
    )


class RestoreDrift(Spec):
    field: str = Field(
        min_length=3,
        max_length=200,
        pattern=FIELD_PATTERN,
        description="One drifted field, e.g. instance_groups.gpu.count or components.keda",
    )
