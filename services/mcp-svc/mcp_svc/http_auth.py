"""An optional bearer token in front of the streamable-HTTP endpoint.

The tools act with the MCP service's gateway token, so whoever reaches the HTTP endpoint acts
with that token's role. With `MCP_HTTP_TOKEN` set, a request must carry
`Authorization: Bearer <MCP_HTTP_TOKEN>` or is answered 401 in the REST error shape; stdio needs
none (the client launched the process).
"""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class BearerAuth:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse(
                    {
                        "error": {
                            "code": "unauthorized",
                            "message": "this MCP endpoint needs its bearer token",
                            "hint": "send Authorization: Bearer <MCP_HTTP_TOKEN>",
                        }
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
