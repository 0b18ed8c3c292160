"""Tool errors in the REST error shape, so the agent reads what the browser and the CLI read.

The gateway answers every failure as
`{"error": {"code", "message", "hint", "fields": [{"field", "rule", "message", "hint"}]}}`.
A tool failure keeps that body, reworded in the tool's terms (its argument names, tool names for
routes; see `mcp_svc.terms`), and renders it as text: the code and message first, then the hint
and each field with its rule and hint. The text is what a client shows: a result with `isError`
carries no structured content (see `mcp_svc.registry.failure`).
Arguments rejected before any request is sent (the tool parameters are the same pydantic models
as the REST bodies) are turned into the same shape with the same wording as the gateway's.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from shared.pattern_words import pattern_hint, schema_message
from shared.validation import bounds_hint, items_hint, length_hint

_TYPE_HINTS = {
    "missing": "add this field",
    "string_type": "send a JSON string",
    "int_type": "send a JSON integer",
    "int_parsing": "send a whole number",
    "float_parsing": "send a number",
    "bool_type": "send true or false",
    "bool_parsing": "send true or false",
    "dict_type": "send a JSON object",
    "list_type": "send a JSON array",
    "model_attributes_type": "send a JSON object",
    "uuid_parsing": "send a UUID such as 123e4567-e89b-12d3-a456-426614174000",
}


class ToolFailure(ToolError):
    """A failure the agent can act on: the REST error body, and the HTTP status if any."""

    def __init__(self, error: dict[str, Any], status: int | None = None) -> None:
        self.error = error
        self.status = status
        super().__init__(render(error, status))

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.error}
        if self.status is not None:
            body["status"] = self.status
        return body

    def reworded(self, error: dict[str, Any]) -> ToolFailure:
        """The same failure (and status) with the error body given."""
        return ToolFailure(error, self.status)


class UnknownArguments(ToolFailure):
    """Arguments the tool does not have: refused before anything is sent, never ignored (a
    misspelled `dry_run` or `region` must not turn into a call without it)."""

    def __init__(self, tool: str, unknown: list[str], known: tuple[str, ...]) -> None:
        hint = f"{tool} takes: {', '.join(known)}" if known else f"{tool} takes no arguments"
        fields = [
            {
                "field": name,
                "rule": "extra_forbidden",
                "message": f"{tool} has no argument {name!r}",
                "hint": hint,
            }
            for name in unknown
        ]
        super().__init__(
            {
                "code": "validation_error",
                "message": "; ".join(f"{f['field']}: {f['message']}" for f in fields)
                + ": nothing was sent",
                "hint": hint,
                "fields": fields,
            }
        )


class GatewayError(ToolFailure):
    """The gateway answered with an error status."""


class WritesDisabled(ToolFailure):
    """A mutating tool called while the server runs read-only: nothing was sent."""

    def __init__(self, tool: str) -> None:
        super().__init__(
            {
                "code": "writes_disabled",
                "message": (
                    f"{tool} changes state, and this MCP server runs read-only: nothing was sent"
                ),
                "hint": (
                    "restart the server with --allow-write (or MCP_ALLOW_WRITE=true) to allow"
                    " mutating tools; read-only tools keep working"
                ),
            }
        )


def render(error: dict[str, Any], status: int | None = None) -> str:
    code = error.get("code", "error")
    head = f"{code} (HTTP {status})" if status is not None else code
    lines = [f"{head}: {error.get('message', '')}"]
    if error.get("hint"):
        lines.append(f"hint: {error['hint']}")
    for field in error.get("fields") or []:
        line = f"- {field.get('field')} [{field.get('rule')}]: {field.get('message')}"
        if field.get("hint"):
            line += f" (hint: {field['hint']})"
        lines.append(line)
    return "\n".join(lines)


def from_response(status: int, payload: Any, fallback: str) -> GatewayError:
    """The gateway's error body as a tool failure (any other body becomes its message)."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return GatewayError(payload["error"], status)
    return GatewayError({"code": "http_error", "message": fallback[:500]}, status)


def _hint(err: dict[str, Any]) -> str:
    rule = err.get("type", "")
    ctx = err.get("ctx") or {}
    if rule == "extra_forbidden":
        return "remove this field"
    if rule == "string_pattern_mismatch":
        return pattern_hint(ctx.get("pattern"))
    if rule in ("string_too_short", "string_too_long"):
        return length_hint(ctx)
    if rule in ("too_short", "too_long"):
        return items_hint(ctx)
    if rule in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return bounds_hint(ctx)
    if rule in ("literal_error", "enum"):
        return f"use one of {ctx.get('expected')}"
    if rule == "value_error":
        hint = getattr(ctx.get("error"), "hint", None)
        return str(hint) if hint else "correct the value as the message says"
    return _TYPE_HINTS.get(rule, "correct this value (see the tool's input schema)")


def from_validation(exc: ValidationError, body_param: str | None = None) -> ToolFailure:
    """Arguments that failed the tool's schema, worded as the gateway words a 422. Errors inside
    `body_param` (a parameter that is the whole REST body) lose that prefix, as in REST."""

    def location(loc: tuple[Any, ...]) -> str:
        parts = [str(part) for part in loc]
        if body_param and parts[:1] == [body_param]:
            parts = parts[1:] or ["body"]
        return ".".join(parts) or "arguments"

    fields = [
        {
            "field": location(tuple(err.get("loc", ()))),
            "rule": err.get("type", "invalid"),
            "message": schema_message(dict(err)),
            "hint": _hint(dict(err)),
        }
        for err in exc.errors()
    ]
    message = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    return ToolFailure({"code": "validation_error", "message": message, "fields": fields})
