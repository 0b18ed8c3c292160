"""Typed tool results: every result is a pydantic model whose `summary` is a short human line.

Models mirror the REST answers and allow fields the gateway adds later, so a newer gateway never
breaks an older MCP service.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.boundary import api_path

TERMINAL = ("succeeded", "failed", "cancelled", "noop")
STATUS_TOOL: Literal["get_operation"] = "get_operation"
# The longest one get_operation call waits: under the 60 s a client commonly allows a request
# (the TypeScript SDK's default), with room for the answer.
MAX_WAIT_SECONDS = 45
COMPLETION = (
    f"Completion: poll get_operation(operation_id, wait_seconds={MAX_WAIT_SECONDS}) until status"
    " is terminal."
)


class ToolResult(BaseModel):
    summary: str = Field(description="One or two sentences for a human")


class Passthrough(BaseModel):
    """A REST object: the fields listed are always there; newer ones pass through."""

    model_config = ConfigDict(extra="allow")


class OperationStarted(ToolResult):
    """A mutation the gateway accepted as an operation; the status tool decides completion.

    A dry run (`dry_run: true`) starts nothing: `operation_id` is null and `plan` holds the calls
    and the diff the change would make, computed from actual state.
    """

    operation_id: str | None = Field(description="The operation to poll (null for a dry run)")
    status_tool: Literal["get_operation"] = Field(
        STATUS_TOOL, description="The tool that decides completion"
    )
    status_url: str | None = Field(None, description="The REST resource of the operation")
    created: bool = Field(
        False, description="False when an identical earlier call already created this operation"
    )
    idempotency_key: str | None = Field(None, description="The key derived from this call")
    next_step: str = Field(description="What to call next")
    dry_run: bool = Field(False, description="True when only the plan was computed")
    noop: bool | None = Field(
        None, description="True when actual state already matches: the operation changes nothing"
    )
    diff: Any = Field(None, description="Requested against actual state, per field")
    notes: list[str] | None = None
    plan: dict[str, Any] | None = Field(None, description="A dry run's plan")


def started(tool: str, accepted: dict[str, Any], key: str, what: str) -> OperationStarted:
    operation_id = str(accepted["operation_id"])
    created = bool(accepted.get("created", True))
    again = (
        ""
        if created
        else " (the same operation as an identical earlier call; nothing new was started)"
    )
    noop = accepted.get("noop")
    nothing = " Actual state already matches: it changes nothing." if noop else ""
    next_step = (
        f"get_operation(operation_id='{operation_id}', wait_seconds={MAX_WAIT_SECONDS})"
        " until status is terminal"
    )
    notes = accepted.get("notes")
    return OperationStarted(
        summary=f"{tool}: {what} accepted as operation {operation_id}{again}.{nothing}"
        f" Poll {next_step}.",
        operation_id=operation_id,
        status_url=str(accepted.get("status_url", api_path("operations", operation_id))),
        created=created,
        idempotency_key=key,
        next_step=next_step,
        noop=noop if isinstance(noop, bool) else None,
        diff=accepted.get("diff"),
        notes=[str(n) for n in notes] if isinstance(notes, list) else None,
    )


def planned(tool: str, answer: dict[str, Any], what: str) -> OperationStarted:
    plan = answer.get("plan") if isinstance(answer.get("plan"), dict) else answer
    noop = plan.get("noop") if isinstance(plan, dict) else None
    verdict = "nothing to change" if noop else "it would change what the plan lists"
    return OperationStarted(
        summary=f"{tool} (dry run): {what}: {verdict}. Nothing was changed.",
        operation_id=None,
        next_step=f"call {tool} again without dry_run to make the change",
        dry_run=True,
        noop=noop if isinstance(noop, bool) else None,
        diff=plan.get("diff") if isinstance(plan, dict) else None,
        plan=plan if isinstance(plan, dict) else None,
    )
