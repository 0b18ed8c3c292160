"""`python -m mcp_svc`: the MCP server over stdio (default) or streamable HTTP (path /mcp).

    python -m mcp_svc [--transport stdio|streamable-http] [--host H] [--port 8765] [--allow-write]

Environment: MCP_GATEWAY_URL, MCP_GATEWAY_TOKEN, MCP_ALLOW_WRITE (default false), and
MCP_TRANSPORT / MCP_HOST / MCP_PORT as defaults of the flags; a value holding an unexpanded
`${...}` (an agent config's placeholder its client did not substitute) stops the start. Streamable HTTP: the bearer token
clients send, MCP_HTTP_TOKEN_FILE (a file, e.g. a secret mount) or MCP_HTTP_TOKEN (required
unless bound to loopback), and the allow-lists MCP_HTTP_ALLOWED_HOSTS / MCP_HTTP_ALLOWED_ORIGINS.
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from mcp_svc.config import McpConfigError, load_settings, require_http_token
from mcp_svc.server import build_server


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mcp_svc", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--transport",
        choices=("stdio", "streamable-http"),
        help="default: MCP_TRANSPORT, else stdio",
    )
    parser.add_argument(
        "--host",
        help="streamable-http: address (default MCP_HOST, else 127.0.0.1; 0.0.0.0 in containers);"
        " beyond loopback it needs MCP_HTTP_TOKEN_FILE or MCP_HTTP_TOKEN",
    )
    parser.add_argument(
        "--port", type=int, help="streamable-http: port (default MCP_PORT, else 8765)"
    )
    parser.add_argument(
        "--allow-write",
        action="store_true",
        default=None,
        help="allow the mutating tools (default: MCP_ALLOW_WRITE, else off)",
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    # First of all: a setting it cannot start with (an unexpanded `${...}`, a bad port) stops it
    # here, naming the setting, before a tool call could fail far from the cause.
    settings = load_settings(
        transport=args.transport,
        host=args.host,
        port=args.port,
        allow_write=True if args.allow_write else None,
    )
    log = logging.getLogger("mcp_svc")
    if settings.transport == "streamable-http":
        # Before anything else: beyond loopback, no token means no server.
        token = settings.resolved_http_token()
        require_http_token(settings.host, token)
        if token is None:
            log.warning(
                "no MCP_HTTP_TOKEN_FILE or MCP_HTTP_TOKEN: any local process reaching %s:%s "
                "acts with the gateway token",
                settings.host,
                settings.port,
            )
    if settings.gateway_token is None:
        log.warning("MCP_GATEWAY_TOKEN is not set: the gateway will refuse every tool call")
    log.info(
        "hyperpilot MCP server: %s, gateway %s, writes %s",
        settings.transport,
        settings.gateway_url,
        "allowed" if settings.allow_write else "off (read-only)",
    )
    server = build_server(settings)
    try:
        if settings.transport == "stdio":
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=settings.host, port=settings.port)
    finally:
        if server.gateway is not None:
            await server.gateway.aclose()


def main(argv: list[str] | None = None) -> None:
    # stdout carries the protocol on stdio: logs go to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        anyio.run(serve, parse_args(argv))
    except McpConfigError as exc:
        # A setting it cannot start with: exit 2 with the message, no traceback.
        logging.getLogger("mcp_svc").error("%s", exc)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
