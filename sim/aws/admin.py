"""The admin API under /_sim/ (JSON): how other processes read the call log and inventory,
arm faults and configure the account.

GET /_sim/health | GET, DELETE /_sim/calls?service=&operation= | GET /_sim/inventory |
GET, POST, DELETE /_sim/faults | DELETE /_sim/faults/<id> | GET, PUT /_sim/account

A simulation of several regions answers each of these for the region `?region=` names (the home
region without one)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from sim.aws.context import SimContext

StartResponse = Callable[..., Any]


class AdminApi:
    def __init__(
        self,
        ctx: SimContext,
        inventory: Callable[[], dict[str, list[str]]],
        endpoint: Callable[[], str],
    ) -> None:
        self.ctx = ctx
        self.inventory = inventory
        self.endpoint = endpoint

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "").rstrip("/")
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        try:
            status, result = self._route(method, path, query, environ)
        except (ValueError, KeyError, TypeError) as exc:
            status, result = 400, {"error": str(exc)}
        payload = json.dumps(result).encode()
        reasons = {
            200: "OK",
            201: "Created",
            400: "Bad Request",
            404: "Not Found",
            405: "Method Not Allowed",
        }
        start_response(
            f"{status} {reasons.get(status, 'Unknown')}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
        )
        return [payload]

    def _route(
        self, method: str, path: str, query: dict[str, str], environ: dict[str, Any]
    ) -> tuple[int, Any]:
        ctx = self.ctx
        if path == "/_sim/health" and method == "GET":
            return 200, {
                "status": "ok",
                "endpoint": self.endpoint(),
                "profile": ctx.profile.name,
                "region": ctx.region,
                "account_id": ctx.account_id,
            }
        if path == "/_sim/calls":
            if method == "GET":
                return 200, {"calls": ctx.calls.query(query.get("service"), query.get("operation"))}
            if method == "DELETE":
                ctx.calls.clear()
                return 200, {"cleared": True}
        if path == "/_sim/inventory" and method == "GET":
            ctx.scheduler.run_due()
            return 200, self.inventory()
        if path == "/_sim/faults":
            if method == "GET":
                return 200, {"faults": [f.as_dict() for f in ctx.faults.armed()]}
            if method == "POST":
                body = _json(environ)
                kind = body.pop("kind")
                ctx.scheduler.run_due()
                return 201, ctx.faults.inject(kind, **body).as_dict()
            if method == "DELETE":
                ctx.faults.clear()
                return 200, {"cleared": True}
        if path.startswith("/_sim/faults/") and method == "DELETE":
            ctx.faults.clear(path.rsplit("/", 1)[-1])
            return 200, {"cleared": True}
        if path == "/_sim/account":
            if method == "GET":
                return 200, ctx.account.to_json()
            if method == "PUT":
                ctx.account.update(_json(environ))
                return 200, ctx.account.to_json()
        return 404, {"error": f"no admin route {method} {path}"}


def _json(environ: dict[str, Any]) -> dict[str, Any]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b"{}"
    value = json.loads(raw or b"{}")
    if not isinstance(value, dict):
        raise ValueError("the body must be a JSON object")
    return value
