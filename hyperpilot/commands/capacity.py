"""`hyperpilot capacity [CLUSTER]`: GPUs, EFA and memory free per instance group and node, the
nodes taking no new pods, pending pods and the list price per hour; `--fleet` for every cluster."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Group
from rich.text import Text

from hyperpilot.commands.common import (
    Area,
    Output,
    active_cluster,
    client,
    examples,
    fmt,
    handle_errors,
)
from hyperpilot.output import Column, emit, table
from shared.boundary import api_path

app = Area("capacity", "Capacity now: free GPUs per group and node, pending pods, cost per hour.")
app.info.no_args_is_help = False


def _amount(key: str) -> Column:
    header = key.split(".")[-1].replace("memory_bytes", "memory").upper()

    def used(row: dict[str, Any]) -> str:
        value = Column(header, key).value(row) or {}
        if key.endswith("memory_bytes"):
            gib = 2**30
            return f"{value.get('allocated', 0) / gib:,.0f}/{value.get('total', 0) / gib:,.0f}Gi"
        return f"{value.get('allocated', 0)}/{value.get('total', 0)}"

    return Column(f"{header} USED/TOTAL", used)


def _money(value: Any) -> str:
    return "-" if value is None else f"${value:,.2f}"


RESOURCES = [_amount("resources.gpus"), _amount("resources.efa"), _amount("resources.memory_bytes")]
GROUPS = [
    Column("GROUP", "name"),
    Column("INSTANCE TYPE", "instance_type"),
    Column("NODES", lambda g: f"{g['schedulable_nodes']}/{g['nodes']} schedulable"),
    Column("GPUS FREE", "resources.gpus.free"),
    *RESOURCES,
    Column("$/H", lambda g: _money(g.get("cost_per_hour"))),
]
NODES = [
    Column("NODE", "name"),
    Column("GROUP", "instance_group"),
    Column("GPUS FREE", "resources.gpus.free"),
    *RESOURCES,
    Column("PODS", "pods"),
    Column("REASONS", lambda n: ", ".join(n.get("reasons") or []), wrap=True),
]
PENDING = [
    Column("NAMESPACE", "namespace"),
    Column("POD", "name"),
    Column("GPUS", "gpus"),
    Column("EFA", "efa"),
    Column("GROUP", "instance_group"),
    Column("REASON", "reason", wrap=True),
]
CLUSTERS = [
    Column("CLUSTER", "cluster"),
    Column("GPUS FREE", "resources.gpus.free"),
    *RESOURCES,
    Column("NODES", "nodes"),
    Column("UNSCHEDULABLE", "unschedulable_nodes"),
    Column("PENDING", "pending_pods"),
    Column("$/H", lambda c: _money(c.get("cost_per_hour") if c.get("readable") else None)),
    Column("ERROR", "error", wrap=True),
]


def _prices(answer: dict[str, Any]) -> Text:
    prices = answer.get("prices") or {}
    return Text(
        f"{_money(answer.get('cost_per_hour'))}/h at list prices ({prices.get('region')},"
        f" {prices.get('as_of')}, {prices.get('source')})"
    )


def render_cluster(answer: dict[str, Any]) -> Group:
    gpus = answer["resources"]["gpus"]
    parts: list[Any] = [
        Text(f"{answer['cluster']}: {gpus['free']} of {gpus['total']} GPUs free", style="bold"),
        table(answer["groups"], GROUPS, title="instance groups") if answer["groups"] else "",
        table(answer["nodes"], NODES, title="nodes") if answer["nodes"] else Text("(no nodes)"),
    ]
    if answer.get("next_after"):
        parts.append(
            Text(
                f"{len(answer['nodes'])} of {answer.get('node_total')} nodes shown;"
                f" the next page: --after {answer['next_after']}"
            )
        )
    if answer["pending"]:
        parts.append(table(answer["pending"], PENDING, title="pending pods"))
    else:
        parts.append(Text("no pending pods"))
    if answer.get("unpriced_instance_types"):
        parts.append(Text("no list price for " + ", ".join(answer["unpriced_instance_types"])))
    parts.append(_prices(answer))
    return Group(*parts)


def render_fleet(answer: dict[str, Any]) -> Group:
    gpus = answer["resources"]["gpus"]
    return Group(
        Text(f"fleet: {gpus['free']} of {gpus['total']} GPUs free", style="bold"),
        table(answer["clusters"], CLUSTERS) if answer["clusters"] else Text("(no clusters)"),
        Text(f"{answer['pending_pods']} pods pending"),
        _prices(answer),
    )


@app.callback(
    invoke_without_command=True,
    # a command, not a group: options may follow the cluster, and there is no subcommand
    context_settings={"allow_interspersed_args": True},
    subcommand_metavar="",
    epilog=examples(
        "hyperpilot capacity",
        "hyperpilot capacity llm-training -o json",
        "hyperpilot capacity --fleet",
    ),
)
@handle_errors
def capacity(
    cluster: Annotated[
        str | None, typer.Argument(help="The cluster (default: the active one)", show_default=False)
    ] = None,
    fleet: Annotated[bool, typer.Option("--fleet", help="Every cluster, summed")] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=500, help="At most this many nodes (one page)")
    ] = 100,
    after: Annotated[
        str | None,
        typer.Option("--after", help="The page of nodes after this cursor (next_after)"),
    ] = None,
    output: Output = None,
) -> None:
    """GPUs, EFA and memory allocated / total per instance group and node, nodes taking no new
    pods and why, pending pods with what they ask for, and the list price per hour."""
    with client() as api:
        if fleet:
            emit(api.get(api_path("capacity")), fmt(output), render_fleet)
            return
        page: dict[str, Any] = {"limit": limit} | ({"after": after} if after else {})
        answer = api.get(api_path("clusters", active_cluster(api, cluster), "capacity"), **page)
    emit(answer, fmt(output), render_cluster)
