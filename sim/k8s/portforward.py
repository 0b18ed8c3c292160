"""`pods/portforward` as the kubelet serves it (k8s.io/kubelet/pkg/cri/streaming/portforward):

- SPDY/3.1 with the `portforward.k8s.io` stream protocol, over the upgraded connection or
  tunnelled in a WebSocket (`SPDY/3.1+portforward.k8s.io`, what kubectl uses since 1.31): each
  forwarded connection is a pair of streams with the same `requestID`, an error stream and a
  data stream, naming the `port`.
- WebSockets `v4.channel.k8s.io` with `?ports=` (the official Python client): two channels per
  port, data (2i) and error (2i+1), each opened by the port as two little-endian bytes.

What listens is what the pod's containers declare (`ports[].containerPort`); they speak HTTP/1.1,
answered as the API server's proxy answers (`sim.k8s.proxy.serve`: health paths, the
OpenAI-compatible API of model servers). A port nobody declares refuses the connection, in the
kubelet's words, on the error stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from sim.k8s import spdy, websocket
from sim.k8s.errors import ApiError
from sim.k8s.http import STATUS_TEXT, Request, UpgradeResponse
from sim.k8s.proxy import serve
from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

TUNNEL = "SPDY/3.1+portforward.k8s.io"
CHANNELS = "v4.channel.k8s.io"
STREAM_PROTOCOL = "portforward.k8s.io"

Write = Callable[[bytes], Awaitable[None]]


def _listening(pod: Obj) -> dict[int, Obj]:
    return {
        int(p["containerPort"]): c
        for c in pod["spec"].get("containers") or []
        for p in c.get("ports") or []
        if str(p.get("protocol", "TCP")) == "TCP" and p.get("containerPort")
    }


def _refused(pod: Obj, port: str) -> str:
    meta = pod["metadata"]
    return (
        f"error forwarding port {port} to pod {meta['name']}, uid {meta.get('uid', '')}: "
        f"failed to connect to localhost:{port} inside the pod's network namespace: "
        f"dial tcp4 127.0.0.1:{port}: connect: connection refused"
    )


class Connection:
    """One forwarded TCP connection into the pod: HTTP/1.1 requests in, answers out."""

    def __init__(self, server: ApiServer, pod: Obj, container: Obj) -> None:
        self.server, self.pod, self.container = server, pod, container
        self.buffer = b""

    def feed(self, data: bytes) -> bytes:
        self.buffer += data
        out = b""
        while b"\r\n\r\n" in self.buffer:
            head, rest = self.buffer.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                self.buffer = b""  # not HTTP: the simulated servers do not answer it
                return out
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])
            }
            length = int(headers.get("content-length", "0") or 0)
            if len(rest) < length:
                return out
            body, self.buffer = rest[:length], rest[length:]
            status, answer, ctype = serve(
                self.server, self.pod, self.container, parts[0], parts[1], body, "127.0.0.1"
            )
            out += (
                f"HTTP/1.1 {status} {STATUS_TEXT.get(status, 'Status')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(answer)}\r\n"
                f"Date: {email.utils.formatdate(usegmt=True)}\r\n\r\n"
            ).encode() + answer
        return out


def portforward_upgrade(
    server: ApiServer, req: Request, namespace: str, name: str
) -> UpgradeResponse:
    pods = server.api.registry.lookup("", "v1", "pods")
    assert pods is not None
    pod = server.api.get_raw(pods, namespace, name)
    if not pod["spec"].get("nodeName"):
        raise ApiError(400, f"pod {name} does not have a host assigned")
    if (pod.get("status") or {}).get("phase") != "Running":
        raise ApiError(400, f"unable to upgrade connection: pod {name} is not running")
    if websocket.is_upgrade(req.headers):
        headers, protocol = websocket.negotiate(req.headers, (TUNNEL, CHANNELS))
        if protocol == CHANNELS:
            ports = [p.strip() for k, v in req.query_items if k == "ports" for p in v.split(",")]
            if not ports or not all(p.isdigit() and 0 < int(p) < 65536 for p in ports):
                raise ApiError(400, 'query parameter "ports" is required: the pod ports to forward')

            async def channels(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                ws = websocket.WebSocket(reader, writer)
                try:
                    await _channels(server, pod, ws, [int(p) for p in ports])
                except websocket.Closed:
                    pass
                finally:
                    await ws.close()

            return UpgradeResponse(headers, channels)

        async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            ws = websocket.WebSocket(reader, writer)
            buffer = bytearray()

            async def read(n: int) -> bytes:
                while len(buffer) < n:
                    _, message = await ws.receive()
                    buffer.extend(message)
                chunk = bytes(buffer[:n])
                del buffer[:n]
                return chunk

            try:
                await _spdy(server, pod, read, ws.send)
            except websocket.Closed:
                pass
            finally:
                await ws.close()

        return UpgradeResponse(headers, tunnel)
    if req.headers.get("upgrade", "").lower() == "spdy/3.1":
        offered = [p.strip() for p in req.headers.get("x-stream-protocol-version", "").split(",")]
        if STREAM_PROTOCOL not in offered:
            raise ApiError(400, f"unable to upgrade: the stream protocol must be {STREAM_PROTOCOL}")

        async def direct(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            async def write(data: bytes) -> None:
                writer.write(data)
                await writer.drain()

            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                await _spdy(server, pod, reader.readexactly, write)

        return UpgradeResponse(
            {
                "Connection": "Upgrade",
                "Upgrade": "SPDY/3.1",
                "X-Stream-Protocol-Version": STREAM_PROTOCOL,
            },
            direct,
        )
    raise ApiError(400, "unable to upgrade connection: use a WebSocket or SPDY/3.1 upgrade")


async def _spdy(
    server: ApiServer, pod: Obj, read: Callable[[int], Awaitable[bytes]], write: Write
) -> None:
    codec = spdy.Codec()
    listening = _listening(pod)
    pairs: dict[str, dict[str, int]] = {}  # requestID -> stream type -> stream id
    open_: dict[int, tuple[Connection, int]] = {}  # data stream -> (connection, error stream)
    early: dict[int, bytes] = {}  # data that came before its pair was complete
    while True:
        try:
            frame = await codec.read(read)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        if frame.control:
            if frame.kind == spdy.SYN_STREAM:
                await write(codec.syn_reply(frame.stream_id, {}))
                request = frame.headers.get("requestid", "")
                kind = frame.headers.get("streamtype", "")
                pair = pairs.setdefault(request, {})
                pair[kind] = frame.stream_id
                pair.setdefault("port", int(frame.headers.get("port", "0") or 0))
                if "data" in pair and "error" in pair:
                    port = pair["port"]
                    if port not in listening:
                        await write(
                            codec.data(pair["error"], _refused(pod, str(port)).encode(), True)
                        )
                        await write(codec.data(pair["data"], b"", True))
                        pairs.pop(request, None)
                        continue
                    conn = Connection(server, pod, listening[port])
                    open_[pair["data"]] = (conn, pair["error"])
                    if pair["data"] in early:
                        answer = conn.feed(early.pop(pair["data"]))
                        if answer:
                            await write(codec.data(pair["data"], answer))
            elif frame.kind == spdy.PING:
                await write(codec.ping(frame.stream_id))
            elif frame.kind == spdy.GOAWAY:
                return
            elif frame.kind == spdy.RST_STREAM:
                open_.pop(frame.stream_id, None)
            continue
        found = open_.get(frame.stream_id)
        if found is None:
            early[frame.stream_id] = early.get(frame.stream_id, b"") + frame.data
            continue
        conn, error_stream = found
        answer = conn.feed(frame.data)
        if answer:
            await write(codec.data(frame.stream_id, answer))
        if frame.fin:  # the client is done sending: the connection ends, as the server closes it
            await write(codec.data(frame.stream_id, b"", True))
            await write(codec.data(error_stream, b"", True))
            open_.pop(frame.stream_id, None)


async def _channels(server: ApiServer, pod: Obj, ws: websocket.WebSocket, ports: list[int]) -> None:
    listening = _listening(pod)
    conns: dict[int, Connection] = {}
    for i, port in enumerate(ports):
        for channel in (2 * i, 2 * i + 1):
            await ws.send(bytes([channel]) + port.to_bytes(2, "little"))
        if port in listening:
            conns[2 * i] = Connection(server, pod, listening[port])
        else:
            await ws.send(bytes([2 * i + 1]) + _refused(pod, str(port)).encode())
    while True:
        _, message = await ws.receive()
        if not message:
            continue
        conn = conns.get(message[0])
        if conn is None:
            continue
        answer = conn.feed(message[1:])
        if answer:
            await ws.send(bytes([message[0]]) + answer)
