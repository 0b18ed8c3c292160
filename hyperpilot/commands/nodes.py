"""`hyperpilot nodes`: a cluster's nodes with their health; reboot, replace, delete, check."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Group
from rich.text import Text

from hyperpilot.commands.common import (
    Area,
    Cluster,
    ContractOption,
    DryRun,
    Output,
    Wait,
    Yes,
    active_cluster,
    checked,
    client,
    confirm,
    examples,
    fmt,
    mutate,
)
from hyperpilot.output import Column, Format, details, emit, table
from shared.boundary import api_path
from shared.contracts.cluster import DeepHealthCheck, NodeRecovery
from shared.contracts.nodes import HealthCheckRequest
from shared.contracts.nodes import NodeIds as NodeIdsBody

app = Area("nodes", "Nodes: health, describe, reboot, replace, delete, deep health checks.")

COLUMNS = [
    Column("NODE", "node_id"),
    Column("GROUP", "instance_group"),
    Column("INSTANCE TYPE", "instance_type"),
    Column("STATUS", "instance_status"),
    Column("HEALTH", "health"),
    Column("K8S NODE", "kubernetes.node_name"),
    Column("REASONS", "reasons", wrap=True),
    Column("NEXT STEP", "next_step", wrap=True),
]

NodeIds = Annotated[list[str], typer.Argument(help="HyperPod node ids (i-...)", show_default=False)]


def _base(cluster: str) -> str:
    return api_path("clusters", cluster)


def render_nodes(answer: Any) -> Any:
    if isinstance(answer, list):
        return table(answer, COLUMNS) if answer else "(no nodes)"
    nodes = answer.get("nodes") or []
    parts: list[Any] = []
    if answer.get("source") == "recorded":
        parts.append(
            Text(
                f"recorded at {answer.get('observed_at')} "
                f"(live state unavailable: {answer.get('stale_because')})",
                style="yellow",
            )
        )
    if answer.get("summary"):
        summary = ", ".join(f"{k} {v}" for k, v in answer["summary"].items())
        parts.append(Text(f"health: {summary}"))
    parts.append(table(nodes, COLUMNS) if nodes else Text("(no nodes)"))
    return Group(*parts)


@app.command(
    "list",
    epilog=examples(
        "hyperpilot nodes list",
        "hyperpilot nodes list -c llm-training --health unhealthy -o json",
    ),
)
def list_(
    cluster: Cluster = None,
    health: Annotated[
        str | None, typer.Option(help="Only nodes with this health, e.g. unhealthy")
    ] = None,
    output: Output = None,
) -> None:
    """Nodes with one health verdict each (HyperPod status + Kubernetes conditions + labels)."""
    with client() as api:
        answer = api.get(f"{_base(active_cluster(api, cluster))}/nodes", health=health)
    emit(answer, fmt(output), render_nodes)


@app.command(epilog=examples("hyperpilot nodes describe i-0123456789abcdef0 -o yaml"))
def describe(
    node_id: Annotated[str, typer.Argument(help="HyperPod node id (i-...)", show_default=False)],
    cluster: Cluster = None,
    output: Output = None,
) -> None:
    """One node: its health view, HyperPod's details and recent HyperPod events."""
    with client() as api:
        node = api.get(f"{_base(active_cluster(api, cluster))}/nodes/{node_id}")
    emit(node, fmt(output), details if isinstance(node, dict) else None)


def _act(
    action: str,
    node_ids: list[str],
    cluster: str | None,
    dry_run: bool,
    wait: bool,
    output: Format,
) -> None:
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/nodes/{action}"
        body = checked(NodeIdsBody, {"node_ids": node_ids})
        mutate(api, "POST", path, body, output=output, wait=wait, dry_run=dry_run)


@app.command(
    epilog=examples(
        "hyperpilot nodes reboot i-0123456789abcdef0 --wait",
        "hyperpilot nodes reboot i-0123456789abcdef0 i-0fedcba9876543210 --dry-run",
    )
)
def reboot(
    node_ids: NodeIds,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Reboot nodes (the first step after investigating a fault)."""
    _act("reboot", node_ids, cluster, dry_run, wait, fmt(output))


@app.command(epilog=examples("hyperpilot nodes replace i-0123456789abcdef0 --yes --wait"))
def replace(
    node_ids: NodeIds,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Replace nodes with new instances, when a reboot did not help (admin)."""
    if not dry_run:
        confirm(f"Replace {len(node_ids)} node(s) with new instances?", yes)
    _act("replace", node_ids, cluster, dry_run, wait, fmt(output))


@app.command(epilog=examples("hyperpilot nodes delete i-0123456789abcdef0 --yes --wait"))
def delete(
    node_ids: NodeIds,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete nodes; each lowers its instance group's count by one (admin)."""
    if not dry_run:
        confirm(f"Delete {len(node_ids)} node(s)?", yes)
    _act("delete", node_ids, cluster, dry_run, wait, fmt(output))


@app.command(
    "health-check",
    epilog=examples(
        "hyperpilot nodes health-check --group workers --wait",
        "hyperpilot nodes health-check --node i-0123456789abcdef0 --check InstanceStress",
        "hyperpilot nodes health-check --dry-run            # the whole cluster",
    ),
)
def health_check(
    cluster: Cluster = None,
    node: Annotated[list[str] | None, typer.Option("--node", help="Node id (repeatable)")] = None,
    group: Annotated[
        list[str] | None, typer.Option("--group", help="Instance group (repeatable)")
    ] = None,
    check: Annotated[
        list[DeepHealthCheck] | None,
        ContractOption(HealthCheckRequest, "checks", "--check", notes="repeatable; default: both"),
    ] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Start a deep health check (stress, EFA connectivity) on nodes, groups or the cluster."""
    body: dict[str, Any] = {"node_ids": node or [], "instance_groups": group or []}
    if check:
        body["checks"] = [c.value for c in check]
    checked(HealthCheckRequest, body)
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/nodes/health-checks"
        mutate(api, "POST", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(
    epilog=examples(
        "hyperpilot nodes recovery Automatic --wait",
        "hyperpilot nodes recovery None -c llm-training --dry-run",
    )
)
def recovery(
    mode: Annotated[NodeRecovery, typer.Argument(help="Automatic or None", show_default=False)],
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Set the cluster's node recovery: HyperPod replaces faulty nodes itself (Automatic)."""
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/node-recovery"
        mutate(
            api,
            "PUT",
            path,
            {"mode": mode.value},
            output=fmt(output),
            wait=wait,
            dry_run=dry_run,
        )
