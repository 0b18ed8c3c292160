"""Typed tool results: every result is a pydantic model whose `summary` is a short human line.

Models mirror the REST answers and allow fields the gateway adds later, so a newer gateway never
breaks an older MCP service.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from mcp_svc.client import Gateway
from shared import pages
from shared.boundary import api_path

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
# The marker of a parameter that names an existing object (see mcp_svc.registry.reference).
REFERENCE = "x-hyperpilot-reference"
TERMINAL = ("succeeded", "failed", "cancelled", "noop")
STATUS_TOOL: Literal["get_operation"] = "get_operation"
# The longest one get_operation call waits: under the 60 s a client commonly allows a request
# (the TypeScript SDK's default), with room for the answer.
MAX_WAIT_SECONDS = 45


class ToolResult(BaseModel):
    summary: str = Field(description="For a human")


class Passthrough(BaseModel):
    """A REST object: the fields listed are always there; newer ones pass through."""

    model_config = ConfigDict(extra="allow")


class OperationStarted(ToolResult):
    """A mutation the gateway accepted as an operation; the status tool decides completion.

    A dry run (`dry_run: true`) starts nothing: `operation_id` is null and `plan` holds the calls
    and the diff the change would make, computed from actual state.

    The result of some 30 tools, so its schema is listed that many times: the descriptions are
    a few words each (docs/mcp-tools.md and the tool descriptions say the rest).
    """

    operation_id: str | None = Field(description="To poll; null for a dry run")
    status_tool: Literal["get_operation"] = Field(STATUS_TOOL, description="Decides completion")
    status_url: str | None = Field(None, description="REST resource")
    created: bool = Field(False, description="False: an identical call's operation")
    idempotency_key: str | None = Field(None, description="Derived from the call")
    next_step: str = Field(description="What to call next")
    dry_run: bool = Field(False, description="Only planned")
    noop: bool | None = Field(None, description="Changes nothing")
    diff: Any = Field(None, description="Requested vs actual")
    notes: list[str] | None = Field(None, description="From the gateway")
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


# ---- pages of a long list -------------------------------------------------------------------

# A result stays under 16 KB: a page holds at most PAGE_BYTES of items (as JSON), leaving room
# for the summary and the counts. A REST list with no paging of its own is paged here, by a
# cursor that is the sort key of the last item sent (an insert or a delete between two pages
# shifts nothing).
RESULT_BYTES = 16_000
PAGE_BYTES = 12_000
PageToken = Annotated[
    str | None,
    Field(
        max_length=600,
        json_schema_extra={REFERENCE: True},
        description="A result's next_page_token",
    ),
]


def json_size(item: Any) -> int:
    """The bytes of an item as a result carries it."""
    if isinstance(item, BaseModel):
        return len(item.model_dump_json().encode())
    return len(json.dumps(item, default=str, separators=(",", ":")).encode())


def fitted(items: list[T], budget: int = PAGE_BYTES) -> list[T]:
    """The first items whose JSON fits in `budget` bytes (at least one)."""
    shown: list[T] = []
    used = 0
    for item in items:
        size = json_size(item)
        if shown and used + size > budget:
            break
        shown.append(item)
        used += size
    return shown


def page_of(
    items: list[T], key: Callable[[T], str], limit: int, token: str | None
) -> tuple[list[T], str | None]:
    """The items sorted by `key` that come after `token`, at most `limit` and at most
    PAGE_BYTES of them, and the token of the next page (None on the last)."""
    ordered = sorted(items, key=key)
    rest = [item for item in ordered if token is None or key(item) > token]
    shown = fitted(rest[:limit])
    return shown, key(shown[-1]) if len(rest) > len(shown) else None


async def rest_page(
    gateway: Gateway,
    path: str,
    params: dict[str, Any],
    model: type[M],
    cursor: tuple[str, Callable[[dict[str, Any]], Sequence[str]]],
    limit: int,
    token: str | None,
    *,
    items: str | None = None,
) -> tuple[list[M], str | None, int]:
    """A page of a REST list the gateway pages by cursor (shared/pages.py), passed through:
    REST's token is the tool's. When PAGE_BYTES cut the page short, the next token is the one
    REST gives after the last item shown (`cursor`: the list and the sort key of a row). `items`:
    the field of the body holding the list, when the body is an object."""
    shown, next_token, total, _ = await rest_page_of(
        gateway, path, params, model, cursor, limit, token, items=items
    )
    return shown, next_token, total


async def rest_page_of(
    gateway: Gateway,
    path: str,
    params: dict[str, Any],
    model: type[M],
    cursor: tuple[str, Callable[[dict[str, Any]], Sequence[str]]],
    limit: int,
    token: str | None,
    *,
    items: str | None = None,
) -> tuple[list[M], str | None, int, Any]:
    """`rest_page`, and the body REST sent (an object whose `items` field is the page)."""
    rows, next_token, total, body = await gateway.get_page(
        path, {**params, "limit": limit, "page_token": token}, items=items
    )
    found = [model.model_validate(r) for r in rows]
    shown = fitted(found)
    if len(shown) < len(found):
        kind, key = cursor
        next_token = pages.encode(kind, key(rows[len(shown) - 1]))
    return shown, next_token, total, body


PageLimit = Annotated[int, Field(ge=1, le=100, description="Page size")]
PAGE = 25


class Paged(ToolResult):
    """A page of a list: how many there are in all and the token of the next page."""

    total: int = Field(description="Matched in all")
    next_page_token: str | None = Field(description="For page_token; null: the last page")


def page_note(shown: int, total: int, token: str | None, next_token: str | None) -> str:
    """How a page sits in the whole list, for a summary."""
    if next_token is None and token is None:
        return ""
    more = f"; page_token='{next_token}' for the next" if next_token else "; the last page"
    return f" (this page: {shown} of {total}{more})"


def tail_fitted(lines: list[str], max_bytes: int) -> tuple[list[str], bool]:
    """The last lines whose text fits in `max_bytes` (a longer last line keeps its end), and
    whether anything was left out."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        size = len(json.dumps(line).encode()) + 1
        if used + size > max_bytes:
            if not kept:  # one line longer than the budget: its end, where errors are
                return [line[-max(1, max_bytes // 2) :]], True
            break
        kept.append(line)
        used += size
    kept.reverse()
    return kept, len(kept) < len(lines)


LOG_BYTES = 12_000
MaxBytes = Annotated[
    int,
    Field(
        ge=1_000,
        le=LOG_BYTES,
        description="At most this many bytes of lines, the newest kept (truncated says so)",
    ),
]
