"""A REST error in the tool's own terms: fields named by the tool's arguments, routes by tools.

The gateway words an error for REST clients: a field is `query.selector`, `path.name` or a body
path (`instance_groups[0].instance_type` where the service checked a whole cluster spec), and a
hint names a route ("GET /api/v1/clusters"). An agent calls tools, so the error a tool returns
names the tool's argument and the tool to call instead (`selector`, `instance_type`,
`list_clusters`).

Both mappings come from the catalog, nothing is listed by hand: each tool's REST route (`rest=`)
and its parameters, whose first ones are the route's path placeholders in order (`{name}` of
`/clusters/{name}/pods` is `list_pods`'s `cluster`). A route no tool wraps (`POST
/api/v1/tokens`, a secret the user writes) stays as REST says it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

LOCATIONS = ("body", "query", "path", "header")
# `GET /api/v1/clusters/{name}/pods?namespace=default` inside a sentence; the path ends at a space,
# a comma, a semicolon or a closing bracket, and a sentence's final period is not part of it.
REST_CALL = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/api/v1/[^\s,;)\]]*)")
_PART = re.compile(r"\[(\d+)\]")


def _is_hole(segment: str) -> bool:
    """A placeholder, as a route template (`{name}`) or a hint (`{name}`, `<name>`) writes one."""
    return (segment.startswith("{") and segment.endswith("}")) or (
        segment.startswith("<") and segment.endswith(">")
    )


@dataclass(frozen=True)
class Route:
    """One tool's REST route: method, path template and the arguments its placeholders bind."""

    tool: str
    method: str
    segments: tuple[str, ...]
    parameters: tuple[str, ...]
    body_fields: tuple[str, ...] = ()

    @property
    def holes(self) -> tuple[str, ...]:
        return tuple(s[1:-1] for s in self.segments if _is_hole(s))

    @property
    def path_arguments(self) -> dict[str, str]:
        """Placeholder name -> the tool argument that fills it (the first parameters, in order)."""
        return dict(zip(self.holes, self.parameters, strict=False))

    @classmethod
    def of(
        cls, tool: str, rest: str, parameters: Sequence[str], body_fields: Sequence[str] = ()
    ) -> Route:
        method, _, target = rest.partition(" ")
        path = target.split("?", 1)[0]
        segments = tuple(path.strip("/").split("/"))
        return cls(tool, method.upper(), segments, tuple(parameters), tuple(body_fields))

    def matches(self, method: str, segments: Sequence[str]) -> bool:
        return (
            method == self.method
            and len(segments) == len(self.segments)
            and all(_is_hole(t) or t == s for t, s in zip(self.segments, segments, strict=True))
        )


def split_field(field: str) -> list[str]:
    """`instance_groups[0].instance_type` and `instance_groups.0.instance_type` alike."""
    return [p for p in _PART.sub(r".\1", field).split(".") if p]


def field_in_tool_terms(field: str, route: Route, body_param: str | None = None) -> str:
    """The REST field a tool's argument is: `query.selector` -> `selector`, `path.name` ->
        `cluster`, and for a tool that takes the body's fields flat, the first part of the path that
        is one of its arguments (`instance_groups[0].instance_type` -> `instance_type`, `body.name` ->
        `name`). Inside a parameter that is the whole REST body (`body_param`) a field keeps its REST
        name, which is that parameter's schema (a path from a larger spec starts at the body's own
    field). Anything else stays as REST wrote it."""
    parts = split_field(field)
    if not parts:
        return field
    where = parts[0] if parts[0] in LOCATIONS else None
    rest = parts[1:] if where else parts
    if where in ("path", "query"):
        if not rest:
            return field
        name = rest[0]
        if where == "path":
            argument = route.path_arguments.get(name)
        else:
            argument = name if name in route.parameters else None
        return ".".join([argument, *rest[1:]]) if argument else field
    if where == "header":
        return field
    if not rest:  # the whole body
        return body_param or field
    if body_param is not None:
        # A service that checked the body inside a larger spec (a new group as a one-group
        # cluster: `instance_groups[0].instance_type`) names it from there.
        for i, part in enumerate(rest):
            if part in route.body_fields:
                return ".".join(rest[i:]) if i or where else field
        return ".".join(rest) if where else field
    for i, part in enumerate(rest):
        if part in route.parameters:
            return field if i == 0 and where is None else ".".join(rest[i:])
    return ".".join(rest) if where else field


class Vocabulary:
    """The catalog's routes, to reword REST errors as the tools' own."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = list(routes)
        self.by_tool = {r.tool: r for r in self.routes}

    def tool_call(self, method: str, target: str) -> str | None:
        """`GET /api/v1/clusters/c1/pods?namespace=default` -> `list_pods(cluster='c1',
        namespace='default')`; None when no tool wraps the route. A placeholder stays a bare
        argument name (`list_nodes(cluster)`); query parameters the tool has no argument for are
        left out."""
        url = urlsplit(target)
        segments = [unquote(s) for s in url.path.strip("/").split("/")]
        found = [r for r in self.routes if r.matches(method, segments)]
        if not found:
            return None
        # The most literal route wins: `/clusters/active` over `/clusters/{name}`.
        route = min(found, key=lambda r: len(r.holes))
        arguments: list[str] = []
        values = (s for t, s in zip(route.segments, segments, strict=True) if _is_hole(t))
        for argument, value in zip(route.path_arguments.values(), values, strict=False):
            arguments.append(argument if _is_hole(value) else f"{argument}={value!r}")
        path_arguments = set(route.path_arguments.values())
        for key, value in parse_qsl(url.query, keep_blank_values=True):
            if key in route.parameters and key not in path_arguments:
                bare = not value or _is_hole(value)
                arguments.append(key if bare else f"{key}={value!r}")
        return f"{route.tool}({', '.join(arguments)})" if arguments else route.tool

    def reword(self, text: str) -> str:
        """Every REST call a text names that a tool wraps, as that tool."""

        def replace(match: re.Match[str]) -> str:
            target = match.group(2)
            trailing = len(target) - len(target.rstrip(".:"))
            target = target[: len(target) - trailing] if trailing else target
            call = self.tool_call(match.group(1), target)
            if call is None:
                return match.group(0)
            return call + match.group(2)[len(target) :]

        return REST_CALL.sub(replace, text)

    def error(
        self, tool: str, error: dict[str, Any], body_param: str | None = None
    ) -> dict[str, Any]:
        """A REST error body in `tool`'s terms: its fields, the message naming them, the hints."""
        route = self.by_tool.get(tool)
        out = dict(error)
        message = str(error.get("message", ""))
        fields: list[Any] = []
        for field in error.get("fields") or []:
            if not isinstance(field, dict):
                fields.append(field)
                continue
            field = dict(field)
            old = str(field.get("field", ""))
            new = field_in_tool_terms(old, route, body_param) if route else old
            if new != old:
                field["field"] = new
                message = message.replace(f"{old}: ", f"{new}: ")
            if isinstance(field.get("hint"), str):
                field["hint"] = self.reword(field["hint"])
            fields.append(field)
        if fields:
            out["fields"] = fields
        if "message" in error:
            out["message"] = message
        if isinstance(error.get("hint"), str):
            out["hint"] = self.reword(error["hint"])
        return out
