"""`hyperpilot inspect`: live AWS state to decide with before creating (zones, types, quotas)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Group

from hyperpilot.commands.common import Area, Output, Region, client, examples, fmt
from hyperpilot.output import Column, auto_columns, emit, table

app = Area(
    "inspect",
    "Inspect before create: zones, instance types per zone, quotas, training plans, clusters.",
)

BASE = "/api/v1/inspect"


def _rows(data: Any) -> Any:
    """Tables for whatever shape the answer has: a list of objects, or an object of lists."""
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return table(data, auto_columns(data))
    if isinstance(data, dict):
        lists = {k: v for k, v in data.items() if isinstance(v, list) and v}
        if lists and all(isinstance(r, dict) for v in lists.values() for r in v):
            parts: list[Any] = []
            for key, rows in lists.items():
                parts.append(table(rows, auto_columns(rows), title=key))
            return Group(*parts)
    return None


def _show(data: Any, output: Any) -> None:
    rendered = _rows(data)
    emit(data, fmt(output), (lambda _: rendered) if rendered is not None else None)


@app.command(epilog=examples("hyperpilot inspect regions"))
def regions(output: Output = None) -> None:
    """The regions this control plane manages clusters in (the first is the default)."""
    with client() as api:
        data = api.get(f"{BASE}/regions")
    rows = [{"region": r, "default": r == data["default"]} for r in data["regions"]]
    emit(
        data,
        fmt(output),
        lambda _: table(rows, [Column("REGION", "region"), Column("DEFAULT", "default")]),
    )


@app.command(
    "availability-zones",
    epilog=examples(
        "hyperpilot inspect availability-zones",
        "hyperpilot inspect availability-zones --region us-west-2 -o json",
    ),
)
def availability_zones(region: Region = None, output: Output = None) -> None:
    """Availability Zones of a region with their zone ids (use the id in cluster specs)."""
    with client() as api:
        _show(api.get(f"{BASE}/availability-zones", region=region), output)


@app.command(
    "instance-types",
    epilog=examples(
        "hyperpilot inspect instance-types",
        "hyperpilot inspect instance-types --zone use1-az2",
    ),
)
def instance_types(
    zone: Annotated[str | None, typer.Option(help="Only this zone id, e.g. use1-az2")] = None,
    region: Region = None,
    output: Output = None,
) -> None:
    """HyperPod instance types offered, per zone."""
    with client() as api:
        _show(api.get(f"{BASE}/instance-types", region=region, availability_zone_id=zone), output)


@app.command(epilog=examples("hyperpilot inspect quotas --instance-type ml.p5.48xlarge"))
def quotas(
    instance_type: Annotated[str, typer.Option(help="HyperPod instance type, e.g. ml.g5.8xlarge")],
    region: Region = None,
    output: Output = None,
) -> None:
    """The cluster-usage quota of an instance type and how much of it is used."""
    with client() as api:
        _show(api.get(f"{BASE}/quotas", region=region, instance_type=instance_type), output)


@app.command("training-plans", epilog=examples("hyperpilot inspect training-plans -o yaml"))
def training_plans(region: Region = None, output: Output = None) -> None:
    """Training plans and their reserved capacity."""
    with client() as api:
        _show(api.get(f"{BASE}/training-plans", region=region), output)


CLUSTER_COLUMNS = [
    Column("KIND", "kind"),
    Column("NAME", "name"),
    Column("STATUS", "status"),
    Column("VERSION", "kubernetes_version"),
    Column("LINKED TO", lambda r: r.get("hyperpod_cluster_names") or r.get("eks_cluster_name")),
    Column("MANAGED", "managed"),
    Column("IMPORTABLE", "importable"),
    Column("CREATED", "created_at"),
]


@app.command(epilog=examples("hyperpilot inspect clusters --region us-east-1"))
def clusters(region: Region = None, output: Output = None) -> None:
    """EKS and HyperPod clusters in the account: managed here, and importable ones."""
    with client() as api:
        rows = api.get(f"{BASE}/clusters", region=region)
    if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
        emit(rows, fmt(output), lambda r: table(r, CLUSTER_COLUMNS) if r else "(no clusters)")
    else:
        _show(rows, output)
