"""`hyperpilot operations`: every mutation is an operation with stages; show, wait, retry."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.text import Text

from hyperpilot.commands.common import (
    Area,
    Output,
    Wait,
    accepted,
    client,
    examples,
    fmt,
    wait_for,
)
from hyperpilot.commands.complete import operation_ids
from hyperpilot.output import Column, Format, compact, details, emit, table
from hyperpilot.progress import duration, parse_time

app = Area("operations", "Operations: list, show, wait for, retry and cancel them.")

BASE = "/api/v1/operations"

OperationId = Annotated[
    str,
    typer.Argument(
        help="Operation id (from the 202 answer or `operations list`)",
        autocompletion=operation_ids,
        show_default=False,
    ),
]


class Status(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    NOOP = "noop"


def age(value: Any) -> str:
    """How long ago, kubectl style: 45s, 12m, 3h, 2d."""
    start = parse_time(value)
    if start is None:
        return "-"
    seconds = max((datetime.now(UTC) - start).total_seconds(), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _took(row: dict[str, Any]) -> str:
    start, end = parse_time(row.get("created_at")), parse_time(row.get("finished_at"))
    if start is None or end is None:
        return "-"
    return duration((end - start).total_seconds())


LIST_COLUMNS = [
    Column("ID", "id"),
    Column("KIND", "kind"),
    Column("TARGET", lambda r: f"{r.get('target_type')}/{r.get('target_id')}", wrap=True),
    Column("STATUS", "status"),
    Column("BY", lambda r: f"{r.get('principal')} ({r.get('source')})"),
    Column("AGE", lambda r: age(r.get("created_at"))),
    Column("TOOK", _took),
]
STAGE_COLUMNS = [
    Column("STAGE", "name"),
    Column("STATUS", "status"),
    Column("ATTEMPTS", "attempts"),
    Column("EXTERNAL ID", "external_id"),
    Column(
        "MESSAGE",
        lambda s: (s.get("error") or {}).get("message") or s.get("progress"),
        wrap=True,
    ),
]


def render_operation(op: dict[str, Any]) -> Any:
    fields = {
        key: op.get(key)
        for key in (
            "id",
            "kind",
            "target_type",
            "target_id",
            "status",
            "attempt",
            "principal",
            "source",
            "created_at",
            "finished_at",
        )
    }
    error = op.get("error")
    if isinstance(error, dict):
        fields["error"] = f"{error.get('code', '')}: {error.get('message', '')}"
        if error.get("hint"):
            fields["hint"] = error["hint"]
    parts: list[Any] = [details(fields)]
    if op.get("stages"):
        parts += [Text(""), table(op["stages"], STAGE_COLUMNS)]
    result = op.get("result")
    if isinstance(result, dict) and result:
        shown = {k: compact(v) for k, v in result.items()}
        parts += [Text(""), Text("result (all of it: -o yaml)", style="bold"), details(shown)]
    return Group(*parts)


@app.command(
    "list",
    epilog=examples(
        "hyperpilot operations list",
        "hyperpilot operations list --status failed --kind cluster.create",
        "hyperpilot operations list --target llm-training -o json",
    ),
)
def list_(
    status: Annotated[Status | None, typer.Option(help="Only this status")] = None,
    kind: Annotated[str | None, typer.Option(help="Only this kind, e.g. cluster.create")] = None,
    target: Annotated[str | None, typer.Option(help="Only this target id (a name)")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="At most this many")] = 50,
    output: Output = None,
) -> None:
    """List operations, newest first."""
    with client() as api:
        answer = api.get(
            BASE,
            status=status.value if status else None,
            kind=kind,
            target_id=target,
            limit=limit,
        )
    items = answer.get("items", [])
    emit(items, fmt(output), lambda rows: table(rows, LIST_COLUMNS) if rows else "(none)")


@app.command(
    epilog=examples(
        "hyperpilot operations show 3f0c9a52-...",
        "hyperpilot operations show 3f0c9a52-... -o json --events",
    )
)
def show(
    operation_id: OperationId,
    events: Annotated[
        bool, typer.Option("--events/--no-events", help="Include the operation's events")
    ] = False,
    output: Output = None,
) -> None:
    """Show an operation: status, each stage, error with its hint, result."""
    with client() as api:
        op = api.get(f"{BASE}/{operation_id}", events="true" if events else "false")
    output = fmt(output)
    if output is Format.TABLE and events:
        from hyperpilot.commands.events import render_events

        emit(op, output, lambda o: Group(render_operation(o), Text(""), render_events(o["events"])))
        return
    emit(op, output, render_operation)


@app.command(
    epilog=examples(
        "hyperpilot operations wait 3f0c9a52-...",
        "hyperpilot operations wait 3f0c9a52-... -o json > op.json; echo $?",
    )
)
def wait(operation_id: OperationId, output: Output = None) -> None:
    """Follow an operation's live progress until it ends.

    Exit code: 0 succeeded or nothing to do, 1 failed, 3 cancelled, 4 server unreachable,
    130 when interrupted (the operation keeps running).
    """
    with client() as api:
        wait_for(api, operation_id, fmt(output))


@app.command(
    epilog=examples(
        "hyperpilot operations retry 3f0c9a52-... --wait",
    )
)
def retry(operation_id: OperationId, wait: Wait = False, output: Output = None) -> None:
    """Re-run the failed stages of a failed operation; finished stages are kept."""
    with client() as api:
        answer = api.post(f"{BASE}/{operation_id}/retry")
        output = fmt(output)
        if not wait and output is Format.TABLE:
            stages = ", ".join(answer.get("retried_stages", [])) or "none"
            typer.echo(f"retrying stages: {stages}")
        accepted(api, answer, output, wait)


@app.command(
    epilog=examples(
        "hyperpilot operations cancel 3f0c9a52-...",
        "hyperpilot operations cancel 3f0c9a52-... --wait   # exit code 3 once cancelled",
    )
)
def cancel(operation_id: OperationId, wait: Wait = False, output: Output = None) -> None:
    """Stop an operation: no new stage starts (a pending one stops at once).

    Cloud work already submitted is not rolled back; a cancelled operation can be retried.
    """
    with client() as api:
        answer = api.post(f"{BASE}/{operation_id}/cancel")
        output = fmt(output)
        if not wait and output is Format.TABLE:
            typer.echo(f"cancel requested; operation is {answer.get('status', '?')}")
        accepted(api, answer, output, wait)
