"""One error shape for every face (browser, REST, MCP, CLI): the field, the rule, what to do.

{"error": {"code": "validation_error", "message": "...",
           "fields": [{"field": "name", "rule": "string_pattern_mismatch",
                       "message": "...", "hint": "..."}]}}
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from shared.db import CONNECTION_ERRORS
from shared.errors import DatabaseUnavailable
from shared.logging import get_logger
from shared.pattern_words import pattern_hint, schema_message
from shared.validation import RuleViolation, bounds_hint, items_hint, length_hint

log = get_logger("gateway.errors")


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        fields: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.fields = fields or []
        self.extra = extra or {}
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            error["hint"] = self.hint
        if self.fields:
            error["fields"] = self.fields
        error.update(self.extra)
        return {"error": error}


def field_error(field: str, rule: str, message: str, hint: str) -> ApiError:
    """A 422 about one field: for rules checked after parsing (against live state, say)."""
    return ApiError(
        422,
        "validation_error",
        f"{field}: {message}",
        fields=[{"field": field, "rule": rule, "message": message, "hint": hint}],
    )


_TYPE_HINTS = {
    "missing": "add this field",
    "string_type": "send a JSON string",
    "int_type": "send a JSON integer",
    "int_parsing": "send a whole number",
    "float_parsing": "send a number",
    "bool_type": "send true or false",
    "bool_parsing": "send true or false",
    "dict_type": "send a JSON object",
    "list_type": "send a JSON array",
    "model_attributes_type": "send a JSON object",
    "uuid_parsing": "send a UUID such as 123e4567-e89b-12d3-a456-426614174000",
    "json_invalid": "send a well-formed JSON document (check quotes, commas and brackets)",
}


def _allowed_fields(request: Request) -> list[str]:
    route = request.scope.get("route")
    body_field = getattr(route, "body_field", None)
    field_info = getattr(body_field, "field_info", None)
    model = getattr(field_info, "annotation", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return []


def _hint(err: dict[str, Any], request: Request) -> str:
    rule = err.get("type", "")
    ctx = err.get("ctx") or {}
    if rule == "extra_forbidden":
        allowed = _allowed_fields(request)
        return "remove this field" + (f"; accepted fields: {', '.join(allowed)}" if allowed else "")
    if rule == "string_pattern_mismatch":
        return pattern_hint(ctx.get("pattern"))
    if rule in ("string_too_short", "string_too_long"):
        return length_hint(ctx)
    if rule in ("too_short", "too_long"):
        return items_hint(ctx)
    if rule in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return bounds_hint(ctx)
    if rule in ("literal_error", "enum"):
        return f"use one of {ctx.get('expected')}"
    if rule == "value_error":
        error = ctx.get("error")
        hint = getattr(error, "hint", None)
        return str(hint) if hint else "correct the value as the message says"
    return _TYPE_HINTS.get(rule, "correct this value (see the request schema in /openapi.json)")


def field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, rest = parts[0], parts[1:]
        if where == "body":
            return ".".join(rest) or "body"
        return f"{where}.{'.'.join(rest)}" if rest else where
    return ".".join(parts)


def _message(err: dict[str, Any]) -> str:
    return schema_message(err)


async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        message = _message(err)
        if err.get("type") == "json_invalid":
            # The location of a decode error is a character offset, not a field.
            message = f"{message} at character {loc[-1]}" if len(loc) > 1 else message
            loc = ("body",)
        fields.append(
            {
                "field": field_name(loc),
                "rule": err.get("type", "invalid"),
                "message": message,
                "hint": _hint(err, request),
            }
        )
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    error = ApiError(422, "validation_error", summary, fields=fields)
    return JSONResponse(error.body(), status_code=422)


# How long a client waits before retrying a 503 (PostgreSQL or NATS unreachable, no service to
# answer): a short, fixed time; the outage itself has no known end.
RETRY_AFTER_SECONDS = 2


def retry_after(status: int, headers: dict[str, str] | None = None) -> dict[str, str]:
    """`headers` with Retry-After added to a 429 or 503 that does not name its own."""
    headers = dict(headers or {})
    if status in (429, 503) and not any(k.lower() == "retry-after" for k in headers):
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return headers


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse(
        exc.body(), status_code=exc.status, headers=retry_after(exc.status, exc.headers) or None
    )


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code == 400 and "parsing the body" in str(exc.detail):
        unreadable = ApiError(
            400,
            "validation_error",
            "body: the request body could not be read as UTF-8 JSON",
            fields=[
                {
                    "field": "body",
                    "rule": "body_unreadable",
                    "message": "the body is not valid UTF-8 JSON",
                    "hint": "send UTF-8 encoded JSON with Content-Type: application/json",
                }
            ],
        )
        return JSONResponse(unreadable.body(), status_code=400)
    code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden"}
    message, hint = str(exc.detail), None
    if exc.status_code in (404, 405) and exc.detail in ("Not Found", "Method Not Allowed"):
        message = f"no route for {request.method} {request.url.path}"
        hint = "the routes are listed in /openapi.json and /docs"
    body = ApiError(
        exc.status_code, code.get(exc.status_code, "http_error"), message, hint=hint
    ).body()
    headers = retry_after(exc.status_code, getattr(exc, "headers", None))
    return JSONResponse(body, status_code=exc.status_code, headers=headers or None)


async def _database_down(request: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable", error=repr(exc))
    error = ApiError(
        503,
        "database_unavailable",
        "PostgreSQL is unreachable, so nothing was stored",
        hint="retry shortly with the same Idempotency-Key; /readyz shows when it is back",
    )
    return JSONResponse(error.body(), status_code=503, headers=retry_after(503))


async def _rule_violation(request: Request, exc: RuleViolation) -> JSONResponse:
    """A rule checked inside a route (not by the body model) is still the caller's error."""
    error = ApiError(422, "validation_error", str(exc), hint=exc.hint)
    return JSONResponse(error.body(), status_code=422)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", path=request.url.path)
    error = ApiError(
        500,
        "internal_error",
        f"{type(exc).__name__} while serving {request.method} {request.url.path}",
        hint="this is a defect in Hyperpilot; the gateway log has the details",
    )
    return JSONResponse(error.body(), status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RuleViolation, _rule_violation)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(DatabaseUnavailable, _database_down)
    for exc_type in CONNECTION_ERRORS:
        app.add_exception_handler(exc_type, _database_down)  # type: ignore[arg-type]
