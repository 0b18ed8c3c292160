"""Host and Origin allow-lists in front of the streamable-HTTP endpoint (DNS rebinding).

The MCP specification, revision 2025-11-25, Basic > Transports > Streamable HTTP, "Security
Warning" (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports):

    1. Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
       rebinding attacks
       - If the `Origin` header is present and invalid, servers MUST respond with HTTP 403
         Forbidden.
    2. When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all
       network interfaces (0.0.0.0)
    3. Servers SHOULD implement proper authentication for all connections

A page that rebinds its own name to this server's address sends its own name as Host and its
own origin as Origin: both are refused unless allow-listed. The matching is the MCP SDK's own
(`TransportSecuritySettings`, which the SDK's transport also applies on /mcp); `HostOriginGuard`
runs it before the bearer check on every path and answers 403 in the REST error shape, naming
the header, where the SDK would answer a bad Host with a plain-text 421.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_svc.config import is_loopback

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_BINDS = {"", "0.0.0.0", "::", "[::]"}
# What a browser can send (a name or an address, a numeric port): the SDK's `name:*` patterns
# match by prefix, so anything else (`localhost:1.evil.example`) is refused before them.
_AUTHORITY = r"(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(:[0-9]{1,5})?"
HOST_SYNTAX = re.compile(_AUTHORITY)
ORIGIN_SYNTAX = re.compile(r"[a-z][a-z0-9+.-]*://" + _AUTHORITY)


def _host_entry(value: str) -> str:
    """`name`, `name:port`, `[v6]`, `[v6]:port`, a bare IPv6 address bracketed."""
    value = value.strip().lower()
    if value.count(":") > 1 and not value.startswith("["):
        return f"[{value}]"
    return value


def _has_port(entry: str) -> bool:
    return entry.rpartition("]")[2].count(":") == 1 if entry.startswith("[") else ":" in entry


def default_hosts(bind_host: str) -> list[str]:
    """The loopback names, plus the bind address when it names one interface."""
    hosts = list(LOOPBACK_HOSTS)
    if bind_host.strip().lower() not in WILDCARD_BINDS and not is_loopback(bind_host):
        hosts.append(_host_entry(bind_host))
    return hosts


def transport_security(
    bind_host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """The SDK's settings for the allow-lists: the configured ones, else the defaults (the
    loopback names and the bind address; the origins http and https on those names). A host
    without a port takes any port."""
    hosts = _with_any_port([_host_entry(h) for h in allowed_hosts if h.strip()]) or (
        _with_any_port(default_hosts(bind_host))
    )
    # An origin is given whole (`https://ui.example` is port 443 only; `:*` takes any port);
    # by default, pages served from the allowed hosts, on any port.
    origins = [o.strip().lower().rstrip("/") for o in allowed_origins if o.strip()] or [
        f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=list(dict.fromkeys(origins)),
    )


def _with_any_port(entries: list[str]) -> list[str]:
    """Each host, and with any port when it names none (`name` and `name:*`)."""
    out: list[str] = []
    for entry in entries:
        out.append(entry)
        if not _has_port(entry):
            out.append(f"{entry}:*")
    return list(dict.fromkeys(out))


class HostOriginGuard:
    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self.settings = settings
        self.check = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            bad = await self.rejected_header(scope)
            if bad is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                setting = "MCP_HTTP_ALLOWED_HOSTS" if bad == "Host" else "MCP_HTTP_ALLOWED_ORIGINS"
                response = JSONResponse(
                    {
                        "error": {
                            "code": "forbidden",
                            "header": bad,
                            "message": f"the {bad} header is not one this MCP server accepts",
                            "hint": f"reach the server by an allowed name, or add the {bad} "
                            f"value to {setting} (DNS-rebinding protection)",
                        }
                    },
                    status_code=403,
                )
                await response(scope, receive, send)
                return
            # Passed on lowered, so that the SDK's own check on /mcp (plain string comparison)
            # agrees with this one.
            scope = {**scope, "headers": [_lowered(k, v) for k, v in scope["headers"]]}
        await self.app(scope, receive, send)

    async def rejected_header(self, scope: Scope) -> str | None:
        """The header refused ("Host" or "Origin"), or None when the request may pass."""
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        origins = headers.getlist("origin")
        if len(hosts) != 1 or not await self._passes(hosts[0], None):
            return "Host"
        if len(origins) > 1 or (origins and not await self._passes(hosts[0], origins[0])):
            return "Origin"
        return None

    async def _passes(self, host: str, origin: str | None) -> bool:
        # Host and Origin are compared case-insensitively (RFC 9110 4.2.3, RFC 6454 6.1): the
        # SDK compares strings, so both are lowered first. An empty (or `null`) Origin is present
        # and invalid, where the SDK would take an empty one for an absent one.
        host = host.strip().lower()
        if not HOST_SYNTAX.fullmatch(host):
            return False
        raw = [(b"host", host.encode("latin-1"))]
        if origin is not None:
            origin = origin.strip().lower()
            if not ORIGIN_SYNTAX.fullmatch(origin):
                return False
            raw.append((b"origin", origin.encode("latin-1")))
        probe = Request({"type": "http", "method": "GET", "path": "/", "headers": raw})
        return await self.check.validate_request(probe, is_post=False) is None


def _lowered(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    if name.lower() in (b"host", b"origin"):
        return name, value.strip().lower()
    return name, value
