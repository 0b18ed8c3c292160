"""Response models shared by the routes (named by role: XRead, XAccepted)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class OperationAccepted(BaseModel):
    operation_id: str
    status_url: str
    created: bool


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


ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"model": OperationAccepted, "description": "Accepted: poll status_url"}
}
