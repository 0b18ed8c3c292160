"""`hyperpilot events`: the append-only event log, paged or followed live; the audit log."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import httpx
import typer

from hyperpilot.client import EXIT_INTERRUPTED, Client, ConnectionFailed, UsageError, parse_sse
from hyperpilot.commands.common import Area, Output, client, examples, fmt
from hyperpilot.commands.complete import operation_ids
from hyperpilot.output import Column, Format, emit, short_time, table, to_yaml
from hyperpilot.progress import TERMINAL_EVENTS
from shared.boundary import api_path

app = Area("events", "The event log: list a page, tail it live, read the audit log.")

OperationFilter = Annotated[
    str | None,
    typer.Option("--operation", help="Only this operation's events", autocompletion=operation_ids),
]
After = Annotated[int, typer.Option(min=0, help="Start after this sequence number")]


def summary(event: dict[str, Any]) -> str:
    """The gist of an event's payload in one line."""
    payload = event.get("payload") or {}
    parts: list[str] = []
    for key in ("stage", "kind", "name", "target_id", "message", "external_id", "reason"):
        if payload.get(key):
            parts.append(f"{key}={payload[key]}")
    error = payload.get("error")
    if isinstance(error, dict) and error.get("message"):
        parts.append(f"error={error['message']}")
    return " ".join(parts)


EVENT_COLUMNS = [
    Column("SEQ", "seq"),
    Column("TIME", "occurred_at"),
    Column("TYPE", "type"),
    Column("OPERATION", lambda e: (e.get("operation_id") or "-")[:8]),
    Column("BY", "principal"),
    Column("DETAILS", summary, wrap=True),
]


def render_events(rows: list[dict[str, Any]]) -> Any:
    return table(rows, EVENT_COLUMNS) if rows else "(no events)"


def event_line(event: dict[str, Any]) -> str:
    op = (event.get("operation_id") or "-")[:8]
    when = short_time(str(event.get("occurred_at") or ""))
    return (
        f"{event.get('seq', ''):>6}  {when}  {event.get('type', ''):<22} {op:<8}  {summary(event)}"
    )


def write_event(event: dict[str, Any], output: Format) -> None:
    if output is Format.JSON:
        sys.stdout.write(json.dumps(event, default=str) + "\n")
    elif output is Format.YAML:
        sys.stdout.write("---\n" + to_yaml(event))
    else:
        sys.stdout.write(event_line(event) + "\n")
    sys.stdout.flush()


@app.command(
    "list",
    epilog=examples(
        "hyperpilot events list --after 120 --limit 50",
        "hyperpilot events list --operation 3f0c9a52-... -o json",
    ),
)
def list_(
    after: After = 0,
    operation: OperationFilter = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many events")] = 100,
    output: Output = None,
) -> None:
    """List events in commit order after a sequence number."""
    events: list[dict[str, Any]] = []
    with client() as api:
        cursor = after
        while len(events) < limit:
            want = min(limit - len(events), 1000)
            page = api.get("/api/v1/events", after=cursor, limit=want, operation_id=operation)
            events.extend(page)
            if len(page) < want:
                break
            cursor = page[-1]["seq"]
    emit(events, fmt(output), render_events)


def _follow(
    api: Client,
    params: dict[str, Any],
    output: Format,
    limit: int | None,
    until_terminal: bool,
) -> None:
    shown = 0
    failures = 0
    after = int(params.get("after") or 0)
    while True:
        try:
            with api.stream("/api/v1/events/stream", {**params, "after": after}) as response:
                failures = 0
                for _, _, data in parse_sse(response.iter_lines()):
                    try:
                        event = json.loads(data)
                    except ValueError:
                        continue
                    after = max(after, int(event.get("seq", after)))
                    write_event(event, output)
                    shown += 1
                    if limit is not None and shown >= limit:
                        return
                    if until_terminal and event.get("type") in TERMINAL_EVENTS:
                        return
        except (httpx.TransportError, ConnectionFailed) as exc:
            failures += 1
            if failures >= 5:
                raise ConnectionFailed(
                    api.base_url, f"the event stream keeps dropping ({exc})"
                ) from exc
            sys.stderr.write(f"event stream dropped; resuming after seq {after}\n")
        time.sleep(min(0.5 * 2**failures, 5.0))


@app.command(
    epilog=examples(
        "hyperpilot events tail",
        "hyperpilot events tail --after 0 --limit 20",
        "hyperpilot events tail --operation 3f0c9a52-... --until-terminal -o json",
    )
)
def tail(
    after: Annotated[
        int | None,
        typer.Option(
            min=0, help="Replay events after this sequence number first (default: only new ones)"
        ),
    ] = None,
    operation: OperationFilter = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Stop after this many events")] = None,
    until_terminal: Annotated[
        bool,
        typer.Option(help="With --operation: stop when the operation succeeds, fails or ends"),
    ] = False,
    output: Output = None,
) -> None:
    """Follow the live event stream (one line per event; JSON Lines with -o json).

    Runs until --limit events were shown, the operation ended (--until-terminal) or Ctrl-C.
    A dropped connection resumes from the last sequence number seen.
    """
    if until_terminal and not operation:
        raise UsageError("--until-terminal needs --operation ID", "pass the operation to watch")
    with client() as api:
        if after is None:
            after = 0 if operation else _latest_seq(api)
        params: dict[str, Any] = {"after": after, "operation_id": operation}
        try:
            _follow(api, params, fmt(output), limit, until_terminal)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_INTERRUPTED) from None


def _latest_seq(api: Client) -> int:
    """The newest sequence number, so that `tail` without --after shows only new events."""
    cursor = 0
    answer = api.get("/api/v1/operations", limit=1)
    items = answer.get("items", []) if isinstance(answer, dict) else []
    if items:
        op = api.get(api_path("operations", items[0]["id"]))
        cursor = max((e["seq"] for e in op.get("events") or []), default=0)
    while True:
        page = api.get("/api/v1/events", after=cursor, limit=1000)
        if page:
            cursor = page[-1]["seq"]
        if len(page) < 1000:
            return cursor


AUDIT_COLUMNS = [
    Column("SEQ", "seq"),
    Column("RECORDED", "recorded_at"),
    Column("PRINCIPAL", "principal"),
    Column("SOURCE", "source"),
    Column("TYPE", "type"),
    Column("OPERATION", lambda e: (e.get("operation_id") or "-")[:8]),
    Column("DETAILS", summary, wrap=True),
]


@app.command(
    epilog=examples(
        "hyperpilot events audit --principal alice",
        "hyperpilot events audit --after 500 --limit 100 -o json",
    )
)
def audit(
    after: After = 0,
    principal: Annotated[str | None, typer.Option(help="Only this principal")] = None,
    operation: OperationFilter = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many")] = 100,
    output: Output = None,
) -> None:
    """The audit log: every event with who caused it and from which face (needs operator)."""
    with client() as api:
        rows = api.get(
            "/api/v1/audit",
            after=after,
            principal=principal,
            operation_id=operation,
            limit=limit,
        )
    emit(rows, fmt(output), lambda r: table(r, AUDIT_COLUMNS) if r else "(no audit records)")
