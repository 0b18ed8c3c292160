"""The gateway's REST API over httpx: the only way the CLI reaches the backend.

Every request carries the bearer token and `X-Hyperpilot-Source: cli`; every mutation carries an
`Idempotency-Key`, reused when the request is retried after a dropped connection or a 502/503/504,
so a retry returns the same operation instead of starting a second one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from pydantic import ValidationError

from hyperpilot import __version__

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 3
EXIT_SERVER = 4
EXIT_INTERRUPTED = 130

RETRYABLE_STATUS = frozenset({502, 503, 504})
MUTATIONS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class CliError(Exception):
    """A failure the CLI reports in a few lines (no traceback) and exits with `exit_code`."""

    exit_code = EXIT_USAGE

    def lines(self) -> list[str]:
        return [f"error: {self}"]


class UsageError(CliError):
    """The command line itself is wrong (a malformed flag value, a missing file)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def lines(self) -> list[str]:
        out = [f"error: {self}"]
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return out


class ApiError(CliError):
    """The gateway answered with an error body: {"error": {code, message, hint, fields}}."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        fields: list[dict[str, Any]] | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.fields = fields or []
        self.method = method
        self.path = path

    @property
    def exit_code(self) -> int:  # type: ignore[override]
        return EXIT_USAGE if 400 <= self.status < 500 else EXIT_SERVER

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        request = response.request
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            fields = error.get("fields")
            return cls(
                response.status_code,
                str(error.get("code", "error")),
                str(error.get("message", response.reason_phrase)),
                hint=error.get("hint"),
                fields=fields if isinstance(fields, list) else None,
                method=request.method,
                path=request.url.path,
            )
        text = response.text.strip()[:300] or response.reason_phrase
        return cls(
            response.status_code,
            "http_error",
            text,
            method=request.method,
            path=request.url.path,
        )

    def lines(self) -> list[str]:
        summary = "; ".join(f"{f.get('field')}: {f.get('message')}" for f in self.fields[:5])
        head = f"error: {self.code} (HTTP {self.status})"
        out = [head if self.fields and self.message == summary else f"{head}: {self.message}"]
        for f in self.fields:
            out.append(
                f"  {f.get('field', '?')}: {f.get('message', '')} (rule {f.get('rule', '?')})"
            )
            if f.get("hint"):
                out.append(f"    hint: {f['hint']}")
        if self.hint:
            out.append(f"  hint: {self.hint}")
        if self.status == 401:
            out.append(
                "  hint: set HYPERPILOT_TOKEN or add a profile: "
                "hyperpilot profile add NAME --url URL --token TOKEN"
            )
        return out


class InvalidRequest(ApiError):
    """A body that fails the contract model the gateway would check it with: refused before it
    is sent, worded as the gateway's 422 (each field with its rule and hint)."""

    @classmethod
    def of(cls, exc: ValidationError) -> InvalidRequest:
        fields = [
            {
                "field": ".".join(str(part) for part in err["loc"]) or "body",
                "rule": err["type"],
                "message": str(err["msg"]).removeprefix("Value error, "),
                "hint": getattr((err.get("ctx") or {}).get("error"), "hint", None),
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        return cls(422, "validation_error", message, fields=fields)

    def lines(self) -> list[str]:
        head, *rest = super().lines()
        return [head.replace("(HTTP 422)", "(checked before sending)"), *rest]


class ConnectionFailed(CliError):
    """The gateway could not be reached (or answered nothing usable)."""

    exit_code = EXIT_SERVER

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach the gateway at {url}: {reason}")
        self.url = url

    def lines(self) -> list[str]:
        return [
            f"error: {self}",
            "  hint: check the URL (--url, HYPERPILOT_URL or the profile) and that the gateway "
            "runs (`hyperpilot status` for the local stack)",
        ]


class Client:
    """A synchronous client of one gateway with one token."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        headers = {
            "X-Hyperpilot-Source": "cli",
            "User-Agent": f"hyperpilot-cli/{__version__}",
            "Accept": "application/json",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """Send one request, retried safely on a dropped connection; raise on an error status."""
        method = method.upper()
        headers: dict[str, str] = {}
        if method in MUTATIONS:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self.http.request(
                    method,
                    path,
                    params=clean,
                    json=json,
                    headers=headers,
                    timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                # A mutation repeats with the same Idempotency-Key: the same operation answers.
                if attempt < self.retries:
                    time.sleep(0.5 * attempt)
                    continue
                raise ConnectionFailed(self.base_url, _reason(exc)) from exc
            if response.status_code in RETRYABLE_STATUS and attempt < self.retries:
                time.sleep(_retry_after(response, attempt))
                continue
            if response.status_code >= 400:
                raise ApiError.from_response(response)
            return response

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> Any:
        """Send one request (see `send`) and return its JSON."""
        response = self.send(method, path, params=params, json=json, timeout=timeout)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ConnectionFailed(
                self.base_url, f"{method} {path} answered non-JSON ({response.status_code})"
            ) from exc

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("POST", path, json=body, params=params)

    def put(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("PUT", path, json=body, params=params)

    def patch(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("PATCH", path, json=body, params=params)

    def delete(self, path: str, **params: Any) -> Any:
        return self.request("DELETE", path, params=params)

    @contextmanager
    def stream(
        self, path: str, params: dict[str, Any], *, read_timeout: float = 45.0
    ) -> Iterator[httpx.Response]:
        """A streaming GET (Server-Sent Events); raises ApiError on an error status."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        after = params.get("after")
        if after is not None:
            headers["Last-Event-ID"] = str(after)
        timeout = httpx.Timeout(10.0, read=read_timeout)
        clean = {k: v for k, v in params.items() if v is not None}
        with self.http.stream(
            "GET", path, params=clean, headers=headers, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise ApiError.from_response(response)
            yield response


def _retry_after(response: httpx.Response, attempt: int) -> float:
    value = response.headers.get("Retry-After", "")
    if value.isdigit():
        return min(float(value), 10.0)
    return 0.5 * attempt


def _reason(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str, str]]:
    """Server-Sent Events from text lines: (id, event type, data); comments are skipped."""
    event_id: str | None = None
    event_type = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield event_id, event_type, "\n".join(data)
            event_id, event_type, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            event_id = value
        elif name == "event":
            event_type = value
        elif name == "data":
            data.append(value)
    if data:
        yield event_id, event_type, "\n".join(data)
