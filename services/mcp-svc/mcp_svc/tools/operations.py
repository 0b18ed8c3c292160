"""Operations: the unit of every mutation. The status tool waits, so an agent needs no sleep."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcp_svc.client import Gateway, idempotency_key
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import (
    STATUS_TOOL,
    TERMINAL,
    OperationStarted,
    Passthrough,
    ToolResult,
    started,
)
from mcp_svc.tools.common import count
from mcp_svc.tools.events import Event
from shared.boundary import api_path

MAX_WAIT_SECONDS = 60
OperationId = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        description="The operation id a mutating tool returned (a UUID)",
    ),
]
Status = Literal["pending", "running", "succeeded", "failed", "cancelled", "noop"]


class Stage(Passthrough):
    name: str
    title: str | None = None
    needs: list[str] = Field([], description="Stages that must finish first")
    status: str = Field(description="pending, running, succeeded, failed, cancelled, noop")
    attempts: int = 0
    external_id: str | None = Field(None, description="The cloud resource it submitted")
    progress: str | None = None
    outputs: dict[str, Any] | None = Field(
        None, description="What the stage made (only with include_stage_outputs)"
    )
    error: dict[str, Any] | None = Field(None, description="code, message and hint of a failure")
    started_at: str | None = None
    finished_at: str | None = None


class OperationSummary(Passthrough):
    id: str
    kind: str = Field(description="e.g. cluster.create, bucket.create")
    target_type: str
    target_id: str
    status: str
    principal: str | None = None
    source: str | None = None
    error: dict[str, Any] | None = None
    created_at: str | None = None
    finished_at: str | None = None


class Operation(ToolResult):
    operation_id: str
    kind: str
    target_type: str
    target_id: str
    status: Status
    terminal: bool = Field(description="True when the status will not change any more")
    status_tool: Literal["get_operation"] = STATUS_TOOL
    next_step: str = Field(description="What to call next")
    attempt: int = 0
    cancel_requested: bool = False
    error: dict[str, Any] | None = Field(None, description="code, message and hint of a failure")
    result: dict[str, Any] | None = None
    created_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    stages: list[Stage]
    events: list[Event] | None = Field(None, description="Only with include_events")


class OperationList(ToolResult):
    operations: list[OperationSummary]


class RetryStarted(OperationStarted):
    retried_stages: list[str] = Field(description="The failed stages that run again")


class CancelRequested(OperationStarted):
    status: str = Field(description="The operation's status after the request")


def _error_text(error: dict[str, Any] | None) -> str:
    if not error:
        return ""
    text = str(error.get("message") or error.get("code") or "failed")
    return text + (f" (hint: {error['hint']})" if error.get("hint") else "")


def describe(op: Operation) -> tuple[str, str]:
    """(summary, next step) of an operation."""
    head = f"Operation {op.operation_id} ({op.kind} {op.target_id}) is {op.status}"
    done = sum(1 for s in op.stages if s.status in ("succeeded", "noop"))
    progress = f"{done}/{len(op.stages)} stages done" if op.stages else "no stages yet"
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
    running = [
        s.name + (f" ({s.progress})" if s.progress else "")
        for s in op.stages
        if s.status == "running"
    ]
    now = f"; running: {', '.join(running)}" if running else ""
    return f"{head}: {progress}{now}. Not finished: call {poll} again.", poll


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="operations", rest="GET /api/v1/operations/{id}?wait=")
    async def get_operation(
        operation_id: OperationId,
        wait_seconds: Annotated[
            float,
            Field(
                ge=0,
                le=MAX_WAIT_SECONDS,
                description=(
                    "Wait up to this many seconds for the operation to reach a terminal status"
                    " before answering (0: answer now). Use it instead of sleeping."
                ),
            ),
        ] = 30,
        include_events: Annotated[
            bool, Field(description="Also return the operation's events")
        ] = False,
        include_stage_outputs: Annotated[
            bool, Field(description="Also return what each stage made (ids, ARNs)")
        ] = False,
    ) -> Operation:
        """The status tool of every mutating tool: an operation with its stages, long-polled
        until it is terminal (succeeded, failed, cancelled, noop) or wait_seconds pass. Call it
        again while `terminal` is false; report to the user only a terminal status."""
        raw = await gateway.get(
            api_path("operations", operation_id),
            {"wait": wait_seconds, "events": "true" if include_events else "false"},
            extra_timeout=wait_seconds,
        )
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
            events=[Event.model_validate(e) for e in raw.get("events", [])]
            if include_events
            else None,
        )
        summary, next_step = describe(op)
        return op.model_copy(update={"summary": summary, "next_step": next_step})

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
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many")] = 50,
    ) -> OperationList:
        """List operations, newest first: find what is running or what failed before acting."""
        raw = await gateway.get(
            "/api/v1/operations",
            {"status": status, "kind": kind, "target_id": target_id, "limit": limit},
        )
        ops = [OperationSummary.model_validate(o) for o in raw.get("items", [])]
        by_status: dict[str, int] = {}
        for o in ops:
            by_status[o.status] = by_status.get(o.status, 0) + 1
        detail = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        summary = f"{count(len(ops), 'operation')}" + (f": {detail}." if ops else ".")
        return OperationList(summary=summary, operations=ops)

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
        """Stop an operation: no new stage starts. Cloud work already submitted is not rolled
        back (delete the resource to remove it). A cancelled operation can be retried."""
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
