"""Every field of every tool's complete input schema (what get_tool_schema and the reference in
docs/mcp-tools.md show) says what it is: arguments, body fields, nested objects, list items and
each branch of a union. The descriptions live in the shared contracts, so the REST API's OpenAPI
document and the CLI carry the same words.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp_svc.config import McpSettings
from mcp_svc.server import build_server

Schema = dict[str, Any]


def _ref_name(schema: Schema) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[-1]


def undescribed(
    schema: Any, defs: Schema, path: str, seen: frozenset[str] = frozenset()
) -> Iterator[str]:
    """The paths of the fields under `schema` that have no description (nor a described
    definition they refer to), each once per place it occurs."""
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        name = _ref_name(schema)
        if name not in seen:
            yield from undescribed(defs.get(name, {}), defs, path, seen | {name})
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            yield from undescribed(branch, defs, path, seen)
    if "items" in schema:
        yield from undescribed(schema["items"], defs, path + "[]", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from undescribed(schema["additionalProperties"], defs, path + "{}", seen)
    for name, prop in (schema.get("properties") or {}).items():
        field = f"{path}.{name}" if path else name
        text = prop.get("description") if isinstance(prop, dict) else None
        if not text and isinstance(prop, dict) and "$ref" in prop:
            text = defs.get(_ref_name(prop), {}).get("description")
        if not (isinstance(text, str) and text.strip()):
            yield field
        yield from undescribed(prop, defs, field, seen)


def test_the_walk_finds_a_field_without_a_description() -> None:
    """The check itself can fail: a nested field, a list item's field, a union branch's field
    and a referenced definition's field are each found."""
    schema: Schema = {
        "$defs": {"Inner": {"properties": {"bare": {"type": "string"}}}},
        "properties": {
            "top": {"type": "string"},
            "obj": {
                "description": "an object",
                "properties": {"deep": {"type": "integer"}},
            },
            "many": {
                "description": "a list",
                "items": {"properties": {"item_field": {"type": "string"}}},
            },
            "either": {
                "description": "a union",
                "anyOf": [{"properties": {"branch": {"type": "string"}}}, {"type": "null"}],
            },
            "ref": {"$ref": "#/$defs/Inner", "description": "refers"},
            "ok": {"type": "string", "description": "said"},
            "blank": {"type": "string", "description": "  "},
        },
    }
    found = list(undescribed(schema, schema["$defs"], "t"))
    assert found == [
        "t.top",
        "t.obj.deep",
        "t.many[].item_field",
        "t.either.branch",
        "t.ref.bare",
        "t.blank",
    ]


def test_every_field_of_every_tool_input_is_described() -> None:
    server = build_server(McpSettings(allow_write=True, gateway_token=None))
    assert len(server.full_inputs) >= 80, sorted(server.full_inputs)
    missing = [
        field
        for tool, schema in sorted(server.full_inputs.items())
        for field in undescribed(schema, schema.get("$defs", {}), tool)
    ]
    assert missing == [], (
        f"{len(missing)} input field(s) have no description; add a short description= to the"
        " pydantic Field in shared/contracts (or to the tool's argument): " + ", ".join(missing)
    )
