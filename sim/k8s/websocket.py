"""The server side of RFC 6455 WebSockets on asyncio streams, as the API server's streaming
subresources need it (`pods/exec`, `pods/attach`, `pods/portforward`).

Only what those protocols use: binary and text messages (fragmented ones reassembled), ping
answered with pong, close answered and ended. Client frames must be masked (RFC 6455 5.1);
server frames are not.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import struct

from sim.k8s.errors import ApiError

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 1.3

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE = 16 << 20


def accept_key(key: str) -> str:
    """`Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key` (RFC 6455 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


def is_upgrade(headers: dict[str, str]) -> bool:
    return headers.get("upgrade", "").lower() == "websocket" and "upgrade" in (
        headers.get("connection", "").lower()
    )


def negotiate(headers: dict[str, str], supported: tuple[str, ...]) -> tuple[dict[str, str], str]:
    """The 101 answer's headers and the chosen subprotocol: the first of the client's offers
    (in its order, as the API server's wsstream does) that the server speaks."""
    key = headers.get("sec-websocket-key", "")
    if not key or headers.get("sec-websocket-version", "") != "13":
        raise ApiError(400, "a WebSocket upgrade needs Sec-WebSocket-Key and version 13")
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    chosen = next((p for p in offered if p in supported), "")
    if offered and not chosen:
        raise ApiError(
            400,
            f"unable to upgrade: none of the requested protocols ({', '.join(offered)}) is "
            f"supported: use one of {', '.join(supported)}",
        )
    answer = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Accept": accept_key(key),
    }
    if chosen:
        answer["Sec-WebSocket-Protocol"] = chosen
    return answer, chosen


def frame(opcode: int, payload: bytes) -> bytes:
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


class Closed(Exception):
    """The peer closed the connection (or it broke)."""


class WebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.closed = False
        self._write_lock = asyncio.Lock()

    async def _frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = await self.reader.readexactly(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", await self.reader.readexactly(8))
        if n > MAX_MESSAGE:
            raise Closed("message too large")
        if not b1 & 0x80:
            raise Closed("client frames must be masked")
        mask = await self.reader.readexactly(4)
        data = bytearray(await self.reader.readexactly(n))
        for i in range(n):
            data[i] ^= mask[i % 4]
        return bool(b0 & 0x80), b0 & 0x0F, bytes(data)

    async def receive(self) -> tuple[int, bytes]:
        """The next data message (TEXT or BINARY); raises `Closed` when the peer closes."""
        opcode, parts = -1, []
        while True:
            try:
                fin, op, data = await self._frame()
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                self.closed = True
                raise Closed(str(exc)) from exc
            if op == PING:
                await self._send(PONG, data)
                continue
            if op == PONG:
                continue
            if op == CLOSE:
                await self.close(struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1000)
                raise Closed("closed by the peer")
            if op != CONTINUATION:
                opcode = op
            parts.append(data)
            if fin:
                return opcode, b"".join(parts)

    async def _send(self, opcode: int, payload: bytes) -> None:
        if self.closed and opcode != CLOSE:
            return
        async with self._write_lock:
            self.writer.write(frame(opcode, payload))
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()

    async def send(self, payload: bytes, *, text: bool = False) -> None:
        await self._send(TEXT if text else BINARY, payload)

    async def close(self, code: int = 1000) -> None:
        if self.closed:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._send(CLOSE, struct.pack("!H", code))
        self.closed = True
