"""`hyperpilot dependencies`: the components a cluster needs (operators, drivers, add-ons)."""

from __future__ import annotations

from hyperpilot.commands.common import (
    Area,
    Cluster,
    DryRun,
    Limit,
    Output,
    PageToken,
    Wait,
    active_cluster,
    client,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.output import Column, emit, table
from shared.boundary import api_path

app = Area("dependencies", "A cluster's dependency components: list them, reconcile them.")

COLUMNS = [
    Column("COMPONENT", "name"),
    Column("VERSION", "version"),
    Column("STATUS", "status"),
    Column("UPDATED", "updated_at"),
]


def _path(cluster: str) -> str:
    return api_path("clusters", cluster, "dependencies")


@app.command(
    "list",
    epilog=examples("hyperpilot dependencies list", "hyperpilot dependencies list -c llm -o json"),
)
def list_(
    cluster: Cluster = None,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """Each dependency component with its version and status, by name."""
    with client() as api:
        rows = listed(api, _path(active_cluster(api, cluster)), limit, page_token)
    emit(rows, fmt(output), lambda r: table(r, COLUMNS) if r else "(no components)")


@app.command(
    epilog=examples(
        "hyperpilot dependencies reconcile --wait",
        "hyperpilot dependencies reconcile -c llm-training --wait -o json",
    )
)
def reconcile(
    cluster: Cluster = None, dry_run: DryRun = False, wait: Wait = False, output: Output = None
) -> None:
    """Install or upgrade what differs from the declared set (a second run changes nothing)."""
    with client() as api:
        path = f"{_path(active_cluster(api, cluster))}/reconcile"
        mutate(api, "POST", path, output=fmt(output), wait=wait, dry_run=dry_run)
