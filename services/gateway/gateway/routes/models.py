"""Response models shared by the routes (named by role: XRead, XAccepted)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from shared.contracts.plan import Plan


class OperationAccepted(BaseModel):
    # Some routes add the plan's verdict (noop, diff, notes, plan) to the answer.
    model_config = ConfigDict(extra="allow")

    operation_id: str
    status_url: str
    created: bool


class DryRunAnswer(BaseModel):
    """`?dry_run=true`: the plan computed from actual state; nothing was stored or changed."""

    dry_run: Literal[True]
    plan: Plan


class ErrorField(BaseModel):
    field: str
    rule: str
    message: str
    hint: str


class ErrorDetail(BaseModel):
    # Some errors carry more, e.g. `operation_id` (an Idempotency-Key reused with another
    # body) or `retry_after_seconds` (rate limited).
    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    hint: str | None = None
    fields: list[ErrorField] = []


class ErrorBody(BaseModel):
    """Every error the gateway answers (gateway.errors): the code, what happened, what to do."""

    error: ErrorDetail


class StageRead(BaseModel):
    name: str
    title: str
    needs: list[str]
    status: str
    attempts: int
    external_id: str | None
    progress: str | None
    outputs: dict[str, Any]
    error: dict[str, Any] | None
    started_at: str | None
    finished_at: str | None


class EventRead(BaseModel):
    seq: int
    event_id: str
    operation_id: str | None
    type: str
    subject: str
    principal: str
    occurred_at: str | None
    payload: dict[str, Any]


class OperationRead(BaseModel):
    id: str
    kind: str
    target_type: str
    target_id: str
    request: dict[str, Any]
    principal: str
    source: str
    status: str
    cancel_requested: bool = False
    attempt: int
    error: dict[str, Any] | None
    result: dict[str, Any] | None
    created_at: str | None
    updated_at: str | None
    finished_at: str | None
    stages: list[StageRead] = []
    events: list[EventRead] = []


class OperationList(BaseModel):
    items: list[OperationRead]


class RetryAccepted(BaseModel):
    operation_id: str
    status_url: str
    retried_stages: list[str]


_ERROR_DESCRIPTIONS = {
    400: "Unreadable body or malformed header (e.g. Idempotency-Key)",
    401: "No token, or an unknown or revoked one",
    403: "The token's role does not allow this",
    404: "Not known here",
    409: "Conflicts with the current state",
    413: "Body too large",
    422: "A field breaks a rule: the field, the rule and a hint",
    429: "Too many mutations: retry after the time given",
    502: "The cloud call behind the answer failed",
    503: "PostgreSQL or NATS (or the domain service answering) is unavailable",
    504: "The domain service did not answer in time",
}


def ok(model: Any, description: str = "Successful Response") -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` declaring the 200 body's schema, for a route that answers a plain
    dict or list (declared with `response_model=None`, so nothing changes in what it sends)."""
    return {200: {"model": model, "description": description}}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` declaring these error statuses, each with the one error shape."""
    return {
        status: {"model": ErrorBody, "description": _ERROR_DESCRIPTIONS[status]}
        for status in statuses
    }


def as_json(responses: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """`responses` for a route whose 200 is not JSON (a log as text): FastAPI would declare each
    model under the route's media type, but the errors are still JSON."""
    return {
        status: {
            "description": response["description"],
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{response['model'].__name__}"}
                }
            },
        }
        for status, response in responses.items()
    }


# What a read can answer besides 200 (about a named thing: 404, or 409 while it is not ready),
# and a read answered live by a domain service over NATS besides; what a mutation can answer.
READ_ERRORS = errors(401, 403, 404, 409, 422, 503)
LIVE_READ_ERRORS = errors(401, 403, 404, 409, 422, 502, 503, 504)
MUTATION_ERRORS = errors(400, 401, 403, 404, 409, 413, 422, 429, 502, 503, 504)

OPERATION_LINK = {
    "operationId": "get_operation_api_v1_operations__operation_id__get",
    "parameters": {"operation_id": "$response.body#/operation_id"},
    "description": "The accepted operation: poll it until it is terminal",
}


def accepted(links: dict[str, dict[str, Any]] | None = None) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a mutation: 202 with its operation (linked to GET the operation, and
    to `links` besides), the dry run's 200, and the errors a mutation can answer."""
    return {
        202: {
            "model": OperationAccepted,
            "description": "Accepted: poll status_url",
            "links": {"GetOperation": OPERATION_LINK, **(links or {})},
        },
        200: {"model": DryRunAnswer, "description": "?dry_run=true: the plan; nothing done"},
        **MUTATION_ERRORS,
    }


ACCEPTED = accepted()
