"""Every REST route has a tool: what the REST API can do, an agent can do (with the same rules).

The route list is the gateway's own OpenAPI document; the exclusions are deliberate.
"""

from __future__ import annotations

import re

from gateway.app import create_app
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from shared.config import Settings

NOT_TOOLS = {
    # Tokens are the admin's to hand out, never the agent's.
    ("GET", "/api/v1/tokens"),
    ("POST", "/api/v1/tokens"),
    ("DELETE", "/api/v1/tokens/{}"),
    # A live stream does not fit a tool call; list_events pages the same log.
    ("GET", "/api/v1/events/stream"),
    # The same change as PUT (set_node_recovery).
    ("PATCH", "/api/v1/clusters/{}/node-recovery"),
    # A secret never passes through an agent's context: the user stores it (UI or CLI).
    ("POST", "/api/v1/clusters/{}/secrets/hf-token"),
    ("POST", "/api/v1/clusters/{}/secrets"),
    # The user's Secrets are the user's to write and list (REST); a job names them in secret_env.
    ("GET", "/api/v1/clusters/{}/secrets"),
    # A kubeconfig is for kubectl on the caller's own machine, with the caller's AWS identity
    # (hyperpilot clusters kubeconfig); the agent reads the cluster through the read tools.
    ("GET", "/api/v1/clusters/{}/kubeconfig"),
    # OpenAI-compatible proxies for HTTP clients; invoke_endpoint sends the same request.
    ("POST", "/api/v1/endpoints/{}/v1/chat/completions"),
    ("POST", "/api/v1/endpoints/{}/v1/completions"),
    # A space's web app is its owner's browser page (the UI opens it); get_space names its URL.
    ("GET", "/api/v1/clusters/{}/spaces/{}/lab/{}"),
    # The same change as start, the other way (set_space_status takes start or stop).
    ("POST", "/api/v1/clusters/{}/spaces/{}/stop"),
    # The served regions: a region input outside them is refused naming them (rule
    # region_served), and omitted it is the default; no tool is spent on the list.
    ("GET", "/api/v1/inspect/regions"),
}


def _route(method: str, path: str) -> tuple[str, str]:
    return method.upper(), re.sub(r"\{[^}]+\}", "{}", path.split("?", 1)[0])


def test_every_rest_route_has_a_tool() -> None:
    spec = create_app(Settings()).openapi()
    routes = {
        _route(method, path)
        for path, operations in spec["paths"].items()
        if path.startswith("/api/v1/")
        for method in operations
    }
    server = build_server(McpSettings(allow_write=False, gateway_token=None))
    wrapped = {_route(*info.rest.split(" ", 1)) for info in server.catalog.values() if info.rest}
    missing = sorted(routes - wrapped - NOT_TOOLS)
    assert not missing, f"REST routes without an MCP tool (add one in mcp_svc/tools): {missing}"
    assert not wrapped - routes, f"tools wrapping no REST route: {sorted(wrapped - routes)}"
