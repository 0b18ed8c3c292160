"""`hyperpilot instance-groups`: a cluster's instance groups: list, add, update, delete."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.client import UsageError
from hyperpilot.commands.clusters import parse_pairs, read_spec
from hyperpilot.commands.common import (
    Area,
    Cluster,
    ContractOption,
    DryRun,
    Limit,
    Output,
    PageToken,
    Wait,
    Yes,
    active_cluster,
    checked,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.output import Column, emit, table
from shared.boundary import api_path
from shared.contracts.cluster import CapacityType, DeepHealthCheck, InterfaceType
from shared.contracts.instance_groups import InstanceGroupChange, NewInstanceGroup

app = Area("instance-groups", "A cluster's instance groups: list, add, update, delete.")

COLUMNS = [
    Column("GROUP", "name"),
    Column("INSTANCE TYPE", "instance_type"),
    Column("COUNT", "count"),
    Column("MIN", "spec.min_count"),
    Column("ZONE", "spec.availability_zone_id"),
    Column("CAPACITY", "spec.capacity_type"),
    Column("STATUS", "status"),
    Column("UPDATED", "updated_at"),
]

Group = Annotated[str, typer.Argument(help="Instance group name", show_default=False)]


NEW = NewInstanceGroup
CHANGE = InstanceGroupChange

Count = Annotated[int | None, ContractOption(CHANGE, "count")]
MinCount = Annotated[int | None, ContractOption(CHANGE, "min_count", "--min-count")]
Ebs = Annotated[int | None, ContractOption(CHANGE, "ebs_volume_gb", "--ebs-volume-gb")]
Checks = Annotated[
    list[DeepHealthCheck] | None,
    ContractOption(CHANGE, "deep_health_checks", "--health-check", notes="repeatable"),
]
Labels = Annotated[
    list[str] | None, typer.Option("--label", help="KEY=VALUE Kubernetes label (repeatable)")
]
Taints = Annotated[
    list[str] | None,
    typer.Option("--taint", help="KEY=VALUE:EFFECT or KEY:EFFECT Kubernetes taint (repeatable)"),
]


def parse_taint(text: str) -> dict[str, str]:
    """'nvidia.com/gpu=true:NoSchedule' -> {"key", "value", "effect"}."""
    head, sep, effect = text.rpartition(":")
    if not sep or not head or not effect:
        raise UsageError(
            f"--taint {text!r} is not KEY=VALUE:EFFECT",
            "use e.g. --taint nvidia.com/gpu=true:NoSchedule",
        )
    key, _, value = head.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _changes(
    count: int | None,
    min_count: int | None,
    ebs: int | None,
    checks: list[DeepHealthCheck] | None,
    labels: list[str] | None,
    taints: list[str] | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if count is not None:
        body["count"] = count
    if min_count is not None:
        body["min_count"] = min_count
    if ebs is not None:
        body["ebs_volume_gb"] = ebs
    if checks:
        body["deep_health_checks"] = [c.value for c in checks]
    if labels:
        body["labels"] = parse_pairs(labels, "--label")
    if taints:
        body["taints"] = [parse_taint(t) for t in taints]
    return body


def _base(cluster: str) -> str:
    return api_path("clusters", cluster, "instance-groups")


@app.command(
    "list",
    epilog=examples(
        "hyperpilot instance-groups list",
        "hyperpilot instance-groups list -c llm-training -o json",
    ),
)
def list_(
    cluster: Cluster = None,
    limit: Limit = None,
    page_token: PageToken = None,
    output: Output = None,
) -> None:
    """List a cluster's instance groups with type, count and status, by name."""
    with client() as api:
        rows = listed(api, _base(active_cluster(api, cluster)), limit, page_token)
    emit(rows, fmt(output), lambda r: table(r, COLUMNS) if r else "(no instance groups)")


@app.command(
    epilog=examples(
        "hyperpilot instance-groups add --name workers --type ml.g5.8xlarge --count 4 --wait",
        "hyperpilot instance-groups add --name spot --type ml.g5.8xlarge --count 2 "
        "--capacity spot --dry-run",
        "hyperpilot instance-groups add -f group.yaml -c llm-training --wait",
        "hyperpilot instance-groups add --name mig --type ml.p5.48xlarge --count 1 "
        "--mig-profile mig-1g.10gb --dry-run",
    )
)
def add(
    cluster: Cluster = None,
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="Group spec as YAML or JSON (- for stdin)"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Group name")] = None,
    instance_type: Annotated[str | None, ContractOption(NEW, "instance_type", "--type")] = None,
    count: Annotated[int | None, ContractOption(NEW, "count")] = None,
    min_count: Annotated[int | None, ContractOption(NEW, "min_count", "--min-count")] = None,
    zone: Annotated[str | None, ContractOption(NEW, "availability_zone_id", "--zone")] = None,
    capacity: Annotated[
        CapacityType | None, ContractOption(NEW, "capacity_type", "--capacity")
    ] = None,
    training_plan_arn: Annotated[str | None, ContractOption(NEW, "training_plan_arn")] = None,
    interface: Annotated[
        InterfaceType | None, ContractOption(NEW, "interface_type", "--interface")
    ] = None,
    ebs_volume_gb: Annotated[
        int | None, ContractOption(NEW, "ebs_volume_gb", "--ebs-volume-gb")
    ] = None,
    threads_per_core: Annotated[int | None, ContractOption(NEW, "threads_per_core")] = None,
    health_check: Checks = None,
    label: Labels = None,
    taint: Taints = None,
    lifecycle_script_uri: Annotated[str | None, ContractOption(NEW, "lifecycle_script_uri")] = None,
    mig_profile: Annotated[str | None, ContractOption(NEW, "mig_profile")] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Add an instance group to a cluster; the gateway checks offerings, quotas and plans first."""
    body: dict[str, Any] = read_spec(file) if file else {}
    body.update(_changes(count, min_count, ebs_volume_gb, health_check, label, taint))
    for key, value in (
        ("name", name),
        ("instance_type", instance_type),
        ("availability_zone_id", zone),
        ("capacity_type", capacity.value if capacity else None),
        ("training_plan_arn", training_plan_arn),
        ("interface_type", interface.value if interface else None),
        ("threads_per_core", threads_per_core),
        ("lifecycle_script_uri", lifecycle_script_uri),
        ("mig_profile", mig_profile),
    ):
        if value is not None:
            body[key] = value
    checked(NEW, body)
    with client() as api:
        path = _base(active_cluster(api, cluster))
        mutate(api, "POST", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(
    epilog=examples(
        "hyperpilot instance-groups update workers --count 8 --wait",
        "hyperpilot instance-groups update workers --count 0 --dry-run",
        "hyperpilot instance-groups update workers --label team=llm --taint gpu=true:NoSchedule",
        "hyperpilot instance-groups update mig --mig-profile mig-3g.40gb --dry-run",
    )
)
def update(
    group: Group,
    cluster: Cluster = None,
    count: Count = None,
    min_count: MinCount = None,
    ebs_volume_gb: Ebs = None,
    health_check: Checks = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="KEY=VALUE label (repeatable; replaces the whole map)"),
    ] = None,
    taint: Annotated[
        list[str] | None,
        typer.Option("--taint", help="KEY=VALUE:EFFECT taint (repeatable; replaces the list)"),
    ] = None,
    mig_profile: Annotated[str | None, ContractOption(CHANGE, "mig_profile")] = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Change an instance group: only the fields given are sent (an explicit diff)."""
    body = _changes(count, min_count, ebs_volume_gb, health_check, label, taint)
    if mig_profile is not None:
        body["mig_profile"] = mig_profile
    if not body:
        raise UsageError("nothing to change", "give at least one of --count, --min-count, ...")
    checked(CHANGE, body)
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{group}"
        mutate(api, "PATCH", path, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command(
    epilog=examples(
        "hyperpilot instance-groups delete spot --dry-run",
        "hyperpilot instance-groups delete spot -c llm-training --yes --wait",
    )
)
def delete(
    group: Group,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Delete an instance group; its nodes are terminated (admin)."""
    if not dry_run:
        confirm(f"Delete instance group {group} and terminate its nodes?", yes)
    with client() as api:
        path = f"{_base(active_cluster(api, cluster))}/{group}"
        mutate(api, "DELETE", path, output=fmt(output), wait=wait, dry_run=dry_run)
