"""Operations: the unit of every mutation. The status tool waits, so an agent needs no sleep."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.context import Context
from pydantic import Field

from mcp_svc.client import Gateway, idempotency_key
from mcp_svc.registry import HyperpilotServer, reference
from mcp_svc.results import (
    MAX_WAIT_SECONDS,
    STATUS_TOOL,
    TERMINAL,
    OperationStarted,
    Paged,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    rest_page,
    started,
)
from mcp_svc.tools.common import count
from mcp_svc.tools.events import Event
from shared.boundary import api_path

# While it waits, get_operation reports progress at least this often (when asked to).
PROGRESS_EVERY_SECONDS = 5.0
OperationId = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="The operation id a mutating tool returned (a UUID)",
    ),
]
# The most one REST page of operations holds (GET /api/v1/operations?limit=).
MAX_OPERATIONS = 500
Status = Literal["pending", "running", "succeeded", "failed", "cancelled", "noop"]


class Stage(Passthrough):
    name: str = Field(description="Stage name, e.g. eks_cluster")
    title: str | None = Field(None, description="For a human")
    needs: list[str] = Field([], description="Stages that must finish first")
    status: str = Field(description="pending, running, succeeded, failed, cancelled, noop")
    attempts: int = Field(0, description="Runs so far")
    external_id: str | None = Field(None, description="The cloud resource it submitted")
    progress: str | None = Field(None, description="The cloud's own status while it runs")
    outputs: dict[str, Any] | None = Field(
        None, description="What the stage made (only with include_stage_outputs)"
    )
    error: dict[str, Any] | None = Field(None, description="code, message and hint of a failure")
    started_at: str | None = Field(None, description="ISO 8601")
    finished_at: str | None = Field(None, description="ISO 8601")


class OperationSummary(Passthrough):
    id: str = Field(description="Operation id")
    kind: str = Field(description="e.g. cluster.create, bucket.create")
    target_type: str = Field(description="e.g. cluster, bucket, job")
    target_id: str = Field(description="The target's name or id")
    status: str = Field(description="pending, running, succeeded, failed, cancelled, noop")
    principal: str | None = Field(None, description="Who started it")
    source: str | None = Field(None, description="ui, rest, mcp or cli")
    error: dict[str, Any] | None = Field(None, description="code, message and hint of a failure")
    created_at: str | None = Field(None, description="ISO 8601")
    finished_at: str | None = Field(None, description="ISO 8601")


class Operation(ToolResult):
    operation_id: str = Field(description="Operation id")
    kind: str = Field(description="e.g. cluster.create")
    target_type: str = Field(description="e.g. cluster, bucket, job")
    target_id: str = Field(description="The target's name or id")
    status: Status = Field(description="Its status now")
    terminal: bool = Field(description="True when the status will not change any more")
    status_tool: Literal["get_operation"] = Field(STATUS_TOOL, description="This tool")
    next_step: str = Field(description="What to call next")
    attempt: int = Field(0, description="Retries so far")
    cancel_requested: bool = Field(False, description="cancel_operation was called")
    error: dict[str, Any] | None = Field(None, description="code, message and hint of a failure")
    result: dict[str, Any] | None = Field(None, description="What it made, once succeeded")
    created_at: str | None = Field(None, description="ISO 8601")
    updated_at: str | None = Field(None, description="ISO 8601")
    finished_at: str | None = Field(None, description="ISO 8601")
    stages: list[Stage] = Field(description="In order")
    events: list[Event] | None = Field(None, description="Only with include_events")


class OperationList(Paged):
    operations: list[OperationSummary] = Field(description="This page, newest first")


class RetryStarted(OperationStarted):
    retried_stages: list[str] = Field(description="The failed stages that run again")


class CancelRequested(OperationStarted):
    status: str = Field(description="The operation's status after the request")


def _error_text(error: dict[str, Any] | None) -> str:
    if not error:
        return ""
    text = str(error.get("message") or error.get("code") or "failed")
    return text + (f" (hint: {error['hint']})" if error.get("hint") else "")


def _stages_done(op: Operation) -> str:
    done = sum(1 for s in op.stages if s.status in ("succeeded", "noop"))
    return f"{done}/{len(op.stages)} stages done" if op.stages else "no stages yet"


def _running(op: Operation) -> list[str]:
    return [
        s.name + (f" ({s.progress})" if s.progress else "")
        for s in op.stages
        if s.status == "running"
    ]


def progress_message(op: Operation) -> str:
    """One progress notification's message: the status and the stage running now."""
    running = _running(op)
    pending = [s.name for s in op.stages if s.status == "pending"]
    now = (
        f"running: {', '.join(running)}"
        if running
        else f"next: {pending[0]}"
        if pending
        else "waiting"
    )
    return f"{op.kind} {op.target_id} {op.status}, {_stages_done(op)}; {now}"


def describe(op: Operation) -> tuple[str, str]:
    """(summary, next step) of an operation."""
    head = f"Operation {op.operation_id} ({op.kind} {op.target_id}) is {op.status}"
    progress = _stages_done(op)
    poll = f"get_operation(operation_id='{op.operation_id}', wait_seconds={MAX_WAIT_SECONDS})"
    if op.status in ("succeeded", "noop"):
        return f"{head}: {progress}.", "none: the operation finished"
    if op.status == "failed":
        failed = [s for s in op.stages if s.status == "failed"]
        where = f" at stage {', '.join(s.name for s in failed)}" if failed else ""
        reason = _error_text(op.error) or "; ".join(_error_text(s.error) for s in failed)
        return (
            f"{head}{where}: {reason}",
            "fix the cause the error names, then retry_operation(operation_id) re-runs only the"
            " failed stages",
        )
    if op.status == "cancelled":
        return f"{head}: {progress}.", "retry_operation(operation_id) resumes it if wanted"
    running = _running(op)
    now = f"; running: {', '.join(running)}" if running else ""
    return f"{head}: {progress}{now}. Not finished: call {poll} again.", poll


def operation(raw: dict[str, Any], include_events: bool, include_stage_outputs: bool) -> Operation:
    """The REST operation as the tool's result (summary and next step filled in)."""
    stages = [Stage.model_validate(s) for s in raw.get("stages", [])]
    if not include_stage_outputs:
        stages = [s.model_copy(update={"outputs": None}) for s in stages]
    op = Operation(
        summary="",
        next_step="",
        operation_id=str(raw["id"]),
        kind=raw["kind"],
        target_type=raw["target_type"],
        target_id=raw["target_id"],
        status=raw["status"],
        terminal=raw["status"] in TERMINAL,
        attempt=raw.get("attempt", 0),
        cancel_requested=raw.get("cancel_requested", False),
        error=raw.get("error"),
        result=raw.get("result"),
        created_at=raw.get("created_at"),
        updated_at=raw.get("updated_at"),
        finished_at=raw.get("finished_at"),
        stages=stages,
        events=[Event.model_validate(e) for e in raw.get("events", [])] if include_events else None,
    )
    summary, next_step = describe(op)
    return op.model_copy(update={"summary": summary, "next_step": next_step})


async def report(
    ctx: Context[Any, Any] | None, progress: float, total: float, message: str
) -> None:
    """A progress notification (`report_progress` sends nothing unless the request carries a
    progressToken)."""
    if ctx is None:
        return
    try:
        ctx.request_context  # noqa: B018
    except ValueError:  # called without a request (in-process, no client): nobody to tell
        return
    await ctx.report_progress(progress, total, message)


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(
        area="operations", rest="GET /api/v1/operations/{id}?wait=", listed_result=True
    )
    async def get_operation(
        operation_id: OperationId,
        wait_seconds: Annotated[
            float,
            Field(
                ge=0,
                description=(
                    "Seconds to wait for a terminal status (0: answer now; at most"
                    f" {MAX_WAIT_SECONDS}). Use it instead of sleeping; with a progressToken,"
                    " progress notifications name the running stage at least every"
                    f" {PROGRESS_EVERY_SECONDS:g} s."
                ),
            ),
        ] = 30,
        include_events: Annotated[
            bool, Field(description="Also return the operation's events")
        ] = False,
        include_stage_outputs: Annotated[
            bool, Field(description="Also return what each stage made (ids, ARNs)")
        ] = False,
        ctx: Context[Any, Any] | None = None,
    ) -> Operation:
        """The status tool of every mutation: an operation and its stages, long-polled until
        terminal (succeeded, failed, cancelled, noop) or wait_seconds pass. Call again while
        `terminal` is false; report only a terminal status."""
        wait = min(wait_seconds, MAX_WAIT_SECONDS)
        events = "true" if include_events else "false"
        path = api_path("operations", operation_id)
        # The wait is cut in slices, each a long poll that still answers as soon as the
        # operation is terminal, with a progress notification of where it is after each one (the
        # first one at once). Without a progressToken a notification is not sent (the SDK makes
        # it a no-op): the slices cost a few more REST reads, nothing else.
        start = time.monotonic()
        deadline = start + wait
        step, reported = 0.0, -1.0
        while True:
            raw = await gateway.get(path, {"wait": step, "events": events}, extra_timeout=step)
            op = operation(raw, include_events, include_stage_outputs)
            remaining = deadline - time.monotonic()
            if op.terminal or remaining <= 0:
                return op
            # Seconds waited so far, of `wait`: a progress value only ever increases.
            reported = max(round(time.monotonic() - start, 3), reported + 0.001)
            await report(ctx, reported, wait, progress_message(op))
            step = round(min(PROGRESS_EVERY_SECONDS, remaining), 3)

    @server.read_tool(area="operations", rest="GET /api/v1/operations")
    async def list_operations(
        status: Annotated[
            Status | None, Field(description="Only operations in this status")
        ] = None,
        kind: Annotated[
            str | None, Field(max_length=100, description="Only this kind, e.g. cluster.create")
        ] = None,
        target_id: Annotated[
            str | None,
            Field(
                max_length=200, description="Only operations on this target (a cluster name, ...)"
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_OPERATIONS, description="Page size (a page is under 16 KB)")
        ] = 50,
        page_token: PageToken = None,
    ) -> OperationList:
        """List operations, newest first: find what is running or what failed before acting."""
        ops, next_token, total = await rest_page(
            gateway,
            "/api/v1/operations",
            {"status": status, "kind": kind, "target_id": target_id},
            OperationSummary,
            ("operations", lambda r: (r["created_at"], r["id"])),
            limit,
            page_token,
            items="items",
        )
        by_status: dict[str, int] = {}
        for o in ops:
            by_status[o.status] = by_status.get(o.status, 0) + 1
        detail = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        summary = (
            f"{count(total, 'operation')}{page_note(len(ops), total, page_token, next_token)}"
            + (f": {detail}." if ops else ".")
        )
        return OperationList(
            summary=summary, operations=ops, total=total, next_page_token=next_token
        )

    @server.write_tool(area="operations", rest="POST /api/v1/operations/{id}/retry")
    async def retry_operation(operation_id: OperationId) -> RetryStarted:
        """Re-run the failed (or cancelled) stages of an operation; finished stages are kept.
        Fix what the failure names first (capacity, quota, zone)."""
        arguments = {"operation_id": operation_id}
        raw = await gateway.mutate(
            "POST",
            api_path("operations", operation_id, "retry"),
            tool="retry_operation",
            arguments=arguments,
        )
        key = idempotency_key("retry_operation", arguments)
        base = started("retry_operation", {**raw, "created": True}, key, f"retry of {operation_id}")
        stages = [str(s) for s in raw.get("retried_stages", [])]
        return RetryStarted(
            **base.model_dump(exclude={"summary"}),
            summary=f"Retrying {', '.join(stages) or 'the operation'} of {operation_id}."
            f" Poll {base.next_step}.",
            retried_stages=stages,
        )

    @server.write_tool(area="operations", rest="POST /api/v1/operations/{id}/cancel")
    async def cancel_operation(operation_id: OperationId) -> CancelRequested:
        """Stop an operation: no new stage starts; cloud work already submitted is not rolled back.
        A cancelled operation can be retried."""
        arguments = {"operation_id": operation_id}
        raw = await gateway.mutate(
            "POST",
            api_path("operations", operation_id, "cancel"),
            tool="cancel_operation",
            arguments=arguments,
        )
        key = idempotency_key("cancel_operation", arguments)
        base = started(
            "cancel_operation", {**raw, "created": True}, key, f"cancel of {operation_id}"
        )
        return CancelRequested(
            **base.model_dump(exclude={"summary"}),
            summary=f"Cancel requested for {operation_id} (now {raw.get('status')})."
            f" Poll {base.next_step}.",
            status=str(raw.get("status")),
        )
