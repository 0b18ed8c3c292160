"""Errors that decide what happens next: retry later, or fail for good with a next step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class StageError(Exception):
    """A failure with the code the cloud gave, a human message and the suggested next step."""

    code: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class PermanentError(StageError):
    """Retrying the same call cannot succeed: fail the stage (a user may retry after a fix)."""


class TemporaryError(StageError):
    """Throttling, 5xx, a dropped connection: retry the same call after a delay."""


class DatabaseUnavailable(Exception):
    """PostgreSQL cannot be reached; the gateway answers 503, consumers redeliver."""
