"""The faces agree with the REST API they wrap: every MCP tool's parameters and every CLI option
that sets a body field have the names, types, enums and bounds of the gateway's OpenAPI document
(its request bodies and query parameters). Descriptions and defaults may be worded for the face.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from gateway.app import create_app
from hyperpilot.cli import app as cli_app
from hyperpilot.commands.common import ContractOption
from mcp_svc.config import McpSettings
from mcp_svc.registry import HyperpilotServer
from mcp_svc.server import build_server
from shared.config import Settings

# What the schemas say about a value; the rest (descriptions, defaults, titles) is wording.
CONSTRAINTS = (
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
)
# Arguments only a tool has: how it calls (a preview, its request id), not what it sends.
TOOL_ONLY = {"dry_run", "request_id"}
# Arguments that choose which of a tool's routes it calls (the last path segment): one tool
# for POST .../spaces/{space}/start and .../stop.
ROUTE_CHOICE = {("set_space_status", "action")}
# Arguments of one tool that REST has not: the tool pages or cuts a result it reads whole, to
# keep each result under 16 KB.
TOOL_PAGING = {
    ("list_instance_types", "limit"),
    ("list_instance_types", "page_token"),
    ("list_pods", "limit"),
    ("list_pods", "page_token"),
    ("list_nodes", "limit"),
    ("list_nodes", "page_token"),
    ("get_training_job_logs", "tail_lines"),
    ("get_operation", "include_stage_outputs"),
    # Pages of REST lists read whole (zones, training plans, account clusters), and of REST's
    # cursor pages, cut shorter to stay under 16 KB (a smaller limit; the token a tool gives is
    # REST's, its bounds the tool's), and the byte bound of a log.
    *(
        (tool, argument)
        for tool in (
            "list_clusters",
            "list_dependencies",
            "list_endpoints",
            "list_availability_zones",
            "list_training_plans",
            "list_account_clusters",
            "list_instance_groups",
            "list_storage_buckets",
            "list_training_jobs",
            "list_teams",
            "list_spaces",
        )
        for argument in ("limit", "page_token")
    ),
    ("list_operations", "page_token"),
    ("get_pod_logs", "max_bytes"),
    ("get_training_job_logs", "max_bytes"),
}
# A tool's name for a REST query parameter that is a Python keyword or builtin (`from`, `type`),
# or that says its unit; the value is the same.
REST_NAME = {
    ("list_kubernetes_events", "object_name"): "object",
    ("list_kubernetes_events", "event_type"): "type",
    ("get_pod_logs", "tail_lines"): "tail",
    ("get_training_job_logs", "from_line"): "from",
    ("get_operation", "wait_seconds"): "wait",
    ("get_operation", "include_events"): "events",
    ("invoke_endpoint", "request"): "body",
}
# Bounds a tool keeps tighter than REST, each for a reason.
TIGHTER = {
    # A page of events stays under 16 KB of result.
    "list_kubernetes_events.limit.maximum",
    # A wait stays under the 60 s a client commonly allows a request (the TypeScript SDK's).
    "get_operation.wait_seconds.maximum",
    # The region pattern of the REST query parameters; the REST bodies check it by validator.
    "create_cluster.region.pattern",
    "import_cluster.region.pattern",
    "create_storage_bucket.region.pattern",
}
# How the two write the same rule: an int64 bound is the integer type itself; a UUID is
# `format: uuid` in OpenAPI and a pattern in a tool; `^(a|b)$` is the enum [a, b].
INT64 = 2**63 - 1
UUID_PATTERNS = {
    r"^[0-9a-fA-F-]{36}$",
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
}
ALTERNATIVES = re.compile(r"^\^\(([A-Za-z0-9_|-]+)\)\$$")


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    spec: dict[str, Any] = create_app(Settings()).openapi()
    return spec


@pytest.fixture(scope="module")
def server() -> HyperpilotServer:
    return build_server(McpSettings(allow_write=False, gateway_token=None))


def canonical(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A schema as what it admits: `$ref`s resolved, `X | None` as X nullable, the JSON types as
    a sorted list, only the keywords that constrain a value."""
    if not isinstance(schema, dict) or depth > 12:
        return schema
    while "$ref" in schema:
        target = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    types: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        types.add(kind)
    elif isinstance(kind, list):
        types.update(kind)
    arms = schema.get("anyOf") or schema.get("oneOf")
    if arms:
        real = [a for a in arms if a != {"type": "null"}]
        if len(real) < len(arms):
            types.add("null")
        if len(real) == 1:
            inner = canonical(real[0], defs, depth + 1)
            types.update(inner.pop("types", []))
            out.update(inner)
        else:
            out["arms"] = sorted(
                (canonical(a, defs, depth + 1) for a in real), key=lambda a: repr(a)
            )
    if types:
        out["types"] = sorted(types)
    if "enum" in schema:
        out["enum"] = sorted(map(str, schema["enum"]))
    for key in CONSTRAINTS:
        if key in schema and not (key == "maximum" and schema[key] == INT64):
            out[key] = schema[key]
    pattern = out.get("pattern")
    if schema.get("format") == "uuid" or pattern in UUID_PATTERNS:
        out["pattern"] = "uuid"
    elif isinstance(pattern, str) and (words := ALTERNATIVES.match(pattern)):
        out["enum"] = sorted(words.group(1).split("|"))
        del out["pattern"]
    if "properties" in schema:
        out["properties"] = {
            name: canonical(prop, defs, depth + 1) for name, prop in schema["properties"].items()
        }
        out["required"] = sorted(schema.get("required", []))
    if isinstance(schema.get("items"), dict):
        out["items"] = canonical(schema["items"], defs, depth + 1)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out["values"] = canonical(extra, defs, depth + 1)
    return out


def differences(tool: Any, rest: Any, where: str) -> list[str]:
    """Where two canonical schemas differ, as `path: tool value != REST value` lines."""
    if isinstance(tool, dict) and isinstance(rest, dict):
        found = []
        for key in sorted(set(tool) | set(rest)):
            found += differences(tool.get(key), rest.get(key), f"{where}.{key}")
        return found
    return [] if tool == rest else [f"{where}: {tool!r} != {rest!r}"]


def operation_of(openapi: dict[str, Any], rest: str) -> dict[str, Any]:
    method, path = rest.split("?", 1)[0].split(" ", 1)
    shape = re.sub(r"\{[^}]*\}", "{}", path)
    for candidate, operations in openapi["paths"].items():
        if re.sub(r"\{[^}]*\}", "{}", candidate) == shape and method.lower() in operations:
            found: dict[str, Any] = operations[method.lower()]
            return found
    raise AssertionError(f"no route {rest} in the OpenAPI document")


def body_schema(openapi: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = (operation.get("requestBody") or {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return canonical(schema, openapi["components"]["schemas"]) if schema else None


def test_every_tool_parameter_is_its_rest_field(
    openapi: dict[str, Any], server: HyperpilotServer
) -> None:
    """A tool that takes the body whole (`body_param`) takes the REST body's schema; any other
    argument past the route's path placeholders is a query parameter or a body field of the
    same name, with the same type, enum and bounds; a tool-only argument is listed above."""
    schemas = openapi["components"]["schemas"]
    problems: list[str] = []
    compared = 0
    for info in server.catalog.values():
        if info.rest is None:  # answered by the server itself (get_tool_schema)
            continue
        operation = operation_of(openapi, info.rest)
        # The complete schema (the listed one leaves out what its markers say, see
        # mcp_svc.registry.reference and listed_as); the arguments are validated by it.
        listed = server.full_inputs[info.name]
        defs = listed.get("$defs", {})
        params = {name: canonical(p, defs) for name, p in listed["properties"].items()}
        holes = len(re.findall(r"\{[^}]*\}", info.rest.split("?", 1)[0]))
        query = {
            p["name"]: canonical(p["schema"], schemas)
            for p in operation.get("parameters", [])
            if p["in"] == "query"
        }
        body = body_schema(openapi, operation)
        fields = (body or {}).get("properties", {})
        for name in list(params)[holes:]:
            rest_name = REST_NAME.get((info.name, name), name)
            if (info.name, name) in TOOL_PAGING | ROUTE_CHOICE or (
                name in TOOL_ONLY and name in query
            ):
                continue
            if rest_name == "body" or name == info.body_param:
                assert body is not None, f"{info.name}: {info.rest} takes no body"
                # The body's fields the tool takes as arguments of their own (the region).
                siblings = set(params) & set(fields) - {name}
                rest_body = body
                if siblings:
                    rest_body = {
                        **body,
                        "properties": {k: v for k, v in fields.items() if k not in siblings},
                        "required": [r for r in body.get("required", []) if r not in siblings],
                    }
                problems += differences(params[name], rest_body, f"{info.name}.{name}")
            elif rest_name in query:
                found = differences(params[name], query[rest_name], f"{info.name}.{name}")
                problems += [p for p in found if p.split(":", 1)[0] not in TIGHTER]
            elif name in fields:
                rest = {**fields[name]}
                if name not in (body or {}).get("required", []) and "null" not in rest.get(
                    "types", ["null"]
                ):
                    # An optional body field a tool leaves out by passing null.
                    rest["types"] = sorted({*rest.get("types", []), "null"})
                mine = params[name]
                found = differences(
                    {**mine, "types": sorted({*mine.get("types", []), "null"})},
                    {**rest, "types": sorted({*rest.get("types", []), "null"})},
                    f"{info.name}.{name}",
                )
                problems += [p for p in found if p.split(":", 1)[0] not in TIGHTER]
            elif name not in TOOL_ONLY:
                problems.append(f"{info.name}.{name}: neither a query parameter nor a body field")
                continue
            compared += 1
        if body is not None and info.body_param is None and "body" not in REST_NAME.values():
            missing = set(fields) - set(params)
            if missing:
                problems.append(f"{info.name}: REST body fields it cannot send: {sorted(missing)}")
    assert problems == [], "\n".join(problems)
    assert compared > 100


def contract_options() -> list[tuple[str, str, ContractOption, Any]]:
    """Every CLI option declared from a contract field: command, parameter, option, annotation."""
    found = []
    for group in cli_app.registered_groups:
        area = group.typer_instance
        assert area is not None
        for command in area.registered_commands:
            callback = command.callback
            assert callback is not None
            hints = get_type_hints(callback, include_extras=True)
            name = f"{group.name} {command.name or callback.__name__.strip('_')}"
            for param in inspect.signature(callback).parameters:
                hint = hints.get(param)
                for meta in getattr(hint, "__metadata__", ()):
                    if isinstance(meta, ContractOption):
                        found.append((name, param, meta, get_args(hint)[0]))
    return found


def cli_schema(option: ContractOption, annotation: Any) -> dict[str, Any]:
    """What an option admits, in the canonical schema's terms (the value, not its None)."""
    kinds = [a for a in (get_args(annotation) or (annotation,)) if a is not type(None)]
    (kind,) = kinds
    if get_origin(kind) is list:
        (kind,) = get_args(kind)
    out: dict[str, Any] = {}
    if isinstance(kind, type) and issubclass(kind, str) and kind is not str:
        out["enum"] = sorted(str(m.value) for m in kind)  # type: ignore[attr-defined]
    if option.min is not None:
        out["minimum"] = option.min
    if option.max is not None:
        out["maximum"] = option.max
    return out


def test_every_cli_option_from_a_contract_is_its_rest_field(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    options = contract_options()
    assert len(options) >= 15
    problems = []
    for command, param, option, annotation in options:
        model = option.model.__name__
        assert model in schemas, f"{command} --{param}: {model} is no REST body"
        field = canonical(schemas[model], schemas)["properties"].get(option.field)
        assert field is not None, f"{command} --{param}: {model} has no field {option.field}"
        values = field.get("items", field)
        if "arms" in values:
            continue
        admitted = {k: values[k] for k in ("enum", "minimum", "maximum") if k in values}
        numbers = sorted(int(v) for v in admitted.get("enum", []) if str(v).isdigit())
        if numbers and len(numbers) == len(admitted["enum"]) == numbers[-1] - numbers[0] + 1:
            # An integer option admits a range: [1, 2] is 1 to 2.
            admitted = {"minimum": numbers[0], "maximum": numbers[-1]}
        problems += differences(cli_schema(option, annotation), admitted, f"{command} {param}")
        assert option.help and option.help.startswith(
            option.model.model_fields[option.field].description or "?"
        ), f"{command} --{param}: its help is not the contract's description"
    assert problems == [], "\n".join(problems)
