"""How a request finds its route: the app scans every route in order (see `create_app`), and a
route whose path cannot start the request's path says so before its regular expression runs."""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from starlette._utils import get_route_path
from starlette.routing import Match
from starlette.types import Scope


class PrefixedRoute(APIRoute):
    """An APIRoute that rejects a path outside its static prefix (the path up to its first
    parameter) with one string comparison. The scan reaches a route near the end of the list
    after tens of misses, each a regular-expression match otherwise."""

    def __init__(self, path: str, endpoint: Any, **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.static_prefix = self.path_format.split("{", 1)[0]

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not get_route_path(scope).startswith(self.static_prefix):
            return Match.NONE, {}
        return super().matches(scope)
