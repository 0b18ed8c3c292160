"""Typed tool results: every result is a pydantic model whose `summary` is a short human line.

Models mirror the REST answers and allow fields the gateway adds later, so a newer gateway never
breaks an older MCP service.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TERMINAL = ("succeeded", "failed", "cancelled", "noop")
STATUS_TOOL: Literal["get_operation"] = "get_operation"
COMPLETION = (
    "Completion: poll get_operation(operation_id, wait_seconds=60) until status is terminal."
)


class ToolResult(BaseModel):
    summary: str = Field(description="One or two sentences for a human")


class Passthrough(BaseModel):
    """A REST object: the fields listed are always there; newer ones pass through."""

    model_config = ConfigDict(extra="allow")


class OperationStarted(ToolResult):
    """A mutation the gateway accepted as an operation; the status tool decides completion."""

    operation_id: str = Field(description="The operation to poll")
    status_tool: Literal["get_operation"] = Field(
        STATUS_TOOL, description="The tool that decides completion"
    )
    status_url: str = Field(description="The REST resource of the operation")
    created: bool = Field(
        description="False when an identical earlier call already created this operation"
    )
    idempotency_key: str = Field(description="The key derived from this call")
    next_step: str = Field(description="What to call next")


def started(tool: str, accepted: dict[str, Any], key: str, what: str) -> OperationStarted:
    operation_id = str(accepted["operation_id"])
    created = bool(accepted.get("created", True))
    again = (
        ""
        if created
        else " (the same operation as an identical earlier call; nothing new was started)"
    )
    next_step = (
        f"get_operation(operation_id='{operation_id}', wait_seconds=60) until status is terminal"
    )
    return OperationStarted(
        summary=f"{tool}: {what} accepted as operation {operation_id}{again}. Poll {next_step}.",
        operation_id=operation_id,
        status_url=str(accepted.get("status_url", f"/api/v1/operations/{operation_id}")),
        created=created,
        idempotency_key=key,
        next_step=next_step,
    )
