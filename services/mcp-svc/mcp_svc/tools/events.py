"""The event log and the audit log: what happened, in commit order, and who did it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, reference
from mcp_svc.results import (
    Passthrough,
    ToolResult,
    fitted,
)
from mcp_svc.tools.common import count

After = Annotated[
    int, Field(ge=0, description="Return entries with seq greater than this (0: from the start)")
]
Limit = Annotated[int, Field(ge=1, le=1000, description="At most this many entries")]
OperationFilter = Annotated[
    str | None,
    Field(
        json_schema_extra=reference(),
        pattern=r"^[0-9a-fA-F-]{36}$",
        description="Only entries of this operation id (a UUID)",
    ),
]


class Event(Passthrough):
    seq: int = Field(description="Position in the log; pass the last one as `after` to page")
    type: str = Field(description="e.g. StageSucceeded, OperationFailed")
    subject: str | None = Field(None, description="What it is about, e.g. cluster/c1")
    operation_id: str | None = Field(None, description="Its operation")
    principal: str | None = Field(None, description="Who caused it")
    occurred_at: str | None = Field(None, description="ISO 8601")
    payload: dict[str, Any] = Field({}, description="The event's data")


class AuditEntry(Event):
    source: str | None = Field(None, description="The face it came through: ui, rest, mcp, cli")
    recorded_at: str | None = Field(None, description="ISO 8601")


class EventPage(ToolResult):
    events: list[Event] = Field(description="In commit order")
    next_after: int = Field(description="Pass as `after` to read the next page")
    more: bool = Field(description="True: more follow (the page ends at limit or 16 KB)")


class AuditPage(ToolResult):
    entries: list[AuditEntry] = Field(description="In commit order")
    next_after: int = Field(description="Pass as `after` to read the next page")
    more: bool = Field(description="True: more follow (the page ends at limit or 16 KB)")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="events", rest="GET /api/v1/events")
    async def list_events(
        after: After = 0, limit: Limit = 100, operation_id: OperationFilter = None
    ) -> EventPage:
        """Page through the event log (stage started/succeeded/failed, progress, retries,
        clusters created, ...), in commit order, optionally for one operation."""
        rows = await gateway.get(
            "/api/v1/events", {"after": after, "limit": limit, "operation_id": operation_id}
        )
        read = [Event.model_validate(r) for r in rows]
        events = fitted(read)
        last = events[-1].seq if events else after
        more = len(events) < len(read) or len(read) >= limit
        types = ", ".join(e.type for e in events[-5:])
        summary = f"{count(len(events), 'event')} after seq {after}" + (
            f"; the latest: {types}" if events else ""
        )
        summary += f"; more: after={last}." if more else "."
        return EventPage(summary=summary, events=events, next_after=last, more=more)

    @server.read_tool(area="events", rest="GET /api/v1/audit")
    async def list_audit_log(
        after: After = 0,
        limit: Limit = 100,
        principal: Annotated[
            str | None, Field(max_length=200, description="Only entries of this token holder")
        ] = None,
        operation_id: OperationFilter = None,
    ) -> AuditPage:
        """Page through the audit log: every event with the principal and the face (ui, rest,
        mcp, cli) it came through. Needs an operator token."""
        rows = await gateway.get(
            "/api/v1/audit",
            {"after": after, "limit": limit, "principal": principal, "operation_id": operation_id},
        )
        read = [AuditEntry.model_validate(r) for r in rows]
        entries = fitted(read)
        last = entries[-1].seq if entries else after
        more = len(entries) < len(read) or len(read) >= limit
        return AuditPage(
            summary=f"{len(entries)} audit log entries after seq {after}"
            + (f"; more: after={last}." if more else "."),
            entries=entries,
            next_after=last,
            more=more,
        )
