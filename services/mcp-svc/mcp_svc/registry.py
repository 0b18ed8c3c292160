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
from mcp_svc.results import COMPLETION, REFERENCE, STATUS_TOOL
from mcp_svc.terms import Route, Vocabulary

F = TypeVar("F", bound=Callable[..., Any])
# Where a failed call's error body is, for programs (the text content carries the same for a
# reader); `structuredContent` is left out of every error result.
ERROR_META = "hyperpilot/error"


@dataclass(frozen=True)
class ToolInfo:
    name: str
    area: str
    rest: str
    mutating: bool
    status_tool: str | None
    destructive: bool = False
    body_param: str | None = None
    parameters: tuple[str, ...] = ()
    # The fields of the `body_param` model (none for a union such as a job's recipes).
    body_fields: tuple[str, ...] = ()

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
        if self._vocabulary is None or len(self._vocabulary.routes) != len(self.catalog):
            self._vocabulary = Vocabulary(
                Route.of(i.name, i.rest, i.parameters, i.body_fields) for i in self.catalog.values()
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

    def read_tool(self, *, area: str, rest: str) -> Callable[[F], F]:
        """Register a read-only tool; its docstring is its description."""
        return self._register(area=area, rest=rest, mutating=False, status_tool=None)

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
        rest: str,
        mutating: bool,
        status_tool: str | None,
        destructive: bool = False,
        body_param: str | None = None,
    ) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            name = fn.__name__
            description = paragraphs(inspect.getdoc(fn) or name)
            if mutating and status_tool == STATUS_TOOL:
                description = f"{description}\n\n{COMPLETION}"
            elif mutating:
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
                )
                if tool.fn_metadata.output_schema is not None:
                    tool.fn_metadata.output_schema = output_schema(tool.fn_metadata.output_schema)
            return fn

        return decorate

    async def list_tools(self) -> list[Tool]:
        """The tools as listed: a mutation's result (`OperationStarted`, the same for some 30
        tools) is still structured content, validated against its model, but its schema is not
        listed; the server instructions (rule 3) and each description say what to read in it."""
        tools = await super().list_tools()
        for tool in tools:
            info = self.catalog.get(tool.name)
            if info is not None and info.mutating and info.status_tool == STATUS_TOOL:
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
    idempotent, open world); read-only is always stated. A read is idempotent and destructive
    by no definition, so only its closed world is added."""
    if not mutating:
        return ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return ToolAnnotations(read_only_hint=False, destructive_hint=destructive, idempotent_hint=True)


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
_FORMAT = frozenset({"pattern", "minLength", "maxLength"})


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
    place, and a part that would repeat (a field every recipe of a job has, a model two fields
    take) as one `$defs` entry. With `listing` false the markers are only removed: the
    complete schema, for the reference."""
    marked = _marked(schema) if listing else _unmarked(schema)
    lean: dict[str, Any] = _hoisted(_lean(_inlined(marked), _NOISE, listing=listing))
    lean["additionalProperties"] = False
    return lean


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
    if isinstance(node, list):
        return [_unformatted(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: _unformatted(v) for k, v in node.items() if k not in _FORMAT and k != REFERENCE}


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
