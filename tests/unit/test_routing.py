"""Route matching with a static-prefix check (gateway.routing.PrefixedRoute): the same answers
as the plain scan, for matches, parameters, wrong methods and trailing slashes."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from gateway.routing import PrefixedRoute


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
