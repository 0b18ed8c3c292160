"""`hyperpilot storage`: S3 buckets for lifecycle scripts, data and models."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.commands.common import (
    Area,
    DryRun,
    Output,
    Region,
    Wait,
    Yes,
    client,
    confirm,
    examples,
    fmt,
    mutate,
)
from hyperpilot.commands.complete import bucket_names
from hyperpilot.output import Column, emit, table

app = Area("storage", "S3 buckets: create, list, describe, delete.")

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
def list_(output: Output = None) -> None:
    """List the buckets managed here."""
    with client() as api:
        emit(api.get(BASE), fmt(output), _buckets)


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
