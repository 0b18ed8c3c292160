"""The base of request and command models: strict at the edge, lenient on the bus.

A REST body (or an MCP argument) is validated with unknown fields rejected; the same model read
from the bus with `from_payload` drops fields it does not know, so producers can roll forward
first. One definition of every field and rule serves REST, MCP, the UI and the services.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

LENIENT = {"lenient": True}


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_on_the_bus(cls, data: Any, info: ValidationInfo) -> Any:
        if info.context and info.context.get("lenient") and isinstance(data, dict):
            known = {f.alias or name for name, f in cls.model_fields.items()} | set(
                cls.model_fields
            )
            return {k: v for k, v in data.items() if k in known}
        return data

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        """Read a model from the bus, ignoring fields a newer producer added."""
        return cls.model_validate(payload, context=LENIENT)
