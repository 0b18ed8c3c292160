"""The MCP server with Hyperpilot's tool rules: read-only unless writes are allowed, REST-shaped
errors, a one-paragraph summary as the text of every structured result, and lean schemas.

Tools are registered with `HyperpilotServer.read_tool` / `write_tool` so the catalog knows which
ones mutate, which REST route each wraps and which tool decides its completion; the reference in
`docs/mcp-tools.md` is generated from that catalog.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp_types import CallToolResult, InputRequiredResult, TextContent, Tool, ToolAnnotations
from pydantic import ValidationError
from starlette.applications import Starlette

from mcp_svc.client import Gateway
from mcp_svc.config import require_http_token
from mcp_svc.errors import ToolFailure, UnknownArguments, WritesDisabled, from_validation
from mcp_svc.http_auth import BearerAuth
from mcp_svc.http_guard import HostOriginGuard, transport_security
from mcp_svc.results import REFERENCE, STATUS_TOOL
from mcp_svc.terms import Route, Vocabulary

F = TypeVar("F", bound=Callable[..., Any])
# Where a failed call's error body is, for programs (the text content carries the same for a
# reader); `structuredContent` is left out of every error result.
ERROR_META = "hyperpilot/error"


@dataclass(frozen=True)
class ToolInfo:
    name: str
    area: str
    # The REST route it wraps (None: the server answers it itself, as get_tool_schema).
    rest: str | None
    mutating: bool
    status_tool: str | None
    destructive: bool = False
    body_param: str | None = None
    parameters: tuple[str, ...] = ()
    # The fields of the `body_param` model (none for a union such as a job's recipes).
    body_fields: tuple[str, ...] = ()
    # Whether tools/list carries its output schema (see `HyperpilotServer.list_tools`).
    listed_result: bool = False

    @property
    def previewable(self) -> bool:
        """Whether the tool offers `dry_run` (a preview that changes nothing)."""
        return "dry_run" in self.parameters


class HyperpilotServer(MCPServer):
    def __init__(self, *, allow_write: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.allow_write = allow_write
        self.catalog: dict[str, ToolInfo] = {}
        self._raw_inputs: dict[str, dict[str, Any]] = {}
        self._full_inputs: dict[str, dict[str, Any]] = {}
        self.gateway: Gateway | None = None
        self.http_token: str | None = None
        self.http_allowed_hosts: list[str] = []
        self.http_allowed_origins: list[str] = []
        self.skills: list[Any] = []
        self._vocabulary: Vocabulary | None = None

    @property
    def vocabulary(self) -> Vocabulary:
        """The catalog's routes, to word REST errors in the tools' terms."""
        if self._vocabulary is None or len(self._vocabulary.routes) != len(
            [i for i in self.catalog.values() if i.rest is not None]
        ):
            self._vocabulary = Vocabulary(
                Route.of(i.name, i.rest, i.parameters, i.body_fields)
                for i in self.catalog.values()
                if i.rest is not None
            )
        return self._vocabulary

    @property
    def full_inputs(self) -> dict[str, dict[str, Any]]:
        """Each tool's complete input schema: the listed one without its markers applied (a
        referenced object's pattern and lengths, a parameter listed by description)."""
        for name, raw in self._raw_inputs.items():
            if name not in self._full_inputs:
                self._full_inputs[name] = input_schema(raw, listing=False)
        return self._full_inputs

    def result_schema(self, name: str) -> dict[str, Any] | None:
        """A tool's result schema as its model gives it (lean; listed or not)."""
        tool = self._tool_manager.get_tool(name)
        return tool.fn_metadata.output_schema if tool is not None else None

    def read_tool(
        self, *, area: str, rest: str | None, listed_result: bool = False
    ) -> Callable[[F], F]:
        """Register a read-only tool; its docstring is its description. `listed_result`: its
        result is a contract a client program branches on (get_operation's `terminal`), so its
        output schema is listed."""
        return self._register(
            area=area, rest=rest, mutating=False, status_tool=None, listed_result=listed_result
        )

    def write_tool(
        self,
        *,
        area: str,
        rest: str,
        status_tool: str = STATUS_TOOL,
        destructive: bool = False,
        body_param: str | None = None,
    ) -> Callable[[F], F]:
        """Register a mutating tool: listed always, refused unless writes are allowed.
        `body_param` names the parameter that is the whole REST body, so its validation errors
        name fields as REST does."""
        return self._register(
            area=area,
            rest=rest,
            mutating=True,
            status_tool=status_tool,
            destructive=destructive,
            body_param=body_param,
        )

    def _register(
        self,
        *,
        area: str,
        rest: str | None,
        mutating: bool,
        status_tool: str | None,
        destructive: bool = False,
        body_param: str | None = None,
        listed_result: bool = False,
    ) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            name = fn.__name__
            description = paragraphs(inspect.getdoc(fn) or name)
            # A mutation decided by get_operation says so in its result (`status_tool`,
            # `next_step`) and in the server's instructions (rule 3): not in each description.
            if mutating and status_tool != STATUS_TOOL:
                description = f"{description}\n\nCompletion: immediate; confirm with {status_tool}."
            # The arguments a caller passes (the MCP context, injected by the SDK, is none).
            context = find_context_parameter(fn)
            parameters = tuple(p for p in inspect.signature(fn).parameters if p != context)
            self.add_tool(
                fn,
                name=name,
                description=description,
                annotations=hints(mutating, destructive),
            )
            tool = self._tool_manager.get_tool(name)
            if tool is not None:
                # What tools/list sends: the SDK's schemas without its noise (the arguments and
                # the result are still validated by the pydantic models themselves).
                # The listed schema (markers applied); the complete one is made when asked
                # for (`full_inputs`: the reference in docs/mcp-tools.md shows it).
                self._raw_inputs[name] = tool.parameters
                complete = _inlined(_unmarked(tool.parameters))
                body = complete["properties"].get(body_param or "", {})
                tool.parameters = input_schema(tool.parameters)
                self.catalog[name] = ToolInfo(
                    name,
                    area,
                    rest,
                    mutating,
                    status_tool,
                    destructive,
                    body_param,
                    parameters,
                    tuple(body.get("properties", {})),
                    listed_result,
                )
                if tool.fn_metadata.output_schema is not None:
                    tool.fn_metadata.output_schema = output_schema(tool.fn_metadata.output_schema)
            return fn

        return decorate

    async def list_tools(self) -> list[Tool]:
        """The tools as listed. An output schema is listed only where the structured result is
        a contract a client program branches on (`listed_result`: get_operation, whose
        `terminal` and `status` decide every mutation). Every other result is still structured
        content, made and checked by its pydantic model, with its text a one-paragraph summary
        of it; its fields are in docs/mcp-tools.md. A host reads a result, it does not plan with
        its schema, and the schemas of the rest were a third of the list."""
        tools = await super().list_tools()
        for tool in tools:
            info = self.catalog.get(tool.name)
            if info is not None and not info.listed_result:
                tool.output_schema = None
        return tools

    def streamable_http_app(self, **kwargs: Any) -> Starlette:
        """The SDK's app behind the Host/Origin allow-lists, then the bearer check (a token is
        required unless `host`, the bind address, is loopback)."""
        host = str(kwargs.get("host", "127.0.0.1"))
        require_http_token(host, self.http_token)
        security = kwargs.get("transport_security") or transport_security(
            host, self.http_allowed_hosts, self.http_allowed_origins
        )
        # The SDK's transport checks the same lists on /mcp (its own default would be loopback
        # only on a loopback bind and nothing otherwise).
        app = super().streamable_http_app(**{**kwargs, "transport_security": security})
        if self.http_token:
            app.add_middleware(BearerAuth, token=self.http_token)
        # Added last, so outermost: a rebinding page is refused before the token is looked at.
        app.add_middleware(HostOriginGuard, settings=security)
        return app

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        info = self.catalog.get(name)
        if (
            info is not None
            and info.mutating
            and not self.allow_write
            and not (info.previewable and arguments.get("dry_run") is True)
        ):
            # Refused before the arguments are even read: a read-only server sends nothing
            # (a dry run, which changes nothing, is the one exception).
            return failure(WritesDisabled(name))
        if info is not None and (unknown := sorted(set(arguments) - set(info.parameters))):
            # The SDK would drop them silently and run the call without them.
            return failure(UnknownArguments(name, unknown, info.parameters))
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ToolFailure):
                return failure(self.in_tool_terms(cause, info))
            if isinstance(cause, ValidationError):
                local = from_validation(cause, info.body_param if info else None)
                return failure(self.in_tool_terms(local, info))
            raise
        return with_summary(result)

    def in_tool_terms(self, exc: ToolFailure, info: ToolInfo | None) -> ToolFailure:
        """A failure worded for the tool's caller: the tool's argument names for REST fields,
        tool calls for the REST routes its hints name."""
        if info is None:
            return exc
        return exc.reworded(self.vocabulary.error(info.name, exc.error, info.body_param))


def hints(mutating: bool, destructive: bool) -> ToolAnnotations:
    """The hints a tool differs from the MCP defaults in (not read-only, destructive, not
    idempotent, open world): a read is read-only (idempotent and destructive by no definition;
    many read AWS live, so the open world of the default is no lie); a mutation is not
    read-only by default, so only whether it destroys and that a repeat is safe are said."""
    if not mutating:
        return ToolAnnotations(read_only_hint=True)
    return ToolAnnotations(destructive_hint=destructive, idempotent_hint=True)


def paragraphs(text: str) -> str:
    """A docstring as prose: wrapped lines joined, blank lines kept as paragraph breaks."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def failure(exc: ToolFailure) -> CallToolResult:
    """A tool error: `isError` with the error rendered as text (code, message, hint, and each
    field with its rule and hint), the error body in `_meta["hyperpilot/error"]`.

    No structured content: the MCP specification (2025-06-18, Server > Tools > Output Schema)
    says "If an output schema is provided: Servers MUST provide structured results that conform
    to this schema", and every tool declares one for its result, which an error body is not. A
    client that validates (the TypeScript SDK does) would throw -32602 "Structured content does
    not match the tool's output schema" instead of showing the error. This is also the shape the
    SDK itself gives an exception a tool raises: text only, `isError` true."""
    return CallToolResult(
        content=[TextContent(type="text", text=str(exc))],
        is_error=True,
        meta={ERROR_META: exc.body()},
    )


def with_summary(
    result: CallToolResult | InputRequiredResult,
) -> CallToolResult | InputRequiredResult:
    """The text of a result is its summary, one paragraph; the data is in `structuredContent`
    only, not repeated as JSON text (the MCP specification, Server > Tools > Structured Content:
    the text may be a summary of it)."""
    if not isinstance(result, CallToolResult) or not isinstance(result.structured_content, dict):
        return result
    summary = result.structured_content.get("summary")
    if not isinstance(summary, str):
        return result
    paragraph = " ".join(summary.split())  # a REST message quoted in it may hold line breaks
    result.structured_content["summary"] = paragraph
    result.content = [TextContent(type="text", text=paragraph)]
    return result


# Keywords the SDK's schemas carry that tell a client nothing: `title` is the field name again
# ("Operation Id"), `examples` repeat what a description says, a `discriminator` repeats the
# `const` of each arm; in a result, `default` describes no value actually sent.
_NOISE = frozenset({"title", "examples", "discriminator"})
_OUTPUT_NOISE = frozenset({"title", "default", "examples"})
_NULL = {"type": "null"}


# Markers a parameter's `Field(json_schema_extra=...)` may carry, read here and not listed:
# `REFERENCE`: the value is a name an earlier result gave (list_clusters, list_endpoints ...), so
# its format rules (pattern, lengths) tell an agent nothing: they are checked when the call is
# made, and refused with the rule named. `LISTED_AS`: the parameter is listed as an object with
# its description only, which names the tool parameter whose schema it shares (update_endpoint's
# change has the fields of deploy_endpoint's endpoint), so that schema is listed once.
LISTED_AS = "x-hyperpilot-listed-as"
# Format rules: checked when a call is made and refused naming the rule, not listed (an agent
# takes a name from a result or from the user; a regular expression tells it nothing more).
_FORMAT = frozenset(
    {"pattern", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)


def reference() -> dict[str, Any]:
    """`json_schema_extra` of a parameter that names an existing object (see REFERENCE)."""
    return {REFERENCE: True}


def listed_as(description: str) -> dict[str, Any]:
    """`json_schema_extra` of a parameter listed by description only (see LISTED_AS)."""
    return {LISTED_AS: description}


def input_schema(schema: dict[str, Any], listing: bool = True) -> dict[str, Any]:
    """A tool's arguments as listed: no titles, `X | None = None` as an optional X (leaving it
    out is the null), a boolean's `false` default unsaid, and `additionalProperties: false` (an
    unknown argument is refused, see `call_tool`). Every part is written once: nested models in
    place, and a part that would repeat (a field two arguments take) as one `$defs` entry.

    What an agent needs to compose a call is listed; the rest of the complete schema is a
    get_tool_schema call away, and every rule is still checked when the tool is called (a bad
    value is refused naming the field, the rule and what to send instead):
    - each argument with its type, description, enum, default and bounds; the fields of an
      object argument (a REST body) likewise;
    - an object inside such a body (or a list or map of them) by its description and its field
      names, required ones first (`_outlined`);
    - a union of objects told apart by a `const` field (a job's recipes) as one object: that
      field's values, each field once, tagged with the kinds that take it (`_merged`);
    - no format rules (patterns, lengths, item counts: `_FORMAT`).
    With `listing` false the markers are only removed: the complete schema, for get_tool_schema
    and the reference."""
    if not listing:
        complete: dict[str, Any] = _hoisted(
            _lean(_inlined(_unmarked(schema)), _NOISE, listing=False)
        )
        complete["additionalProperties"] = False
        return complete
    listed = _outlined(_merged(_unformatted(_inlined(_marked(schema)))))
    lean: dict[str, Any] = _hoisted(_lean(listed, _NOISE, listing=True))
    lean["additionalProperties"] = False
    return lean


def _object_of(node: Any) -> dict[str, Any] | None:
    """The object schema a property holds: itself, its items, its map's values, or the
    non-null arm of `X | None`."""
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("properties"), dict):
        return node
    for inner in (node.get("items"), node.get("additionalProperties")):
        held = _object_of(inner)
        if held is not None:
            return held
    for arm in node.get("anyOf", []):
        held = _object_of(arm)
        if held is not None:
            return held
    return None


def _outline(prop: dict[str, Any], held: dict[str, Any]) -> dict[str, Any]:
    """A nested object listed by its description and field names (required ones said so)."""
    required = [f for f in held.get("required", []) if f in held["properties"]]
    optional = [f for f in held["properties"] if f not in required]
    fields = ", ".join(required) + (" (required)" if required else "")
    fields += ("; " if required and optional else "") + ", ".join(optional)
    said = str(prop.get("description") or held.get("description") or "").strip().rstrip(".")
    kind = prop.get("type")
    if not isinstance(kind, str):
        arms = [a.get("type") for a in prop.get("anyOf", []) if isinstance(a, dict)]
        kind = next((k for k in arms if isinstance(k, str) and k != "null"), "object")
    outline: dict[str, Any] = {
        "type": kind,
        "description": f"{said}. Fields: {fields}".lstrip(". "),
    }
    for key in ("default",):
        if key in prop:
            outline[key] = prop[key]
    return outline


# An object argument (a REST body) whose fields alone would be more than this many bytes of
# the list (a job's recipes, an endpoint's kinds) is outlined too: get_tool_schema has it whole.
BODY_BYTES = 500


def _outlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments, and the fields of an object argument, as they are; an object below
    those, and an object argument bigger than BODY_BYTES, outlined (`_outline`)."""

    def fields(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [fields(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: field(prop, depth) for name, prop in value.items()}
            elif key in _VALUES:
                out[key] = value
            else:
                out[key] = fields(value, depth)
        return out

    def field(prop: Any, depth: int) -> Any:
        held = _object_of(prop)
        if held is not None and depth >= 1:
            return _outline(prop, held)
        listed = fields(prop, depth + 1)
        if held is not None and len(_compact(listed)) > BODY_BYTES:
            return _outline(prop, held)
        return listed

    outlined: dict[str, Any] = fields(schema, 0)
    return outlined


def _merged(node: Any) -> Any:
    """Each union of objects that one `const` field tells apart as one object (see
    `input_schema`): a host need not pick an arm, and the fields the arms share are said once."""
    if isinstance(node, list):
        return [_merged(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: v if k in _VALUES else _merged(v) for k, v in node.items()}
    key = "oneOf" if "oneOf" in node else "anyOf"
    arms = node.get(key)
    if not isinstance(arms, list) or len(arms) < 2:
        return node
    if not all(isinstance(a, dict) and isinstance(a.get("properties"), dict) for a in arms):
        return node
    shared = set.intersection(*(set(a["properties"]) for a in arms))
    tag = next(
        (
            f
            for f in arms[0]["properties"]
            if f in shared and all("const" in a["properties"][f] for a in arms)
        ),
        None,
    )
    if tag is None:
        return node
    kinds = [a["properties"][tag]["const"] for a in arms]
    fields: dict[str, Any] = {}
    takers: dict[str, list[Any]] = {}
    for kind, arm in zip(kinds, arms, strict=True):
        for name, prop in arm["properties"].items():
            if name == tag:
                continue
            takers.setdefault(name, []).append(kind)
            if name not in fields:
                fields[name] = prop
            elif fields[name] != prop:  # an arm's own default (epochs): said by get_tool_schema
                fields[name] = {k: v for k, v in fields[name].items() if k != "default"}
    for name, who in takers.items():
        if len(who) < len(arms):
            said = str(fields[name].get("description", "")).strip()
            fields[name] = {**fields[name], "description": f"({', '.join(who)}) {said}".strip()}
    always = [
        r
        for r in arms[0].get("required", [])
        if r != tag and all(r in a.get("required", []) for a in arms)
    ]
    common = {tag, *always}
    own = [
        f"{kind}: {', '.join(r for r in arm.get('required', []) if r not in common)}"
        for kind, arm in zip(kinds, arms, strict=True)
        if any(r not in common for r in arm.get("required", []))
    ]
    described = str(arms[0]["properties"][tag].get("description", "")).strip().rstrip(".")
    said = (
        "; ".join(x for x in (described, "each also requires " + "; ".join(own)) if x)
        if own
        else described
    )
    kind_type = {"string": "string", "integer": "integer"}.get(
        str(arms[0]["properties"][tag].get("type", "string")), "string"
    )
    merged = {k: v for k, v in node.items() if k != key}
    merged["type"] = "object"
    merged["properties"] = {tag: {"type": kind_type, "enum": kinds, "description": said}, **fields}
    merged["required"] = [tag, *always]
    merged["additionalProperties"] = False
    return merged


def _marked(node: Any) -> Any:
    """The schema with the REFERENCE and LISTED_AS markers applied (and removed)."""
    if isinstance(node, list):
        return [_marked(item) for item in node]
    if not isinstance(node, dict):
        return node
    if LISTED_AS in node:
        return {"type": "object", "description": node[LISTED_AS]}
    if node.get(REFERENCE) is True:
        return _marked(_unformatted(node))
    return {key: _marked(value) for key, value in node.items()}


def _unmarked(node: Any) -> Any:
    if isinstance(node, list):
        return [_unmarked(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: _unmarked(v) for k, v in node.items() if k not in (REFERENCE, LISTED_AS)}


def _unformatted(node: Any) -> Any:
    """The schema without format rules (`_FORMAT`) and REFERENCE markers; property names and
    values (a default, an enum) are kept as they are."""
    if isinstance(node, list):
        return [_unformatted(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _FORMAT or key == REFERENCE:
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _unformatted(sub) for name, sub in value.items()}
        elif key in _VALUES:
            out[key] = value
        else:
            out[key] = _unformatted(value)
    return out


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every `$ref` to its `$defs` replaced by the definition."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def place(node: Any, depth: int = 0) -> Any:
        if isinstance(node, list):
            return [place(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and depth < 8:
            target = dict(defs[ref.rsplit("/", 1)[-1]])
            if "description" in node or ("description" in target and len(target) > 1):
                target.pop("description", None)  # the property's own words, or the model's
            return {**place(target, depth + 1), **{k: v for k, v in node.items() if k != "$ref"}}
        return {key: place(value, depth) for key, value in node.items() if key != "$defs"}

    inlined: dict[str, Any] = place(schema)
    return inlined


# Keywords whose value is data, not a schema: never a part to write once.
_VALUES = frozenset({"default", "const", "enum", "examples"})


def _compact(node: Any) -> str:
    return json.dumps(node, separators=(",", ":"), sort_keys=True)


def _hoisted(schema: dict[str, Any]) -> dict[str, Any]:
    """Each part that occurs more than once and is bigger than a reference to it, written once
    in `$defs` (named after the first property that holds it), the biggest saving first."""
    defs: dict[str, Any] = {}

    def parts(
        node: Any, holder: str, seen: dict[str, tuple[int, str, Any]], itself: bool = True
    ) -> None:
        if isinstance(node, list):
            for item in node:
                parts(item, holder, seen)
            return
        if not isinstance(node, dict):
            return
        if itself:
            text = _compact(node)
            n, name, _ = seen.get(text, (0, holder, node))
            seen[text] = (n + 1, name, node)
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for prop, sub in value.items():
                    parts(sub, prop, seen)
            elif key not in _VALUES:
                parts(value, holder, seen)

    def replaced(node: Any, text: str, ref: dict[str, str]) -> Any:
        if isinstance(node, list):
            return [replaced(item, text, ref) for item in node]
        if not isinstance(node, dict):
            return node
        if _compact(node) == text:
            return ref
        return {
            key: value
            if key in _VALUES
            else {p: replaced(v, text, ref) for p, v in value.items()}
            if key == "properties" and isinstance(value, dict)
            else replaced(value, text, ref)
            for key, value in node.items()
        }

    while True:
        seen: dict[str, tuple[int, str, Any]] = {}
        parts({k: v for k, v in schema.items() if k != "$defs"}, "", seen, itself=False)
        for name, definition in defs.items():
            parts(definition, name, seen, itself=False)
        savings = [
            ((n - 1) * len(text) - n * (len(name) + 20), text, name, node)
            for text, (n, name, node) in seen.items()
            if n > 1
        ]
        best = max(savings, default=None, key=lambda s: s[0])
        if best is None or best[0] <= 0:
            break
        _, text, name, node = best
        while name in defs:
            name += "_"
        ref = {"$ref": f"#/$defs/{name}"}
        schema = replaced(schema, text, ref)
        defs = {k: replaced(v, text, ref) for k, v in defs.items()}
        defs[name] = node
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's result as listed: types, `required` and one description per property; no
    titles, defaults, examples or the model's docstring (the tool's description says it)."""
    lean: dict[str, Any] = _lean(_shallow(schema), _OUTPUT_NOISE, output=True)
    lean.pop("description", None)
    # `summary` is in every result and is its text content: said once, in the server's
    # instructions and the reference, not in each schema (a result may have fields its schema
    # does not list, so the structured content still conforms).
    lean.get("properties", {}).pop("summary", None)
    if "required" in lean:
        lean["required"] = [r for r in lean["required"] if r != "summary"]
    return lean


def _shallow(schema: dict[str, Any]) -> dict[str, Any]:
    """The result's own fields; a nested REST object is an object (its fields are the REST
    API's, in the OpenAPI document; they pass through as the gateway sends them)."""

    def objects(node: Any) -> Any:
        if isinstance(node, list):
            return [objects(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return {"type": "object", **{k: v for k, v in node.items() if k != "$ref"}}
        return {key: objects(value) for key, value in node.items()}

    return {key: objects(value) for key, value in schema.items() if key != "$defs"}


def _lean(
    node: Any,
    drop: frozenset[str],
    output: bool = False,
    names: bool = False,
    listing: bool = True,
) -> Any:
    if isinstance(node, list):
        return [_lean(item, drop, output, listing=listing) for item in node]
    if not isinstance(node, dict):
        return node
    if names:  # `properties` or `$defs`: the keys are names, not keywords
        return {key: _lean(value, drop, output, listing=listing) for key, value in node.items()}
    lean: dict[str, Any] = {}
    for key, value in node.items():
        if key in drop or (output and key == "additionalProperties" and value is True):
            continue
        lean[key] = _lean(
            value, drop, output, names=key in ("properties", "$defs"), listing=listing
        )
    omitted_is_null = False
    if not output and "default" in lean and lean["default"] is None:
        del lean["default"]  # not required already says it may be left out
        omitted_is_null = True
    if not output and lean.get("default") is False and lean.get("type") == "boolean":
        del lean["default"]  # a boolean left out is false
    arms = lean.get("anyOf")
    if isinstance(arms, list) and len(arms) == 2 and _NULL in arms:
        other = arms[1] if arms[0] == _NULL else arms[0]
        kind = other.get("type")
        if isinstance(kind, str) and kind != "null" and not set(other) & (set(lean) - {"anyOf"}):
            del lean["anyOf"]
            # An argument whose default is null is listed as its type: leaving it out says
            # null (null itself is still accepted). A null that means something else (no
            # default, or another one) stays listed.
            single = omitted_is_null and listing
            lean = {**other, **lean, "type": kind if single else [kind, "null"]}
    return lean


def schema_part(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The part of a complete input schema (`full_inputs`) a field path names (`job.resources`,
    `cluster.instance_groups.taints`: a list's items and a map's values are passed through),
    with its references in place. A union (a job's recipes) is looked into arm by arm: one
    schema if the arms that have the field agree, else each of theirs (`anyOf`).

    Raises `KeyError` naming the part not found and the fields there are."""
    defs: dict[str, Any] = schema.get("$defs", {})

    def resolved(node: Any) -> Any:
        return _inlined({**node, "$defs": defs}) if isinstance(node, dict) else node

    def holders(node: dict[str, Any]) -> list[dict[str, Any]]:
        """The objects whose properties a path part is looked up in."""
        node = resolved(node)
        if isinstance(node.get("properties"), dict):
            return [node]
        found: list[dict[str, Any]] = []
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                found += holders(node[key])
        for key in ("anyOf", "oneOf"):
            for arm in node.get(key, []):
                if isinstance(arm, dict):
                    found += holders(arm)
        return found

    node: dict[str, Any] = schema
    walked: list[str] = []
    for part in [p for p in path.replace("[]", "").split(".") if p]:
        objects = holders(node)
        matches = [o["properties"][part] for o in objects if part in o["properties"]]
        if not matches:
            known = sorted({f for o in objects for f in o["properties"]})
            where = ".".join(walked) or "the arguments"
            raise KeyError((".".join([*walked, part]), where, known))
        distinct = [m for i, m in enumerate(matches) if m not in matches[:i]]
        node = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
        walked.append(part)
    part_schema: dict[str, Any] = _inlined({**node, "$defs": defs})
    return part_schema
