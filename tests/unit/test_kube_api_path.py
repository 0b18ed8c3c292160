"""`ApiPath`, how the Kubernetes adapters read lists and watches: over the official client's
transport (its bearer token), each path segment quoted whole, the query in the API's own names,
and a refusal raised as the client's ApiException with the server's answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from shared.adapters.eks_kube import ApiPath, list_items


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An API server of two pages of Pods under /api/v1/namespaces/a%2Fb/pods; 404 elsewhere."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
            if self.path.startswith("/api/v1/namespaces/a%2Fb/pods?"):
                last = "continue=next" in self.path
                page = {
                    "metadata": {"continue": None if last else "next"},
                    "items": [{"metadata": {"name": "p2" if last else "p1"}}],
                }
                self._answer(200, page)
            else:
                self._answer(404, {"kind": "Status", "message": "not here", "code": 404})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = orjson.dumps(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def _api(url: str) -> k8s.ApiClient:
    config = k8s.Configuration(host=url)
    config.api_key["authorization"] = "tok"
    config.api_key_prefix["authorization"] = "Bearer"
    return k8s.ApiClient(config)


def test_each_segment_is_quoted_whole() -> None:
    pods = ApiPath(k8s.ApiClient(), ("api", "v1", "namespaces", "a/b?x=1", "pods"))
    assert pods.path == "/api/v1/namespaces/a%2Fb%3Fx%3D1/pods"


def test_a_list_reads_every_page_with_the_token_and_the_query(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = server
    pods = ApiPath(_api(url), ("api", "v1", "namespaces", "a/b", "pods"))
    items = list_items(pods, lambda p: p["metadata"]["name"], labelSelector="app=x")
    assert items == ["p1", "p2"]
    assert [s["path"] for s in seen] == [
        "/api/v1/namespaces/a%2Fb/pods?labelSelector=app%3Dx&limit=500",
        "/api/v1/namespaces/a%2Fb/pods?labelSelector=app%3Dx&limit=500&continue=next",
    ]
    assert {s["auth"] for s in seen} == {"Bearer tok"}


def test_a_watch_query_says_true_and_a_refusal_is_the_client_s_exception(
    server: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = server
    nodes = ApiPath(_api(url), ("api", "v1", "nodes"), {"labelSelector": "a=b"})
    with pytest.raises(ApiException) as caught:
        nodes.get(watch=True, resourceVersion="7", timeoutSeconds=240, missing=None)
    assert (
        seen[-1]["path"]
        == "/api/v1/nodes?labelSelector=a%3Db&watch=true&resourceVersion=7&timeoutSeconds=240"
    )
    assert caught.value.status == 404
    assert orjson.loads(caught.value.body)["message"] == "not here"
