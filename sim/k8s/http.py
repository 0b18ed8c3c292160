"""A small HTTP/1.1 server on asyncio streams: keep-alive, TLS, chunked streaming responses.

Written for the API server's needs (watch and log streams that live as long as the client,
thousands of small GETs a second on one core) rather than taken from a framework: uvicorn
without its C parsers spends most of its time in h11.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

STATUS_TEXT = {
    101: "Switching Protocols",
    200: "OK",
    201: "Created",
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    410: "Gone",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    query_items: list[tuple[str, str]] = field(
        default_factory=list
    )  # repeated keys kept (exec's command)


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class StreamResponse:
    """A chunked response; `chunks` runs until it ends or the client goes away."""

    status: int
    chunks: AsyncIterator[bytes]
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class UpgradeResponse:
    """101 Switching Protocols (a WebSocket): `run` owns the connection from then on."""

    headers: dict[str, str]
    run: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


Handler = Callable[[Request], Awaitable[Response | StreamResponse | UpgradeResponse]]


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {STATUS_TEXT.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class HttpServer:
    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None) -> None:
        self.handler = handler
        self.ssl_context = ssl_context
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self, host: str, port: int) -> int:
        self.server = await asyncio.start_server(
            self._connection, host, port, ssl=self.ssl_context, limit=1 << 20, backlog=1024
        )
        sock = self.server.sockets[0]
        bound: int = sock.getsockname()[1]
        return bound

    async def stop(self) -> None:
        """Drop every connection; streams notice within a second and end on their own."""
        if self.server is not None:
            self.server.close()
        for writer in list(self.writers):
            writer.transport.abort()
        if self.connections:
            _, pending = await asyncio.wait(list(self.connections), timeout=3)
            for task in pending:
                task.cancel()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        self.writers.add(writer)
        try:
            while await self._one_request(reader, writer):
                pass
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            ssl.SSLError,
            asyncio.LimitOverrunError,
        ):
            pass
        finally:
            self.connections.discard(task)
            self.writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        line = await reader.readline()
        if not line:
            return False
        try:
            method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        except ValueError:
            return False
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    await reader.readline()
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(parts)
        url = urlsplit(target)
        items = parse_qsl(url.query, keep_blank_values=True)
        request = Request(method.upper(), unquote(url.path), dict(items), headers, body)
        request.query_items = items
        response = await self.handler(request)
        if isinstance(response, UpgradeResponse):
            writer.write(_head(101, response.headers))
            await writer.drain()
            await response.run(reader, writer)
            return False
        keep_alive = headers.get("connection", "").lower() != "close"
        if isinstance(response, Response):
            out = {
                "Content-Type": response.content_type,
                "Content-Length": str(len(response.body)),
                "Cache-Control": "no-cache, private",
                **response.headers,
            }
            if not keep_alive:
                out["Connection"] = "close"
            writer.write(_head(response.status, out) + response.body)
            await writer.drain()
            return keep_alive
        await self._stream(reader, writer, request, response)
        return False

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: Request,
        response: StreamResponse,
    ) -> None:
        out = {
            "Content-Type": response.content_type,
            "Transfer-Encoding": "chunked",
            "Cache-Control": "no-cache, private",
            "Connection": "close",
            **response.headers,
        }
        writer.write(_head(response.status, out))
        await writer.drain()

        async def watch_eof() -> None:
            with contextlib.suppress(Exception):
                while await reader.read(1024):
                    pass
            request.disconnected.set()

        eof = asyncio.create_task(watch_eof())
        try:
            async for chunk in response.chunks:
                if request.disconnected.is_set():
                    break
                if chunk:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
            if not request.disconnected.is_set():
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        finally:
            eof.cancel()
            aclose = getattr(response.chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
