"""SPDY/3 framing, as the Kubernetes streaming protocols still use it for `pods/portforward`
(moby/spdystream; the SPDY/3 draft, https://www.chromium.org/spdy/spdy-protocol/spdy-protocol-draft3/).

Frames are read from any byte source (the connection itself after an `Upgrade: SPDY/3.1`, or
the binary messages of a WebSocket that tunnels SPDY, as kubectl does since 1.31). Header
blocks are zlib streams primed with the draft's dictionary, one compression context per
direction for the whole connection (draft 3, 2.6.10).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

# The header-compression dictionary of SPDY/3 (draft 3, section 2.6.10.1): length-prefixed
# words, then a run of common strings.
_WORDS = [
    w.replace("_", " ")
    for w in [
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200_OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ]
]
_TAIL = (
    "10010120120220520630030230330430530630740240540640740840941041141241341441541641750250"
    "4505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Reques"
    "t401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemente"
    "d503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon,"
    " Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,appl"
    "ication/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip"
    ",deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(len(w).to_bytes(4, "big") + w.encode() for w in _WORDS) + _TAIL.encode()
assert len(DICTIONARY) == 1423

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1,
    2,
    3,
    4,
    6,
    7,
    8,
    9,
)
FLAG_FIN = 0x01
# RST_STREAM status codes (draft 3, 2.6.3)
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM = 1, 2, 3

ReadExactly = Callable[[int], Awaitable[bytes]]


@dataclass
class Frame:
    control: bool
    kind: int  # a control frame's type; 0 for data
    flags: int
    stream_id: int
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


class Codec:
    """One connection's two header-compression contexts."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def decode_headers(self, block: bytes) -> dict[str, str]:
        raw = self._inflate.decompress(block)
        (count,) = struct.unpack_from("!I", raw, 0)
        at, out = 4, {}
        for _ in range(count):
            (n,) = struct.unpack_from("!I", raw, at)
            name = raw[at + 4 : at + 4 + n].decode("latin-1")
            at += 4 + n
            (n,) = struct.unpack_from("!I", raw, at)
            out[name.lower()] = raw[at + 4 : at + 4 + n].decode("latin-1").replace("\0", ",")
            at += 4 + n
        return out

    def encode_headers(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack("!I", len(headers))
        for name, value in headers.items():
            for part in (name.lower().encode(), value.encode()):
                raw += struct.pack("!I", len(part)) + part
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    async def read(self, read: ReadExactly) -> Frame:
        head = await read(8)
        word, length_flags = struct.unpack("!II", head)
        flags, length = length_flags >> 24, length_flags & 0xFFFFFF
        payload = await read(length) if length else b""
        if not word & 0x80000000:
            return Frame(False, 0, flags, word & 0x7FFFFFFF, payload)
        kind = word & 0xFFFF
        stream_id = struct.unpack_from("!I", payload)[0] & 0x7FFFFFFF if len(payload) >= 4 else 0
        frame = Frame(True, kind, flags, stream_id, payload)
        if kind == SYN_STREAM:
            frame.headers = self.decode_headers(payload[10:])
        elif kind in (SYN_REPLY, HEADERS):
            frame.headers = self.decode_headers(payload[4:])
        return frame

    @staticmethod
    def _control(kind: int, flags: int, payload: bytes) -> bytes:
        return struct.pack("!HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload

    def syn_reply(self, stream_id: int, headers: dict[str, str], fin: bool = False) -> bytes:
        block = struct.pack("!I", stream_id) + self.encode_headers(headers)
        return self._control(SYN_REPLY, FLAG_FIN if fin else 0, block)

    @staticmethod
    def data(stream_id: int, data: bytes, fin: bool = False) -> bytes:
        flags = FLAG_FIN if fin else 0
        return struct.pack("!II", stream_id & 0x7FFFFFFF, (flags << 24) | len(data)) + data

    def rst(self, stream_id: int, status: int) -> bytes:
        return self._control(RST_STREAM, 0, struct.pack("!II", stream_id, status))

    def ping(self, ping_id: int) -> bytes:
        return self._control(PING, 0, struct.pack("!I", ping_id))
