"""`hyperpilot storage`: S3 buckets for lifecycle scripts, data and models."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.commands.common import (
    Area,
    Cluster,
    DryRun,
    Limit,
    Output,
    PageToken,
    Region,
    Wait,
    Yes,
    active_cluster,
    client,
    confirm,
    examples,
    fmt,
    listed,
    mutate,
)
from hyperpilot.commands.complete import bucket_names
from hyperpilot.output import Column, emit, table
from shared.boundary import api_path

app = Area(
    "storage",
    "S3 buckets (create, list, describe, delete) and a cluster's storage claims (claims,"
    " attach, detach).",
)

BASE = "/api/v1/storage/buckets"
COLUMNS = [
    Column("NAME", "name"),
    Column("REGION", "region"),
    Column("STATUS", "status"),
    Column("ARN", "arn"),
    Column("UPDATED", "updated_at"),
]

Name = Annotated[
    str, typer.Argument(help="Bucket name", autocompletion=bucket_names, show_default=False)
]


def _buckets(rows: list[dict[str, Any]]) -> Any:
    return table(rows, COLUMNS) if rows else "(no buckets)"


@app.command(
    epilog=examples(
        "hyperpilot storage create team-llm-data --wait",
        "hyperpilot storage create team-llm-data --region us-west-2 -o json",
    )
)
def create(
    name: Annotated[str, typer.Argument(help="3-63 lowercase letters, digits and hyphens")],
    region: Region = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Create an encrypted S3 bucket with public access blocked."""
    body: dict[str, Any] = {"name": name}
    if region:
        body["region"] = region
    with client() as api:
        mutate(api, "POST", BASE, body, output=fmt(output), wait=wait, dry_run=dry_run)


@app.command("list", epilog=examples("hyperpilot storage list", "hyperpilot storage list -o yaml"))
def list_(limit: Limit = None, page_token: PageToken = None, output: Output = None) -> None:
    """List the buckets managed here, by name."""
    with client() as api:
        emit(listed(api, BASE, limit, page_token), fmt(output), _buckets)


@app.command(epilog=examples("hyperpilot storage describe team-llm-data -o json"))
def describe(name: Name, output: Output = None) -> None:
    """Show one bucket: region, status, ARN and the operation that made it."""
    with client() as api:
        emit(api.get(f"{BASE}/{name}"), fmt(output))


@app.command(
    epilog=examples(
        "hyperpilot storage delete team-llm-data --yes --wait",
    )
)
def delete(
    name: Name, yes: Yes = False, dry_run: DryRun = False, wait: Wait = False, output: Output = None
) -> None:
    """Empty and delete a bucket (needs the admin role)."""
    if not dry_run:
        confirm(f"Delete bucket {name} and every object in it?", yes)
    with client() as api:
        mutate(api, "DELETE", f"{BASE}/{name}", output=fmt(output), wait=wait, dry_run=dry_run)


# ---- storage claims of a cluster -------------------------------------------------------------

CLAIM_COLUMNS = [
    Column("CLAIM", "claim"),
    Column("KIND", "kind"),
    Column("SOURCE", "source"),
    Column("STATUS", "status"),
    Column("BUCKET / FILE SYSTEM", lambda c: c.get("bucket") or c.get("file_system_id") or ""),
    Column("MOUNT NAME", lambda c: (c.get("details") or {}).get("mount_name") or ""),
]
Claim = Annotated[str, typer.Argument(help="The claim's name", show_default=False)]


def _claims_path(api: Any, cluster: str | None) -> str:
    return api_path("clusters", active_cluster(api, cluster), "storage")


@app.command(
    epilog=examples(
        "hyperpilot storage claims", "hyperpilot storage claims -c llm-training -o json"
    )
)
def claims(cluster: Cluster = None, output: Output = None) -> None:
    """The cluster's storage claims: its own bucket (s3-claim), then the added ones."""
    with client() as api:
        rows = api.get(_claims_path(api, cluster))
    emit(rows, fmt(output), lambda r: table(r, CLAIM_COLUMNS) if r else "(no claims)")


@app.command(
    epilog=examples(
        "hyperpilot storage attach datasets --bucket team-llm-data --dry-run",
        "hyperpilot storage attach scratch --bucket new-scratch-123 --create --wait",
        "hyperpilot storage attach lustre --file-system-id fs-0123456789abcdef0 --wait",
        "hyperpilot storage attach fast --fsx-capacity-gib 2400 --deployment-type PERSISTENT_2 "
        "--throughput 500 --wait",
    )
)
def attach(
    claim: Claim,
    bucket: Annotated[
        str | None, typer.Option(help="An S3 bucket (with --create: a new one)")
    ] = None,
    create: Annotated[
        bool, typer.Option(help="Create the bucket (deleted with the claim)")
    ] = False,
    file_system_id: Annotated[
        str | None, typer.Option(help="An existing FSx for Lustre file system (fs-...)")
    ] = None,
    fsx_capacity_gib: Annotated[
        int | None, typer.Option(help="A new FSx for Lustre file system of this size, GiB")
    ] = None,
    deployment_type: Annotated[
        str | None, typer.Option(help="A new file system's deployment type (PERSISTENT_2)")
    ] = None,
    throughput: Annotated[
        int | None, typer.Option(help="A new PERSISTENT file system's MB/s per TiB")
    ] = None,
    cluster: Cluster = None,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Add a storage claim: an S3 bucket or an FSx for Lustre file system, found or new."""
    body: dict[str, Any] = {"claim": claim}
    if bucket is not None:
        body.update(kind="s3", bucket=bucket, create=create)
    else:
        body["kind"] = "fsx"
        optional = {
            "file_system_id": file_system_id,
            "storage_capacity_gib": fsx_capacity_gib,
            "deployment_type": deployment_type,
            "per_unit_storage_throughput": throughput,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
    with client() as api:
        mutate(api, "POST", _claims_path(api, cluster), body, output=fmt(output), wait=wait,
               dry_run=dry_run)  # fmt: skip


@app.command(epilog=examples("hyperpilot storage detach datasets --yes --wait"))
def detach(
    claim: Claim,
    cluster: Cluster = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    wait: Wait = False,
    output: Output = None,
) -> None:
    """Remove a storage claim (refused while a workload mounts it); a bucket or file system it
    created is deleted with it, one it found stays."""
    if not dry_run:
        confirm(f"Remove storage claim {claim} (and what it created)?", yes)
    with client() as api:
        path = api_path("clusters", active_cluster(api, cluster), "storage", claim)
        mutate(api, "DELETE", path, output=fmt(output), wait=wait, dry_run=dry_run)
