"""get_tool_schema: the complete input schema of a tool, or of one field of its arguments.

`tools/list` outlines an object inside a tool's arguments by its field names and lists no
format rules (see `mcp_svc.registry.input_schema`), so that the list fits an agent's context;
this tool answers the rest, from the same pydantic models the call is checked against.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.errors import ToolFailure
from mcp_svc.registry import HyperpilotServer, schema_part
from mcp_svc.results import RESULT_BYTES, ToolResult, json_size
from mcp_svc.tools.common import named

ToolName = Annotated[
    str, Field(min_length=1, max_length=64, description="A tool, as tools/list names it")
]
FieldPath = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="One field, e.g. job.resources (omitted: every argument)",
    ),
]

# The most schema one result carries: the rest of the 16 KB is the summary, twice (text and
# structured content), and the other fields.
SCHEMA_BYTES = RESULT_BYTES - 1_000


class ToolSchema(ToolResult):
    tool: str = Field(description="The tool")
    field: str | None = Field(description="The field, or null: every argument")
    input_schema: dict[str, Any] = Field(description="JSON Schema with every rule")
    outlined: bool = Field(
        description="True: too big for one result, its arguments are outlined; ask by field"
    )


def unknown_tool(tool: str, known: list[str]) -> ToolFailure:
    hint = "call it with a name tools/list gives"
    return ToolFailure(
        {
            "code": "not_found",
            "message": f"there is no tool {tool!r}",
            "hint": hint,
            "fields": [
                {
                    "field": "tool",
                    "rule": "unknown_tool",
                    "message": f"{tool!r} is not one of the {len(known)} tools",
                    "hint": hint,
                }
            ],
        }
    )


def unknown_field(tool: str, path: str, where: str, known: list[str]) -> ToolFailure:
    hint = f"fields of {where}: {named(known, 40)}" if known else f"{where} has no fields"
    message = f"{tool} has no field {path!r}"
    return ToolFailure(
        {
            "code": "validation_error",
            "message": f"field: {message}",
            "hint": hint,
            "fields": [
                {"field": "field", "rule": "unknown_field", "message": message, "hint": hint}
            ],
        }
    )


def answer(
    tool: str, field: str | None, complete: dict[str, Any], outline: dict[str, Any]
) -> ToolSchema:
    """The schema asked for; a whole tool's that would not fit in a result is its outline."""
    if field is not None:
        try:
            schema, what = schema_part(complete, field), f"{tool}'s {field}"
        except KeyError as missing:
            path, where, known = missing.args[0]
            raise unknown_field(tool, path, where, known) from None
    elif json_size(complete) <= SCHEMA_BYTES:
        schema, what = complete, f"{tool}'s arguments"
    else:
        return ToolSchema(
            summary=(
                f"get_tool_schema: {tool}'s arguments as tools/list outlines them (the whole"
                " schema is over a result's size); ask for one field to have it with every rule."
            ),
            tool=tool,
            field=None,
            input_schema=outline,
            outlined=True,
        )
    return ToolSchema(
        summary=f"get_tool_schema: {what}, with every rule.",
        tool=tool,
        field=field,
        input_schema=schema,
        outlined=False,
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="tools", rest=None)
    async def get_tool_schema(tool: ToolName, field: FieldPath = None) -> ToolSchema:
        """A tool's complete input schema, or one field's: the nested fields tools/list only
        names, with types, defaults, enums and rules. Read it before filling in a nested
        object."""
        listed = {t.name: t for t in await server.list_tools()}
        if tool not in listed:
            raise unknown_tool(tool, sorted(listed))
        return answer(tool, field, server.full_inputs[tool], listed[tool].input_schema)
