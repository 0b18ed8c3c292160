"""Route matching with a static-prefix check (gateway.routing.PrefixedRoute) and the route
index in front of the scan (gateway.routing.RouteIndex): the same answers as the plain scan,
for matches, parameters, wrong methods and trailing slashes, on every route of the gateway."""

from __future__ import annotations

import re

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Match

from gateway.app import create_app
from gateway.routing import PrefixedRoute, RouteIndex


def _client() -> TestClient:
    app = FastAPI()
    first = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/clusters")
    second = APIRouter(route_class=PrefixedRoute, prefix="/api/v1/storage/buckets")

    @first.get("/{name}")
    async def cluster(name: str) -> dict[str, str]:
        return {"cluster": name}

    @first.get("/{name}/nodes/{node}")
    async def node(name: str, node: str) -> dict[str, str]:
        return {"cluster": name, "node": node}

    @second.post("", status_code=202)
    async def create() -> dict[str, str]:
        return {"created": "yes"}

    @second.get("/{bucket}")
    async def bucket(bucket: str) -> dict[str, str]:
        return {"bucket": bucket}

    for router in (first, second):
        app.router.routes.extend(router.routes)
    app.router.routes.insert(0, RouteIndex(app.router.routes))
    return TestClient(app)


def test_static_prefixes_are_the_paths_up_to_their_first_parameter() -> None:
    route = PrefixedRoute("/api/v1/clusters/{name}/nodes/{node}", lambda: None)
    assert route.static_prefix == "/api/v1/clusters/"
    assert PrefixedRoute("/api/v1/storage/buckets", lambda: None).static_prefix == (
        "/api/v1/storage/buckets"
    )


def test_routes_match_as_before() -> None:
    client = _client()
    assert client.get("/api/v1/clusters/c1").json() == {"cluster": "c1"}
    assert client.get("/api/v1/clusters/c1/nodes/n1").json() == {"cluster": "c1", "node": "n1"}
    assert client.post("/api/v1/storage/buckets").status_code == 202
    assert client.get("/api/v1/storage/buckets/b1").json() == {"bucket": "b1"}


def test_a_wrong_method_is_405_and_an_unknown_path_404() -> None:
    client = _client()
    assert client.delete("/api/v1/clusters/c1").status_code == 405
    assert client.get("/api/v1/storage").status_code == 404
    assert client.get("/api/v2/clusters/c1").status_code == 404


def test_a_trailing_slash_is_redirected_to_the_route() -> None:
    client = _client()
    response = client.get("/api/v1/storage/buckets/b1/", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"].endswith("/api/v1/storage/buckets/b1")


def _scan(routes: list[BaseRoute], path: str, method: str) -> tuple[Match, object]:
    """What the app's scan picks: the first full match, else the first partial one."""
    scope = {"type": "http", "path": path, "root_path": "", "method": method}
    partial = None
    for route in routes:
        match, child_scope = route.matches(scope)
        if match is Match.FULL:
            return match, child_scope.get("route", route)
        if match is Match.PARTIAL and partial is None:
            partial = (match, child_scope.get("route", route))
    return partial or (Match.NONE, None)


def test_the_index_picks_what_the_scan_picks_for_every_route_of_the_gateway() -> None:
    routes = create_app().router.routes
    index = routes[0]
    assert isinstance(index, RouteIndex)
    plain = routes[1:]
    paths = {"/", "/nothing", "/api/v1", "/api/v1/", "/api/v2/clusters/c1"}
    for route in plain:
        template = getattr(route, "path_format", None)
        if template is None:
            continue
        concrete = re.sub(r"\{[^}]+\}", "x1", template)
        paths |= {concrete, concrete + "/", concrete + "/extra", concrete.rsplit("/", 1)[0]}
        paths.add(re.sub(r"\{[^}]+\}", "import", template))  # a parameter shaped like a word
    methods = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
    checked = 0
    for path in sorted(paths):
        for method in methods:
            expected = _scan(plain, path, method)
            assert _scan(routes, path, method) == expected, (method, path)
            checked += expected[0] is not Match.NONE
    assert checked > 100  # most combinations reach a route, fully or by path alone


def test_a_parameter_inside_a_segment_is_still_found() -> None:
    app = FastAPI()
    router = APIRouter(route_class=PrefixedRoute)

    @router.get("/files/v{version}/{name}")
    async def versioned(version: int, name: str) -> dict[str, object]:
        return {"version": version, "name": name}

    @router.get("/files/{name}")
    async def plain(name: str) -> dict[str, str]:
        return {"name": name}

    app.router.routes.extend(router.routes)
    app.router.routes.insert(0, RouteIndex(app.router.routes))
    client = TestClient(app)
    assert client.get("/files/v2/a.txt").json() == {"version": 2, "name": "a.txt"}
    assert client.get("/files/b.txt").json() == {"name": "b.txt"}
