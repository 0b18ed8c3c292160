"""`python -m mcp_svc.reference > docs/mcp-tools.md`: the tool reference, generated from the server.

Every tool with its parameters (type, required or default, description), whether it is read-only
or mutating, the REST route it wraps and the tool that decides its completion.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp_types import ListToolsResult

from mcp_svc.config import McpSettings
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import STATUS_TOOL
from mcp_svc.server import build_server


def _type(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        target = defs.get(name, {})
        if "enum" in target:
            return " \\| ".join(json.dumps(v) for v in target["enum"])
        return name
    if "anyOf" in schema:
        arms = [_type(arm, defs) for arm in schema["anyOf"]]
        return " \\| ".join(arm for arm in arms if arm != "null") + (
            " \\| null" if "null" in arms else ""
        )
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):  # ["string", "null"]: an optional value or null
        arms = [_type({**schema, "type": k}, defs) for k in kind if k != "null"]
        return " \\| ".join(arms) + (" \\| null" if "null" in kind else "")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}), defs)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'], defs)}"
    return str(kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _parameters(schema: dict[str, Any]) -> list[str]:
    return _fields(schema, schema.get("$defs", {}), "parameter")


def _fields(schema: dict[str, Any], defs: dict[str, Any], noun: str) -> list[str]:
    if not schema.get("properties"):
        return [f"No {noun}s."]
    lines = [f"| {noun} | type | required / default | description |", "|---|---|---|---|"]
    return lines + _rows(schema, defs, "")


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = str(schema.get("$ref", "")).rsplit("/", 1)[-1]
    return {**defs.get(ref, {}), **schema} if ref else schema


def _rows(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> list[str]:
    """One row per field; the fields of a nested object (or of an array's objects) follow it,
    named by their path (`group.taints[].key`), so a body parameter's fields are listed too."""
    required = set(schema.get("required", []))
    lines = []
    for name, prop in schema.get("properties", {}).items():
        if name in required:
            need = "required"
        elif "default" in prop:
            need = f"default `{json.dumps(prop['default'])}`"
        else:
            need = "optional (empty)"
        description = prop.get("description") or _resolved(prop, defs).get("description", "")
        path = f"{prefix}{name}"
        lines.append(f"| `{path}` | {_type(prop, defs)} | {need} | {_cell(description)} |")
        inner = _resolved(prop, defs)
        if "properties" not in inner and isinstance(inner.get("items"), dict):
            inner, path = _resolved(inner["items"], defs), f"{path}[]"
        if "properties" in inner and "$ref" not in prop and path.count(".") < 3:
            lines += _rows(inner, defs, f"{path}.")
    return lines


async def render(server: HyperpilotServer) -> str:
    tools = {t.name: t for t in await server.list_tools()}
    infos = list(server.catalog.values())
    reads = sum(1 for i in infos if not i.mutating)
    out = [
        "# MCP tool reference",
        "",
        "Generated from the server by `python -m mcp_svc.reference > docs/mcp-tools.md`; a test",
        "checks this file matches. Do not edit by hand.",
        "",
        f"{len(infos)} tools: {reads} read-only, {len(infos) - reads} mutating. Every tool calls the",
        "gateway's REST API with the MCP service's token (header `X-Hyperpilot-Source: mcp`).",
        "",
        "- **Writes off by default.** Mutating tools are always listed, so an agent sees what",
        "  exists, but unless the server runs with `--allow-write` (or `MCP_ALLOW_WRITE=true`)",
        "  they refuse with the error `writes_disabled` and send nothing. Read-only tools always",
        "  work. The one exception: a tool with a `dry_run` parameter called with",
        "  `dry_run=true` only computes the plan (REST `?dry_run=true` stores and changes",
        "  nothing), so it works on a read-only server too.",
        "- **Completion.** A mutating tool's result carries `operation_id` and",
        '  `status_tool: "get_operation"`; `get_operation(operation_id, wait_seconds<=45)`',
        "  long-polls until the operation is terminal (`succeeded`, `failed`, `cancelled`, `noop`),",
        "  sending progress notifications (the running stage) when the call has a progressToken.",
        "  `set_active_cluster` is immediate and names `get_active_cluster`.",
        "- **Safe to retry.** A mutating call sends `Idempotency-Key: mcp:<tool>:<sha256>:target`",
        "  of the tool name and its canonical arguments (defaults filled in): repeating the call",
        "  returns the same operation (`created: false`) while nothing else changed its target;",
        "  after another change there, the same call is a new request (3 -> 2 -> 3 is three",
        "  operations). With `request_id` the key names that request for good, running or",
        "  finished (docs/operations.md, Retries and idempotency).",
        "- **Errors** are results with `isError: true` and no structured content (it would not",
        "  match the tool's output schema). The text carries the REST error: code and message,",
        "  the hint, and each field with its rule and hint, in the tool's terms: a field is named",
        "  by the tool's argument (`selector`, not `query.selector`), a route a tool wraps by the",
        "  tool (`list_clusters`, not `GET /api/v1/clusters`). The body",
        '  `{"error": {code, message, hint, fields: [{field, rule, message, hint}]}}` is also in',
        '  the result\'s `_meta["hyperpilot/error"]`. Arguments rejected by the tool schema (the',
        "  same pydantic models as the REST bodies) get the same wording.",
        "  An argument the tool does not have is refused by name (rule `extra_forbidden`, the",
        "  hint lists the tool's arguments) and nothing is sent: it is never silently dropped.",
        "- **Results** are typed (each tool's pydantic model) with a `summary`: the text content",
        "  of a result is that one paragraph, and the data is in `structuredContent` only (not",
        "  repeated as JSON text; `summary` is in every result, so no output schema lists it).",
        "  No result is over 16 KB without a way to the rest: the list tools of what grows",
        "  (clusters, nodes, pods, jobs, endpoints, operations, teams, spaces, buckets, ...) take",
        "  `limit` and `page_token` and answer `total` and `next_page_token` (null on the last",
        "  page), a page holding at most 12 KB of items; where REST pages a list by cursor the",
        "  token is REST's, so a page stays where it was when rows are added; the lists a",
        "  cluster's configuration bounds (storage claims, space templates) answer whole, each",
        "  measured under 16 KB by the MCP tests; the event logs (`list_events`, `list_audit_log`,",
        "  `get_training_job_events`) page by `after`, answering `next_after` and `more`;",
        "  `list_kubernetes_events` keeps the newest events that fit and counts the older ones it",
        "  left out (`older_left_out`); the log tools keep the newest lines within `max_bytes` and",
        "  say `truncated`.",
        "  A tool whose completion get_operation decides has the same result as all of them:",
        "  `summary`, `operation_id` (null for a dry run), `status_tool`,",
        "  `next_step`, `created`, `idempotency_key`, `status_url` and, for a dry run, `dry_run`,",
        "  `noop`, `diff`, `notes` and `plan`. A REST object nested in a result is an object: its",
        "  fields are the REST API's.",
        "- **Schemas** are lean: no `title`s; an argument whose default is null is listed as its",
        "  type (leaving it out is the null), a boolean's `false` default is unsaid; input",
        "  schemas have `additionalProperties: false`. The tables below are the complete schemas.",
        "- **What `tools/list` carries, and what it leaves out.** An agent's host loads the whole",
        "  list into the model's context before the first call, with every tool of every server",
        "  it runs, so the list is kept to what an agent needs to choose a tool and compose a",
        "  call (under 60,000 bytes: `tests/mcp/test_tool_list.py` fails past it, `make bench`",
        "  records it against the goal); everything else is one `get_tool_schema` call away, and",
        "  every rule is still checked when a tool is called, a bad value refused naming the",
        "  field, the rule and what to send. The rules live in the registry",
        "  (`mcp_svc.registry.input_schema`), so a tool added later follows them unasked:",
        "  - every argument is listed with its type, description, enum, default and bounds, and",
        "    so are the fields of an object argument (a REST body) whose listing stays under",
        "    500 bytes;",
        "  - an object inside an argument (or a list or map of them), and an object argument",
        "    bigger than that (`create_cluster`'s `cluster`, `submit_training_job`'s `job`,",
        "    `deploy_endpoint`'s `endpoint`), is listed by its description and its field names,",
        "    the required ones first: `get_tool_schema(tool, field)` gives it with its types,",
        "    enums, defaults and rules (server instructions, rule 7). The cost is a call before",
        "    filling in a nested object; the gain is half the list;",
        "  - a union of objects told apart by one `const` field (a job's recipes) is listed as one",
        "    object: that field's values, and each field once, tagged with the kinds that take it;",
        "  - format rules (patterns, lengths, item counts) are not listed: a name comes from a",
        "    result or from the user, and the refusal names the rule;",
        "  - an output schema is listed only where the structured result is a contract a client",
        "    program branches on: `get_operation` (`status`, `terminal`), which decides every",
        "    mutation. Every other result is still structured content made by its model, with",
        '    its summary as text, and its fields are in the tables below ("Result"); a client',
        "    that validates results against a listed schema (the TypeScript SDK does) checks",
        "    get_operation's. A host plans with input schemas, not output schemas, which were a",
        "    third of the list;",
        "  - a mutation's description does not repeat how it completes: its result names",
        "    `get_operation` and the call to make (`next_step`), and so do the instructions.",
        "- **Settings.** A setting holding an unexpanded `${...}` (an agent config's placeholder",
        "  its client did not substitute) stops the start with a message naming the setting.",
        "- **Transports.** stdio (what agent configs launch) or streamable HTTP at `/mcp`",
        "  (`--transport streamable-http`). Over HTTP a client sends `Authorization: Bearer",
        "  <token>` (the scheme in any case), the token being `MCP_HTTP_TOKEN_FILE` (a file, such",
        "  as a secret mount) or `MCP_HTTP_TOKEN`; it is required unless the server is bound to",
        "  loopback, and without it the server refuses to start. With a token set, a request",
        '  without it is answered 401 "set the MCP HTTP token: Authorization: Bearer <token>"',
        "  (a static token, not OAuth: the challenge has no `resource_metadata` and the OAuth",
        "  discovery documents answer 404). Host and Origin are allow-listed",
        "  (`MCP_HTTP_ALLOWED_HOSTS`, `MCP_HTTP_ALLOWED_ORIGINS`; by default the loopback names and",
        "  the bind address): a foreign one is answered 403 naming the header. See",
        '  docs/operations.md, "MCP over HTTP".',
        "",
        "## Index",
        "",
        "| tool | area | kind | status tool | REST |",
        "|---|---|---|---|---|",
    ]
    for info in infos:
        kind = (
            "mutating" + (", destructive" if info.destructive else "")
            if info.mutating
            else "read-only"
        )
        out.append(
            f"| [`{info.name}`](#{info.name}) | {info.area} | {kind} |"
            f" {f'`{info.status_tool}`' if info.status_tool else '-'} |"
            f" {f'`{_cell(info.rest)}`' if info.rest else 'none (the server answers it)'} |"
        )
    area = None
    for info in infos:
        if info.area != area:
            area = info.area
            out += ["", f"## {area.capitalize()}"]
        tool = tools[info.name]
        out += ["", f"### {info.name}", ""]
        out.append(
            f"**{'Mutating' if info.mutating else 'Read-only'}**"
            + (f" · status tool `{info.status_tool}`" if info.status_tool else "")
            + (f" · REST `{info.rest}`" if info.rest else " · answered by the server itself")
        )
        out += ["", tool.description or "", "", *_parameters(server.full_inputs[info.name])]
        # A mutation that get_operation decides has the one result said at the top.
        shared = info.mutating and info.status_tool == STATUS_TOOL
        result = None if shared else server.result_schema(info.name)
        if result is not None and result.get("properties"):
            listed = " (listed in tools/list)" if info.listed_result else ""
            out += ["", f"Result{listed}, besides `summary`:", ""]
            out += _fields(result, {}, "result field")
    if server.skills:
        out += [
            "",
            "## Prompts",
            "",
            "The playbooks of `skills/` are also served as MCP prompts (`MCP_SKILLS_DIR`, else the",
            "repository's `skills/`), for clients that do not load skill files.",
            "",
            "| prompt | version | description |",
            "|---|---|---|",
        ]
        out += [
            f"| `{skill.name}` | {skill.version} | {_cell(skill.description)} |"
            for skill in server.skills
        ]
    defs: dict[str, Any] = {}
    for schema in server.full_inputs.values():
        defs.update(schema.get("$defs", {}))
    objects = {name: d for name, d in sorted(defs.items()) if d.get("properties")}
    if objects:
        out += [
            "",
            "## Parameter types",
            "",
            "The nested objects tools take: the same models (and rules) as the REST bodies.",
        ]
        for name, schema in objects.items():
            out += ["", f"### {name}", "", *_fields(schema, defs, "field")]
    return "\n".join(out) + "\n"


async def listed_size(server: HyperpilotServer) -> int:
    """The bytes of the `tools/list` result as the server sends it (compact JSON, the SDK's
    serialization): what a client loads into an agent's context before the first call."""
    listed = ListToolsResult(tools=await server.list_tools())
    return len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())


def main() -> None:
    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    print(asyncio.run(render(server)), end="")


if __name__ == "__main__":
    main()
