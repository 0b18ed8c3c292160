"""Input validation against botocore's service model, before any handler (ours or moto's) runs.

Every request the endpoint understands is checked against its operation's input shape:
required members, JSON types, enums, string lengths, list and map sizes, numeric ranges and
patterns (applied to the whole value, as AWS applies them). A request that breaks the model is
answered in the service's own error shape, never reaches a handler, and so is never stored:

- JSON protocols (SageMaker, Service Quotas, FSx, SSM...): `ValidationException`,
  "N validation errors detected: Value X at 'path' failed to satisfy constraint: ..." as
  SageMaker words it (the message format of the Coral framework behind every JSON service).
- EKS (rest-json): `InvalidParameterException` with the same sentence naming the member path;
  the EKS API reference lists InvalidParameterException for "the specified parameter is
  invalid" on every operation (https://docs.aws.amazon.com/eks/latest/APIReference/CommonErrors.html
  and each action's Errors section). Other rest-json services use the first of their modelled
  InvalidParameterException / BadRequestException / ValidationException.
- Query protocols (IAM, STS, CloudFormation): `ValidationError` ("The input fails to satisfy
  the constraints specified by an AWS service"), EC2: `MissingParameter` for a required member
  and `InvalidParameterValue` otherwise, as the Common Errors pages list them
  (https://docs.aws.amazon.com/IAM/latest/APIReference/CommonErrors.html,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
- S3 (rest-xml): `InvalidArgument` (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html).

A member of the wrong JSON type (a string where the model says integer, `1.5` for an integer,
`true` for a string) is refused with the same code and the member path. Coral's JSON services
answer some type mismatches as `SerializationException` without naming the member (seen from
DynamoDB, brendanhay/amazonka#43); the simulation names the member so that a caller learns
which one is wrong, and keeps the service's validation code so callers handle one code.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from botocore.model import Shape

from sim.aws.errors import AwsError, service_model


@dataclass(frozen=True)
class Violation:
    """One way a request breaks its operation's model."""

    path: str  # AWS's member path: instanceGroups.1.member.instanceCount
    member: str  # the member's wire name (EC2 names it in MissingParameter)
    sentence: str  # "Value X at 'path' failed to satisfy constraint: ..."
    missing: bool = False


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


@cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _shown(value: Any) -> str:
    """A value as AWS quotes it in a constraint message."""
    if isinstance(value, str):
        return f"'{value}'"
    if value is None:
        return "null"
    return f"'{json.dumps(value, default=str)}'"


class _Walk:
    """Collects the violations of one value against one shape."""

    def __init__(self) -> None:
        self.found: list[Violation] = []

    def add(self, path: str, member: str, sentence: str, missing: bool = False) -> None:
        self.found.append(Violation(path, member, sentence, missing))

    def fail(self, value: Any, path: str, member: str, constraint: str) -> None:
        self.add(
            path,
            member,
            f"Value {_shown(value)} at '{path}' failed to satisfy constraint: {constraint}",
        )

    def null(self, path: str, member: str) -> None:
        self.add(
            path,
            member,
            f"Value null at '{path}' failed to satisfy constraint: Member must not be null",
            missing=True,
        )

    def shape(self, shape: Shape, value: Any, path: str, member: str) -> None:
        kind = shape.type_name
        if kind == "structure":
            self.structure(shape, value, path, member)
        elif kind == "list":
            if not isinstance(value, list):
                self.fail(value, path, member, "Member must be a list")
                return
            self.size(shape, value, len(value), path, member)
            for index, item in enumerate(value, start=1):
                sub = f"{path}.{index}.member"
                if item is None:
                    self.null(sub, member)
                else:
                    self.shape(shape.member, item, sub, member)
        elif kind == "map":
            if not isinstance(value, dict):
                self.fail(value, path, member, "Member must be a map")
                return
            self.size(shape, value, len(value), path, member)
            for key, item in value.items():
                self.shape(shape.key, key, f"{path}.key", member)
                if item is not None:
                    self.shape(shape.value, item, f"{path}.{key}.value", member)
        elif kind == "string":
            self.string(shape, value, path, member)
        elif kind in ("integer", "long", "short", "byte"):
            integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            if isinstance(value, bool) or not integral:
                self.fail(value, path, member, f"Member must be of type {kind}")
                return
            self.bounds(shape, value, path, member)
        elif kind in ("float", "double"):
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                self.fail(value, path, member, f"Member must be of type {kind}")
                return
            self.bounds(shape, value, path, member)
        elif kind == "boolean":
            if not isinstance(value, bool):
                self.fail(value, path, member, "Member must be of type boolean")
        elif kind == "timestamp":
            if isinstance(value, bool) or not isinstance(value, int | float | str | datetime):
                self.fail(value, path, member, "Member must be of type timestamp")
        elif kind == "blob" and not isinstance(value, str | bytes | bytearray):
            self.fail(value, path, member, "Member must be of type blob")

    def structure(self, shape: Shape, value: Any, path: str, member: str) -> None:
        if shape.metadata.get("document"):
            return
        if not isinstance(value, dict):
            self.fail(value, path, member, "Member must be a structure")
            return
        members = shape.members
        for name in shape.required_members:
            wire = members[name].serialization.get("name", name)
            if value.get(name) is None and value.get(wire) is None:
                sub = f"{path}.{_lower_first(name)}" if path else _lower_first(name)
                self.null(sub, wire)
        for name, member_shape in members.items():
            wire = member_shape.serialization.get("name", name)
            item = value.get(name, value.get(wire))
            if item is not None:
                sub = f"{path}.{_lower_first(name)}" if path else _lower_first(name)
                self.shape(member_shape, item, sub, wire)

    def string(self, shape: Shape, value: Any, path: str, member: str) -> None:
        if not isinstance(value, str):
            self.fail(value, path, member, "Member must be of type string")
            return
        enum = shape.enum
        if enum and value not in enum:
            self.fail(
                value, path, member, f"Member must satisfy enum value set: [{', '.join(enum)}]"
            )
        self.size(shape, value, len(value), path, member)
        pattern = shape.metadata.get("pattern")
        compiled = _pattern(pattern) if pattern else None
        if compiled is not None and not compiled.fullmatch(value):
            self.fail(
                value,
                path,
                member,
                f"Member must satisfy regular expression pattern: {pattern}",
            )

    def size(self, shape: Shape, value: Any, length: int, path: str, member: str) -> None:
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        shown = value if isinstance(value, str) else None
        if low is not None and length < low:
            self.add(
                path,
                member,
                f"Value {_shown(shown) if shown is not None else ''}".rstrip()
                + f" at '{path}' failed to satisfy constraint: "
                f"Member must have length greater than or equal to {low}",
            )
        if high is not None and length > high:
            self.add(
                path,
                member,
                f"Value {_shown(shown) if shown is not None else ''}".rstrip()
                + f" at '{path}' failed to satisfy constraint: "
                f"Member must have length less than or equal to {high}",
            )

    def bounds(self, shape: Shape, value: float, path: str, member: str) -> None:
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            self.fail(value, path, member, f"Member must have value greater than or equal to {low}")
        if high is not None and value > high:
            self.fail(value, path, member, f"Member must have value less than or equal to {high}")


def violations(service: str, operation: str, params: dict[str, Any]) -> list[Violation]:
    """Every violation of the operation's input shape by `params` (member or wire names)."""
    shape = service_model(service).operation_model(operation).input_shape
    if shape is None:
        return []
    walk = _Walk()
    walk.structure(shape, params, "", "")
    return walk.found


_REST_JSON_CODES = ("InvalidParameterException", "BadRequestException", "ValidationException")


@cache
def _rest_json_code(service: str) -> str:
    model = service_model(service)
    modelled = {
        e.name for op in model.operation_names for e in model.operation_model(op).error_shapes
    }
    return next((c for c in _REST_JSON_CODES if c in modelled), "ValidationException")


def refusal(service: str, protocol: str, found: list[Violation]) -> AwsError:
    """The error the service answers for `found` (non-empty), in its own code and wording."""
    if protocol == "ec2":
        first = found[0]
        if first.missing:
            return AwsError(
                "MissingParameter", f"The request must contain the parameter {first.member}"
            )
        return AwsError(
            "InvalidParameterValue",
            f"Invalid value for parameter {first.member}: {first.sentence.split(': ', 1)[-1]}",
        )
    count = len(found)
    noun = "error" if count == 1 else "errors"
    message = f"{count} validation {noun} detected: " + "; ".join(v.sentence for v in found)
    if protocol == "query":
        return AwsError("ValidationError", message)
    if protocol == "rest-xml":
        return AwsError("InvalidArgument", message)
    if protocol == "rest-json":
        return AwsError(_rest_json_code(service), message)
    return AwsError("ValidationException", message)


def validate(service: str, operation: str, params: dict[str, Any], protocol: str = "json") -> None:
    """Raise the service's validation error if `params` break the model."""
    found = violations(service, operation, params)
    if found:
        raise refusal(service, protocol, found)
