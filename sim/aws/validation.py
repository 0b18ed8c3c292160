"""Input validation against botocore's service model, with AWS's wording.

AWS answers a request that breaks its model's constraints (required members, enums, lengths,
ranges, patterns) with a ValidationException listing each violation as
"Value X at 'path' failed to satisfy constraint: ...". Patterns must match the whole value, as
AWS's validation applies them. Callers that skip boto3's client-side
checks (other SDKs, raw HTTP, `parameter_validation=False`) meet the same wall here.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from botocore.model import Shape

from sim.aws.errors import AwsError, service_model


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


@cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _walk(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            errors.append(f"Value at '{path}' failed to satisfy constraint: must be a structure")
            return
        for name in shape.required_members:
            if value.get(name) is None:
                sub = f"{path}.{_lower_first(name)}" if path else _lower_first(name)
                errors.append(
                    f"Value null at '{sub}' failed to satisfy constraint: Member must not be null"
                )
        members = shape.members
        for name, member_value in value.items():
            if name in members and member_value is not None:
                sub = f"{path}.{_lower_first(name)}" if path else _lower_first(name)
                _walk(members[name], member_value, sub, errors)
        return
    if kind == "list":
        if not isinstance(value, list):
            errors.append(f"Value at '{path}' failed to satisfy constraint: must be a list")
            return
        _check_length(shape, value, len(value), path, errors)
        for index, item in enumerate(value, start=1):
            _walk(shape.member, item, f"{path}.{index}.member", errors)
        return
    if kind == "map":
        if not isinstance(value, dict):
            errors.append(f"Value at '{path}' failed to satisfy constraint: must be a map")
            return
        _check_length(shape, value, len(value), path, errors)
        for key, item in value.items():
            _walk(shape.key, key, f"{path}.key", errors)
            _walk(shape.value, item, f"{path}.{key}.value", errors)
        return
    if kind == "string":
        if not isinstance(value, str):
            return
        enum = shape.enum
        if enum and value not in enum:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must satisfy enum value set: [{', '.join(enum)}]"
            )
        _check_length(shape, value, len(value), path, errors)
        pattern = shape.metadata.get("pattern")
        compiled = _pattern(pattern) if pattern else None
        if compiled is not None and not compiled.fullmatch(value):
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must satisfy regular expression pattern: {pattern}"
            )
        return
    if kind in ("integer", "long", "float", "double") and isinstance(value, int | float):
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have value greater than or equal to {low}"
            )
        if high is not None and value > high:
            errors.append(
                f"Value '{value}' at '{path}' failed to satisfy constraint: "
                f"Member must have value less than or equal to {high}"
            )


def _check_length(shape: Shape, value: Any, length: int, path: str, errors: list[str]) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    prefix = f"Value '{value}' at '{path}'" if isinstance(value, str) else f"Value at '{path}'"
    if low is not None and length < low:
        errors.append(
            f"{prefix} failed to satisfy constraint: "
            f"Member must have length greater than or equal to {low}"
        )
    if high is not None and length > high:
        errors.append(
            f"{prefix} failed to satisfy constraint: "
            f"Member must have length less than or equal to {high}"
        )


def validation_errors(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    """Every violation of the operation's input shape by `params`."""
    shape = service_model(service).operation_model(operation).input_shape
    if shape is None:
        return []
    errors: list[str] = []
    _walk(shape, params, "", errors)
    return errors


def validate(service: str, operation: str, params: dict[str, Any]) -> None:
    """Raise AWS's ValidationException if `params` break the model."""
    errors = validation_errors(service, operation, params)
    if errors:
        count = len(errors)
        noun = "error" if count == 1 else "errors"
        raise AwsError(
            "ValidationException",
            f"{count} validation {noun} detected: " + "; ".join(errors),
        )
