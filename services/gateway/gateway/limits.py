"""What a request may carry, checked at the edge: the body's size (declared length and streamed
bytes, before it is parsed), text PostgreSQL can store (no NUL, no half surrogate pair), and the
bounds of integer query parameters compared with bigint columns."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qsl

import orjson
from annotated_types import Ge, Le
from pydantic import AfterValidator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import ApiError, field_name
from shared.validation import RuleViolation


async def send_json(send: Send, status: int, body: bytes) -> None:
    """Answer an ASGI request with a JSON body, before any route (the edge checks)."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.max_bytes + 1
                if declared > self.max_bytes:
                    await self._refuse(send)
                    return
        if not any(name == b"content-length" for name, _ in scope.get("headers", [])):
            # A body of unknown length (chunked) is read here, up to the limit, then replayed.
            chunks: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_bytes:
                    await self._refuse(send)
                    return
                chunks.append(chunk)
                more = message.get("more_body", False)
            body = b"".join(chunks)
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send) -> None:
        body = orjson.dumps(
            {
                "error": {
                    "code": "body_too_large",
                    "message": f"the request body is larger than {self.max_bytes} bytes",
                    "hint": "send a smaller body; large data belongs in S3, referenced by URI",
                }
            }
        )
        await send_json(send, 413, body)


# The largest value of a PostgreSQL bigint: an integer query parameter compared with a bigint
# column (an event's seq, say) must fit in one, or the database refuses the query.
BIGINT_MAX = 2**63 - 1
NonNegativeBigint = Annotated[int, Ge(0), Le(BIGINT_MAX)]
"""An integer query parameter that PostgreSQL compares with a bigint column: 0 to 2**63-1.

Declare it with its own `Query(...)` for the description: `Annotated[NonNegativeBigint,
Query(description=...)]` (the bounds travel in the type, so a second `Query` keeps them)."""


def seq_text(value: str | None) -> str | None:
    """A header carrying an event's seq (`Last-Event-ID`): ASCII digits within a bigint."""
    if value is None:
        return None
    if not (value.isascii() and value.isdigit() and int(value) <= BIGINT_MAX):
        raise RuleViolation(
            f"{value[:40]!r} is not an event's seq (a whole number from 0 to {BIGINT_MAX})",
            "send the id of the last event received, or leave the header out",
        )
    return value


SeqHeader = Annotated[str | None, AfterValidator(seq_text)]


NUL_RULE = "no_nul"
NUL_HINT = "remove the NUL character (\\u0000)"
SURROGATE_RULE = "no_lone_surrogate"
SURROGATE_HINT = (
    "send valid Unicode: a character beyond U+FFFF is escaped as a pair (\\ud83d\\ude00),"
    " never half of one"
)
INT64_RULE = "int64_range"
INT64_MIN = -(2**63)
INT64_HINT = f"use a whole number from {INT64_MIN} to {BIGINT_MAX}"
# A JSON integer outside 64 bits has at least 19 digits.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")
_MAX_REPORTED = 20


def _text_problem(text: str) -> tuple[str, str, str] | None:
    """What a string holds that PostgreSQL's text (and UTF-8) cannot: (rule, message, hint)."""
    if "\x00" in text:
        return NUL_RULE, "contains the NUL character (\\u0000), which cannot be stored", NUL_HINT
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return (
            SURROGATE_RULE,
            "contains half of a UTF-16 surrogate pair (\\ud800-\\udfff), which is not text",
            SURROGATE_HINT,
        )
    return None


def _field(loc: tuple[Any, ...], rule: str, message: str, hint: str) -> dict[str, Any]:
    return {"field": field_name(loc), "rule": rule, "message": message, "hint": hint}


@dataclass(frozen=True, slots=True)
class _BadKey:
    """A key that cannot be stored, met in its place among its object's values."""

    problem: tuple[str, str, str]


def _in_json(document: Any) -> list[dict[str, Any]]:
    """Every string (value or key) of a parsed JSON body that cannot be stored, and every
    integer beyond 64 bits (what PostgreSQL's bigint, the bus's JSON encoder and Kubernetes
    take), in document order; walked without recursion (a document json.loads accepted may be
    ~1000 levels deep)."""
    found: list[dict[str, Any]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ("body",))]
    while stack and len(found) < _MAX_REPORTED:
        value, loc = stack.pop()
        if isinstance(value, _BadKey):
            rule, message, hint = value.problem
            found.append(_field(loc, rule, f"a key of this object {message}", hint))
        elif isinstance(value, str):
            problem = _text_problem(value)
            if problem:
                found.append(_field(loc, *problem))
        elif isinstance(value, int) and not INT64_MIN <= value <= BIGINT_MAX:
            found.append(_field(loc, INT64_RULE, "is beyond a 64-bit integer", INT64_HINT))
        elif isinstance(value, dict):
            children: list[tuple[Any, tuple[Any, ...]]] = []
            for key, item in value.items():
                problem = _text_problem(key)
                children.append((_BadKey(problem), loc) if problem else (item, (*loc, key)))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(item, (*loc, i)) for i, item in enumerate(value)]))
    return found


def _in_query(query_string: bytes) -> list[dict[str, Any]]:
    if b"%00" not in query_string and b"\x00" not in query_string:
        return []
    found = []
    # Decoded as Starlette decodes it for the routes.
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if "\x00" in key:
            found.append(
                _field(
                    ("query",), NUL_RULE, "a parameter name contains the NUL character", NUL_HINT
                )
            )
        elif "\x00" in value:
            found.append(
                _field(
                    ("query", key),
                    NUL_RULE,
                    "contains the NUL character (\\u0000), which cannot be stored",
                    NUL_HINT,
                )
            )
    return found or [
        _field(("query",), NUL_RULE, "the query string contains the NUL character", NUL_HINT)
    ]


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if (name == b"content-length" and value.strip() != b"0") or name == b"transfer-encoding":
            return True
    return False


class StorableInput:
    """Every request is checked for what cannot be stored before a route sees it, so a dry run
    and the real request answer alike, and nothing reaches the database (or the bus) to fail
    there: the NUL character, which PostgreSQL's text refuses (%00 in the path or the query
    string, \\u0000 in any string or key of a JSON body); in a JSON body, half a UTF-16
    surrogate pair (\\ud800 alone: not text) and an integer beyond 64 bits. Each is a 422
    `validation_error` naming the field (`tags.team`, `query.principal`), with the rule
    (`no_nul`, `no_lone_surrogate`, `int64_range`) and the fix.

    A body is parsed here only when it could hold one (a `\\u` escape, 19 digits in a row),
    with the parser the routes read bodies with (json.loads); other bodies pass untouched. A
    body that does not parse is the route's to refuse (`json_invalid`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        found = []
        if "\x00" in scope.get("path", ""):
            found.append(
                _field(("path",), NUL_RULE, "the URL path contains the NUL character", NUL_HINT)
            )
        found.extend(_in_query(scope.get("query_string", b"")))
        if found:
            await _refuse(scope, send, found)
            return
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        more = True
        while more:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            more = message.get("more_body", False)
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        if b"\\u" in body or _LONG_NUMBER.search(body):
            try:
                document = json.loads(body)
            except (ValueError, RecursionError):
                document = None
            found = _in_json(document)
            if found:
                await _refuse(scope, send, found)
                return

        async def replay() -> Message:
            if messages:
                return messages.pop(0)
            return await receive()

        await self.app(scope, replay, send)


async def _refuse(scope: Scope, send: Send, fields: list[dict[str, Any]]) -> None:
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": summary[:120]})
        return
    body = orjson.dumps(ApiError(422, "validation_error", summary, fields=fields).body())
    await send_json(send, 422, body)
