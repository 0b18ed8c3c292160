"""The MCP service's REST client of the gateway: the only way its tools reach the backend.

Every request carries the service's bearer token and `X-Hyperpilot-Source: mcp` (so events and
the audit log name the face). Every mutation carries an `Idempotency-Key` derived from the tool
name and the canonical JSON of its arguments (docs/operations.md, "Retries and idempotency"):
with a `request_id`, the key names that request for good; without one it is scoped to the
operation's target (`...:target`), so a repeated call, or a transport retry, maps to the
operation the first call created while nothing else happened on that target since, and is a new
request after any other change there (scale to 3, to 2, to 3 again: three operations).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import httpx

from mcp_svc.errors import ToolFailure, from_response

SOURCE = "mcp"
RETRYABLE_STATUS = frozenset({502, 503, 504})
ATTEMPTS = 3


def canonical_json(value: Any) -> str:
    """One spelling of a JSON value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


TARGET_SCOPED = ":target"  # the gateway's mark of a key scoped to the operation's target


def idempotency_key(tool: str, arguments: Mapping[str, Any]) -> str:
    """`mcp:<tool>:<sha256>` of the tool name and its canonical arguments; `:target` appended
    when the call has no `request_id`.

    The arguments are the validated ones with defaults filled in, so two calls that mean the same
    request (an argument left out or given its default) share a key; any difference in value gives
    another key. With a `request_id` the key is the request's for good: it always answers the
    operation it started. Without one the gateway completes the key with the latest operation on
    the target (another change there since makes the same call a new request). Within the
    gateway's 1-200 characters of `[A-Za-z0-9._:-]`.
    """
    digest = hashlib.sha256(canonical_json({"tool": tool, "arguments": arguments}).encode())
    key = f"mcp:{tool}:{digest.hexdigest()}"
    return key if arguments.get("request_id") is not None else key + TARGET_SCOPED


def _present(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters without the unset ones (booleans as true/false)."""
    if not params:
        return None
    return {
        k: ("true" if v else "false") if isinstance(v, bool) else v
        for k, v in params.items()
        if v is not None
    }


class Gateway:
    """An httpx AsyncClient bound to the gateway's base URL and the service's token."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"X-Hyperpilot-Source": SOURCE, "User-Agent": "hyperpilot-mcp"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, extra_timeout: float = 0
    ) -> Any:
        return await self._request(
            "GET", path, params=_present(params), extra_timeout=extra_timeout
        )

    async def mutate(
        self,
        method: str,
        path: str,
        *,
        tool: str,
        arguments: Mapping[str, Any],
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """A mutation keyed by the call: the same call returns the same operation."""
        headers = {"Idempotency-Key": idempotency_key(tool, arguments)}
        return await self._request(
            method, path, params=_present(params), json_body=body, headers=headers
        )

    async def ask(
        self, path: str, body: Mapping[str, Any], params: Mapping[str, Any] | None = None
    ) -> Any:
        """A POST that changes nothing (a model invocation): no idempotency key."""
        return await self._request("POST", path, params=_present(params), json_body=body)

    async def get_page(
        self, path: str, params: Mapping[str, Any] | None = None, *, items: str | None = None
    ) -> tuple[list[Any], str | None, int, Any]:
        """A page of a REST list paged by cursor: its rows (the body, or the body's `items`
        field when the body is an object), the next page's token (None on the last page), the
        rows of the whole list, and the body as sent."""
        response = await self._request("GET", path, params=_present(params), raw=True)
        body = response.json()
        rows = body if items is None else body.get(items) or []
        total = response.headers.get("x-total-count")
        return rows, response.headers.get("x-next-page-token"), int(total or len(rows)), body

    async def get_text(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> tuple[str, dict[str, str]]:
        """A text answer (a log) with its headers."""
        response = await self._request("GET", path, params=_present(params), raw=True)
        return str(response.text), dict(response.headers)

    async def preview(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """The same request with `?dry_run=true`: the gateway answers the plan, stores nothing."""
        query = {**(_present(params) or {}), "dry_run": "true"}
        return await self._request(method, path, params=query, json_body=body)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        extra_timeout: float = 0,
        raw: bool = False,
    ) -> Any:
        timeout = self.timeout + extra_timeout
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = await self.http.request(
                    method,
                    path,
                    params=dict(params) if params else None,
                    json=dict(json_body) if json_body is not None else None,
                    headers=dict(headers) if headers else None,
                    timeout=timeout,
                )
            except httpx.TransportError as exc:
                # Safe to resend: reads change nothing and mutations carry their key.
                if attempt < ATTEMPTS:
                    await asyncio.sleep(0.2 * attempt)
                    continue
                raise ToolFailure(
                    {
                        "code": "gateway_unreachable",
                        "message": f"the gateway at {self.base_url} did not answer ({exc.__class__.__name__})",
                        "hint": "check MCP_GATEWAY_URL and that the gateway is running; the call is safe to repeat",
                    }
                ) from exc
            if response.status_code in RETRYABLE_STATUS and attempt < ATTEMPTS:
                await asyncio.sleep(0.2 * attempt)
                continue
            if raw and not response.is_error:
                return response
            try:
                payload = response.json()
            except ValueError:
                payload = None
            if response.is_error:
                raise from_response(response.status_code, payload, response.text)
            return payload
        raise AssertionError("unreachable: the last attempt returns or raises")
