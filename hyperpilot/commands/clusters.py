"""`hyperpilot clusters`: EKS + HyperPod clusters: create, import, list, describe, use, delete."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Group
from rich.text import Text

from hyperpilot.client import UsageError
from hyperpilot.commands.common import (
    Area,
    DryRun,
    Limit,
    Output,
    PageToken,
    Region,
    Wait,
    Yes,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.commands.complete import cluster_names
from hyperpilot.output import Column, compact, details, emit, table
from shared.contracts.cluster import NodeRecovery

app = Area(
    "clusters",
    "Clusters: create, import, list, describe, use (make active), update software, delete.",
)

BASE = "/api/v1/clusters"

LIST_COLUMNS = [
    Column("", lambda r: "*" if r.get("active") else ""),
    Column("NAME", "name"),
    Column("REGION", "region"),
    Column("STATUS", "status"),
    Column("MANAGED", "managed"),
    Column("ZONE", "spec.availability_zone_id"),
    Column("GROUPS", lambda r: len((r.get("spec") or {}).get("instance_groups") or []) or None),
    Column("CREATED", "created_at"),
]
GROUP_COLUMNS = [
    Column("GROUP", "name"),
    Column("INSTANCE TYPE", "instance_type"),
    Column("COUNT", "count"),
    Column("STATUS", "status"),
]
COMPONENT_COLUMNS = [
    Column("COMPONENT", "name"),
    Column("VERSION", "version"),
    Column("STATUS", "status"),
    Column("MESSAGE", "message", wrap=True),
]

Name = Annotated[
    str, typer.Argument(help="Cluster name", autocompletion=cluster_names, show_default=False)
]

# -g/--instance-group keys: short names people type -> the REST field.
GROUP_KEYS = {
    "type": "instance_type",
    "min": "min_count",
    "zone": "availability_zone_id",
    "capacity": "capacity_type",
    "plan": "training_plan_arn",
    "ebs": "ebs_volume_gb",
    "threads": "threads_per_core",
    "interface": "interface_type",
}
INTEGER_FIELDS = {"count", "min_count", "ebs_volume_gb", "threads_per_core"}


def parse_group(text: str) -> dict[str, Any]:
    """'name=workers,type=ml.g5.8xlarge,count=2' -> an instance group body.

    Unknown keys pass through unchanged so the gateway names them in its validation error.
    """
    group: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--instance-group {text!r}: {part!r} is not key=value",
                "use e.g. -g name=workers,type=ml.g5.8xlarge,count=2",
            )
        key = GROUP_KEYS.get(key.strip(), key.strip())
        value = value.strip()
        group[key] = int(value) if key in INTEGER_FIELDS and value.isdigit() else value
    if not group:
        raise UsageError(
            "--instance-group is empty", "use e.g. -g name=workers,type=ml.g5.8xlarge,count=2"
        )
    return group


def parse_pairs(values: list[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} {value!r} is not KEY=VALUE", f"use e.g. {flag} team=llm")
        pairs[key] = val
    return pairs


def read_spec(path: str) -> dict[str, Any]:
    """A cluster body from a YAML or JSON file ('-' reads stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML or JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold one mapping (a cluster spec)")
    return data


def render_cluster(c: dict[str, Any]) -> Any:
    parts: list[Any] = [
        details(
            c,
            [
                "name",
                "region",
                "status",
                "managed",
                "active",
                "eks_cluster_arn",
                "hyperpod_cluster_arn",
                "endpoint",
                "operation_id",
                "created_at",
                "updated_at",
            ],
        )
    ]
    spec = c.get("spec") or {}
    if spec.get("availability_zone_id"):
        parts.append(
            Text(
                f"zone {spec['availability_zone_id']}, "
                f"Kubernetes {spec.get('kubernetes_version', '-')}"
            )
        )
    groups = c.get("instance_groups") or []
    if not groups and spec.get("instance_groups"):
        groups = [{**g, "status": "-"} for g in spec["instance_groups"]]
    if groups:
        parts += [Text(""), table(groups, GROUP_COLUMNS)]
    if c.get("components"):
        parts += [Text(""), table(c["components"], COMPONENT_COLUMNS)]
    resources = {k: compact(v) for k, v in (c.get("resources") or {}).items()}
    resources = {k: v for k, v in resources.items() if v != "-"}
    if resources:
        parts += [
            Text(""),
            Text("resources (all of it: -o yaml)", style="bold"),
            details(resources),
        ]
    return Group(*parts)


@app.command(
    "list", epilog=examples("hyperpilot clusters list", "hyperpilot clusters list -o json")
)
def list_(limit: Limit = None, page_token: PageToken = None, output: Output = None) -> None:
    """List clusters with their status, oldest first; the active one is marked with *."""
    with client() as api:
        rows = listed(api, BASE, limit, page_token)
    emit(rows, fmt(output), lambda r: table(r, LIST_COLUMNS) if r else "(no clusters)")


@app.command(
    epilog=examples(
        "hyperpilot clusters describe llm-training",
        "hyperpilot clusters describe            # the active cluster",
        "hyperpilot clusters describe llm-training -o yaml",
    )
)
def describe(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Cluster name (the active cluster if omitted)",
            autocompletion=cluster_names,
            show_default=False,
        ),
    ] = None,
    output: Output = None,
) -> None:
    """Describe a cluster: status, AWS resources, instance groups, components."""
    with client() as api:
        if name is None:
            name = str(api.get(f"{BASE}/active")["name"])
        cluster = api.get(f"{BASE}/{name}")
    emit(cluster, fmt(output), render_cluster)


@app.command(
    epilog=examples(
        "hyperpilot clusters create --name llm-training --zone use1-az2 "
        "-g name=workers,type=ml.g5.8xlarge,count=2 --wait",
        "hyperpilot clusters create -f cluster.yaml --wait -o json",
        "hyperpilot clusters create -f cluster.yaml --name llm-copy   # flags override the file",
    )
)
def create(
    file: Annotated[
        str | None,
        typer.Option(
            "--file", "-f", help="Cluster spec as YAML or JSON (- for stdin); flags override it"
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Cluster name")] = None,
    zone: Annotated[
        str | None,
        typer.Option(help="Availability Zone id of the compute nodes, e.g. use1-az2"),
    ] = None,
    instance_group: Annotated[
        list[str] | None,
        typer.Option(
            "--instance-group",
            "-g",
            help="name=..,type=ml.*,count=N[,min=N,zone=..,capacity=on-demand|spot|training-plan,"
            "plan=ARN,ebs=GB,threads=1|2] (repeat for more groups)",
        ),
    ] = None,
    kubernetes_version: Annotated[
        str | None, typer.Option(help="1.30, 1.31, 1.32 (default) or 1.33")
    ] = None,
    node_recovery: Annotated[NodeRecovery | None, typer.Option(help="Automatic or None")] = None,
    vpc_id: Annotated[str | None, typer.Option(help="Use this VPC instead of a new one")] = None,
    vpc_cidr: Annotated[str | None, typer.Option(help="CIDR of a new VPC, /16 to /20")] = None,
    bucket: Annotated[str | None, typer.Option(help="S3 bucket for shared data")] = None,
    fsx_capacity_gib: Annotated[
        int | None, typer.Option(help="Create FSx for Lustre: 1200, 2400 or a multiple of 2400")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="KEY=VALUE tag (repeatable)")
    ] = None,
    region: Region = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Create an EKS + HyperPod cluster: VPC, roles, bucket, EKS, HyperPod and add-ons.

    The gateway checks the request against live AWS state (zones, instance type offerings,
    quotas, training plans) before accepting it; a problem is reported with the field and how
    to fix it, and exit code 2.
    """
    body: dict[str, Any] = read_spec(file) if file else {}
    if name is not None:
        body["name"] = name
    if zone is not None:
        body["availability_zone_id"] = zone
    if instance_group:
        body["instance_groups"] = [parse_group(g) for g in instance_group]
    if kubernetes_version is not None:
        body["kubernetes_version"] = kubernetes_version
    if node_recovery is not None:
        body["node_recovery"] = node_recovery.value
    if vpc_id is not None or vpc_cidr is not None:
        network = dict(body.get("network") or {})
        if vpc_id is not None:
            network["vpc_id"] = vpc_id
        if vpc_cidr is not None:
            network["vpc_cidr"] = vpc_cidr
        body["network"] = network
    if bucket is not None or fsx_capacity_gib is not None:
        storage = dict(body.get("storage") or {})
        if bucket is not None:
            storage["bucket"] = bucket
        if fsx_capacity_gib is not None:
            storage["fsx_capacity_gib"] = fsx_capacity_gib
        body["storage"] = storage
    if tag:
        body["tags"] = {**(body.get("tags") or {}), **parse_pairs(tag, "--tag")}
    if region is not None:
        body["region"] = region
    with client() as api:
        mutate(api, "POST", BASE, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(
    "import",
    epilog=examples(
        "hyperpilot clusters import --eks-cluster-name prod-eks --hyperpod-cluster-name prod-hp --wait",
    ),
)
def import_(
    eks_cluster_name: Annotated[str, typer.Option(help="The EKS cluster to import")],
    hyperpod_cluster_name: Annotated[
        str | None, typer.Option(help="Its HyperPod cluster, if any")
    ] = None,
    region: Region = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Import an existing EKS (and HyperPod) cluster; nothing in AWS is changed."""
    body: dict[str, Any] = {"eks_cluster_name": eks_cluster_name}
    if hyperpod_cluster_name:
        body["hyperpod_cluster_name"] = hyperpod_cluster_name
    if region:
        body["region"] = region
    with client() as api:
        mutate(api, "POST", f"{BASE}/import", body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(epilog=examples("hyperpilot clusters use llm-training"))
def use(name: Name, output: Output = None) -> None:
    """Make a cluster the active one (what commands without a cluster name act on)."""
    with client() as api:
        cluster = api.put(f"{BASE}/active", {"name": name})
    emit(cluster, fmt(output), lambda c: f"active cluster: {c['name']} ({c['status']})")


@app.command(
    epilog=examples(
        "hyperpilot clusters delete llm-training",
        "hyperpilot clusters delete llm-training --yes --wait -o json",
    )
)
def delete(
    name: Name, yes: Yes = False, dry_run: DryRun = False, wait: Wait = False, output: Output = None
) -> None:
    """Delete what Hyperpilot created for a cluster, in reverse dependency order (admin).

    An imported cluster is only forgotten; its AWS resources are left alone. --dry-run lists
    the deletions without asking or doing anything.
    """
    if not dry_run:
        confirm(f"Delete cluster {name} and the AWS resources Hyperpilot created for it?", yes)
    with client() as api:
        mutate(api, "DELETE", f"{BASE}/{name}", output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(
    "update-software",
    epilog=examples(
        "hyperpilot clusters update-software llm-training --wait",
        "hyperpilot clusters update-software llm-training --group workers --batch-percent 25 "
        "--wait-interval 300 --dry-run",
    ),
)
def update_software(
    name: Name,
    group: Annotated[
        list[str] | None,
        typer.Option("--group", help="Instance group to update (repeatable; all if omitted)"),
    ] = None,
    image_id: Annotated[
        str | None, typer.Option(help="AMI (ami-...), or latest; the latest release if omitted")
    ] = None,
    batch_count: Annotated[int | None, typer.Option(help="Nodes per batch (default 1)")] = None,
    batch_percent: Annotated[
        int | None, typer.Option(help="Share of a group's capacity per batch, 1-100")
    ] = None,
    wait_interval: Annotated[
        int | None, typer.Option(help="Seconds to pause between batches")
    ] = None,
    rollback_alarm: Annotated[
        list[str] | None,
        typer.Option("--rollback-alarm", help="CloudWatch alarm that rolls back (repeatable)"),
    ] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Update the nodes' software (UpdateClusterSoftware) with a rolling deployment."""
    if batch_count is not None and batch_percent is not None:
        raise UsageError("--batch-count and --batch-percent exclude each other")
    body: dict[str, Any] = {}
    if group:
        body["instance_groups"] = group
    if image_id is not None:
        body["image_id"] = image_id
    if batch_count is not None:
        body["batch_size"] = {"type": "count", "value": batch_count}
    if batch_percent is not None:
        body["batch_size"] = {"type": "percentage", "value": batch_percent}
    if wait_interval is not None:
        body["wait_interval_seconds"] = wait_interval
    if rollback_alarm:
        body["rollback_alarms"] = rollback_alarm
    with client() as api:
        path = f"{BASE}/{name}/software-update"
        mutate(api, "POST", path, body, output=fmt(output), wait=wait, dry_run=dry_run)
