"""`python -m mcp_svc`: the MCP server over stdio (default) or streamable HTTP (path /mcp).

    python -m mcp_svc [--transport stdio|streamable-http] [--host H] [--port 8765] [--allow-write]

Environment: MCP_GATEWAY_URL, MCP_GATEWAY_TOKEN, MCP_ALLOW_WRITE (default false).
"""

from __future__ import annotations

import argparse
import logging
import sys

import anyio

from mcp_svc.config import McpSettings
from mcp_svc.server import build_server


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mcp_svc", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--transport", choices=("stdio", "streamable-http"), default="stdio", help="default: stdio"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="streamable-http: address to listen on (0.0.0.0 in containers)",
    )
    parser.add_argument(
        "--port", type=int, default=8765, help="streamable-http: port (default 8765)"
    )
    parser.add_argument(
        "--allow-write",
        action="store_true",
        default=None,
        help="allow the mutating tools (default: MCP_ALLOW_WRITE, else off)",
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    settings = McpSettings()
    if args.allow_write:
        settings = settings.model_copy(update={"allow_write": True})
    server = build_server(settings)
    try:
        if args.transport == "stdio":
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=args.host, port=args.port)
    finally:
        if server.gateway is not None:
            await server.gateway.aclose()


def main(argv: list[str] | None = None) -> None:
    # stdout carries the protocol on stdio: logs go to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    anyio.run(serve, parse_args(argv))


if __name__ == "__main__":
    main()
