"""How a request finds its route.

The app scans its routes in order (see `create_app`). `RouteIndex`, first in that list, looks
an HTTP request's path up among the API routes that could match it and answers for them, so
that the scan stops there instead of trying every route: the storage routes sat 70 routes
down the list, 85 us of matching per request on two slow cores. Each `PrefixedRoute` also
rejects a path outside its static prefix with one string comparison, which keeps the scan
cheap where the index does not answer (WebSockets, paths no route has).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.routing import APIRoute
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send


def static_prefix(path_format: str) -> str:
    """The part of a route's path before its first parameter."""
    return path_format.split("{", 1)[0]


class PrefixedRoute(APIRoute):
    """An APIRoute that rejects a path outside its static prefix (the path up to its first
    parameter) with one string comparison, before its regular expression runs.

    It also documents the parameters a dependency reads from the request itself rather than
    declaring them (its `openapi_parameters`, as in `gateway.deps.mutation`)."""

    def __init__(self, path: str, endpoint: Any, **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.static_prefix = static_prefix(self.path_format)
        read_directly = [
            parameter
            for dependency in self.dependant.dependencies
            for parameter in getattr(dependency.call, "openapi_parameters", ())
        ]
        if read_directly:
            self.openapi_extra = {
                **(self.openapi_extra or {}),
                "parameters": [*(self.openapi_extra or {}).get("parameters", ()), *read_directly],
            }

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not get_route_path(scope).startswith(self.static_prefix):
            return Match.NONE, {}
        return super().matches(scope)


class RouteIndex(BaseRoute):
    """The app's HTTP API routes, indexed by static prefix, answering as the full scan would.

    A route can match a path only if the path starts with the route's static prefix. A route
    without parameters matches its exact path; one whose first parameter opens a path segment
    has a prefix ending in '/', which is one of the path's own prefixes up to a '/'. So the
    candidates for a path are found with one dictionary lookup per '/' in it, plus the few
    routes whose first parameter sits inside a segment; they are tried in the app's order, and
    the first full match wins, or else the first partial one (a known path with another
    method, 405), exactly as in the scan. The routes stay in the app's list too: the OpenAPI
    document, `url_path_for`, WebSockets and anything this index does not answer use them."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self._by_prefix: dict[str, list[tuple[int, APIRoute]]] = {}
        self._anywhere: list[tuple[int, APIRoute]] = []
        for position, route in enumerate(routes):
            if not isinstance(route, APIRoute):
                continue
            prefix = static_prefix(route.path_format)
            if prefix == route.path_format or prefix.endswith("/"):
                self._by_prefix.setdefault(prefix, []).append((position, route))
            else:
                self._anywhere.append((position, route))

    def candidates(self, path: str) -> list[APIRoute]:
        """The routes that could match `path`, in the app's order."""
        found: list[tuple[int, APIRoute]] = list(self._anywhere)
        end = path.find("/", 0)
        while end != -1:
            found.extend(self._by_prefix.get(path[: end + 1], ()))
            end = path.find("/", end + 1)
        if not path.endswith("/"):
            found.extend(self._by_prefix.get(path, ()))
        found.sort(key=lambda item: item[0])
        return [route for _, route in found]

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        partial: tuple[Match, Scope] | None = None
        for route in self.candidates(get_route_path(scope)):
            match, child_scope = route.matches(scope)  # sets child_scope["route"]
            if match is Match.FULL:
                return match, child_scope
            if match is Match.PARTIAL and partial is None:
                partial = (match, child_scope)
        return partial or (Match.NONE, {})

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: APIRoute = scope["route"]  # the route `matches` chose
        await route.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)  # the indexed routes answer in the app's list
