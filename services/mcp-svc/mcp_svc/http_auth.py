"""The bearer token in front of the streamable-HTTP endpoint.

The tools act with the MCP service's gateway token, so whoever reaches the HTTP endpoint acts
with that token's role. With a token configured (MCP_HTTP_TOKEN_FILE or MCP_HTTP_TOKEN; required
unless the server is bound to loopback), a request must carry `Authorization: Bearer <token>` or
is answered 401 in the REST error shape, saying which header to set; stdio needs none (the
client launched the process).

The token is a static one, not OAuth: the 401's challenge is a bare `WWW-Authenticate: Bearer`
(RFC 7235 section 3.1 wants one), with no `resource_metadata` (RFC 9728) pointing an MCP client
at an authorization server, and the OAuth discovery documents (`/.well-known/oauth-*`) answer
404 saying the same, so a client that starts the MCP authorization flow on a 401 learns at once
that there is none and what to send instead.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


def bearer_credentials(value: bytes) -> bytes | None:
    """The credentials of an `Authorization: Bearer <token>` value, None for any other value.

    The scheme is matched in any case: RFC 7235 section 2.1, "It uses a case-insensitive token
    to identify the authentication scheme"; RFC 6750 section 2.1 separates it from the token
    by spaces (`"Bearer" 1*SP b64token`)."""
    scheme, separator, rest = value.partition(b" ")
    if not separator or scheme.lower() != b"bearer":
        return None
    credentials = rest.strip(b" ")
    if not credentials or any(c <= 0x20 or c >= 0x7F for c in credentials):
        return None
    return credentials


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


UNAUTHORIZED_HINT = (
    "set the MCP HTTP token: Authorization: Bearer <token> (the value of the server's "
    "MCP_HTTP_TOKEN_FILE or MCP_HTTP_TOKEN); this server does not use OAuth"
)
OAUTH_DISCOVERY = (
    b"/.well-known/oauth-protected-resource",
    b"/.well-known/oauth-authorization-server",
    b"/.well-known/openid-configuration",
)


def unauthorized() -> JSONResponse:
    return JSONResponse(
        {
            "error": {
                "code": "unauthorized",
                "message": "this MCP endpoint needs its bearer token",
                "hint": UNAUTHORIZED_HINT,
            }
        },
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def no_oauth() -> JSONResponse:
    return JSONResponse(
        {
            "error": {
                "code": "not_found",
                "message": "this MCP server has no OAuth authorization server or protected "
                "resource metadata: it takes a static bearer token",
                "hint": UNAUTHORIZED_HINT,
            }
        },
        status_code=404,
    )


class BearerAuth:
    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token would let an empty Authorization header in")
        self.app = app
        # Compared as digests: hmac.compare_digest takes the same time whatever the bytes, and
        # hashing first makes it independent of the length of the token sent, too.
        self.expected = _digest(token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not self.accepts(scope):
            await send({"type": "websocket.close", "code": 1008})  # nothing is served over one
            return
        if scope["type"] == "http" and not self.accepts(scope):
            path = str(scope.get("path", "")).encode()
            discovery = path.startswith(OAUTH_DISCOVERY)
            await (no_oauth() if discovery else unauthorized())(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def accepts(self, scope: Scope) -> bool:
        given = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
        credentials = bearer_credentials(given[0]) if len(given) == 1 else None
        # A digest is compared even when nothing usable was sent, so that case takes as long.
        candidate = _digest(credentials if credentials is not None else b"")
        return hmac.compare_digest(candidate, self.expected) and credentials is not None
