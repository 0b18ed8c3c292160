"""The versioned envelope every message on the bus travels in."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def utcnow() -> datetime:
    return datetime.now(UTC)


class Envelope(BaseModel):
    # Consumers ignore unknown fields so producers can roll forward first.
    model_config = ConfigDict(extra="ignore", frozen=True)

    message_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    correlation_id: uuid.UUID  # the operation id
    type: str  # the model name: CreateStorageBucket, StageSucceeded, ...
    version: int = 1
    occurred_at: datetime = Field(default_factory=utcnow)
    principal: str
    source: str = "rest"
    payload: dict[str, Any]

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Envelope:
        return cls.model_validate_json(data)
