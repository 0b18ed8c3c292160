"""A corpus of malformed requests generated from botocore's service models.

For each operation the product calls (found in services/*/*/adapters), a request that satisfies
the model is built, then broken one way at a time: each required member missing, each member of
the wrong type, each enum and pattern violated, each length, size and range bound crossed, on
the members at the top level and, through required structures and lists, below. Only what
botocore can still put on the wire with `parameter_validation=False` is kept (a structure given
as a string fails in the client, a boolean in a query string is only ever "true" or "false").
Operations with many members are sampled, deterministically (seeded by the operation's name).

Run as a module against moto alone to see what moto lets through (docs/simulator.md):
    .venv/bin/python -m tests.sim_aws.model_corpus
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
from botocore import xform_name
from botocore.model import OperationModel, Shape

ROOT = Path(__file__).resolve().parents[2]
SERVICES = (
    "sagemaker",
    "eks",
    "ec2",
    "iam",
    "s3",
    "fsx",
    "sts",
    "secretsmanager",
    "amp",
    "grafana",
)
# Operations the product names at run time rather than in an adapter's source: the node
# actions' batch calls (cluster_svc/domain/nodes/actions.py, BATCH_OPERATIONS) and the steps
# of managed features.
NAMED_ELSEWHERE = {
    "sagemaker": {"BatchRebootClusterNodes", "BatchReplaceClusterNodes", "BatchDeleteClusterNodes"},
    # the observability feature's workspace steps (cluster_svc/domain/features/observability.py)
    "amp": {"CreateWorkspace", "DeleteWorkspace"},
    "grafana": {"CreateWorkspace", "DeleteWorkspace"},
}
# The validation error code of each protocol (sim.aws.validation).
CODES = {
    "json": {"ValidationException"},
    "rest-json": {"InvalidParameterException"},
    "query": {"ValidationError"},
    "ec2": {"MissingParameter", "InvalidParameterValue"},
    "rest-xml": {"InvalidArgument"},
}
# rest-json services whose API reference names ValidationException for input that breaks the
# model (https://docs.aws.amazon.com/prometheus/latest/APIReference/CommonErrors.html, and each
# Amazon Managed Grafana action's Errors section), not EKS's InvalidParameterException.
SERVICE_CODES = {"amp": {"ValidationException"}, "grafana": {"ValidationException"}}
PER_OPERATION = 60
_SESSION = botocore.session.get_session()


@cache
def model(service: str) -> Any:
    return _SESSION.get_service_model(service)


def product_operations() -> dict[str, list[str]]:
    """Every operation of SERVICES that an adapter of the product names, by service."""
    found: dict[str, set[str]] = {s: set(NAMED_ELSEWHERE.get(s, ())) for s in SERVICES}
    for path in sorted(ROOT.glob("services/*/*/adapters/*.py")):
        text = path.read_text()
        words = set(re.findall(r"[a-z][a-z0-9_]+", text)) | set(re.findall(r"[A-Z][A-Za-z]+", text))
        for service in SERVICES:
            if f'"{service}"' not in text:
                continue
            for name in model(service).operation_names:
                if name in words or xform_name(name) in words:
                    found[service].add(name)
    return {s: sorted(ops) for s, ops in found.items() if ops}


@dataclass(frozen=True)
class Case:
    service: str
    operation: str
    label: str  # what is wrong: "missing clusterName", "type instanceGroups.1.member.instanceCount"
    path: str  # the member path AWS names in its message
    params: dict[str, Any]
    wire_typed: bool  # the wrong value reaches the wire as sent (JSON body), so the path is named


_CANDIDATES = (
    "a",
    "abc-1",
    "arn:aws:iam::111111111111:role/corpus",
    "arn:aws:eks:us-east-1:111111111111:cluster/corpus",
    "arn:aws:sagemaker:us-east-1:111111111111:cluster/abcdefghijkl",
    "i-0123456789abcdef0",
    "sg-0123456789abcdef0",
    "subnet-0123456789abcdef0",
    "vpc-0123456789abcdef0",
    "s3://corpus-bucket/key",
    "10.0.0.0/16",
    "ml.g5.8xlarge",
    "corpus",
)


def _string(shape: Shape) -> str:
    enum = getattr(shape, "enum", None)
    if enum:
        return str(enum[0])
    low = shape.metadata.get("min", 0)
    high = shape.metadata.get("max", 10_000)
    pattern = shape.metadata.get("pattern")
    compiled = _compile(pattern)
    for candidate in _CANDIDATES:
        value = candidate if len(candidate) >= low else candidate + "a" * (low - len(candidate))
        if len(value) <= high and (compiled is None or compiled.fullmatch(value)):
            return value
    return "a" * max(low, 1)


@cache
def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return None


def valid(shape: Shape, depth: int = 0) -> Any:
    """A value of `shape` that satisfies its model (required members only)."""
    kind = shape.type_name
    if kind == "structure":
        if depth > 6 or shape.metadata.get("document"):
            return {}
        members = shape.members  # type: ignore[attr-defined]
        return {n: valid(members[n], depth + 1) for n in shape.required_members}  # type: ignore[attr-defined]
    if kind == "list":
        return [valid(shape.member, depth + 1)] * max(shape.metadata.get("min", 1), 1)  # type: ignore[attr-defined]
    if kind == "map":
        count = shape.metadata.get("min", 0)
        return {f"k{i}": valid(shape.value, depth + 1) for i in range(count)}  # type: ignore[attr-defined]
    if kind == "string":
        return _string(shape)
    if kind in ("integer", "long", "short", "byte", "float", "double"):
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        value = max(low if low is not None else 1, 1)
        return min(value, high) if high is not None else value
    if kind == "boolean":
        return True
    if kind == "timestamp":
        return datetime(2024, 1, 1, tzinfo=UTC)
    if kind == "blob":
        return b"corpus"
    return None


@dataclass(frozen=True)
class _Site:
    keys: tuple[str | int, ...]  # where in the params
    path: str  # AWS's member path
    shape: Shape
    required: bool
    location: str | None  # uri / querystring / header / None (the body)


def _sites(shape: Shape, params: Any, keys: tuple[str | int, ...], path: str) -> Iterator[_Site]:
    if len(keys) > 6 or shape.metadata.get("document"):
        return
    members = shape.members  # type: ignore[attr-defined]
    required = set(shape.required_members)  # type: ignore[attr-defined]
    for name, member in members.items():
        sub = f"{path}.{name[:1].lower()}{name[1:]}" if path else name[:1].lower() + name[1:]
        location = member.serialization.get("location")
        yield _Site((*keys, name), sub, member, name in required, location)
        if name not in required or not isinstance(params, dict):
            continue
        value = params.get(name)
        if member.type_name == "structure" and isinstance(value, dict):
            yield from _sites(member, value, (*keys, name), sub)
        elif (
            member.type_name == "list"
            and isinstance(value, list)
            and value
            and member.member.type_name == "structure"
        ):
            yield from _sites(member.member, value[0], (*keys, name, 0), f"{sub}.1.member")


def _put(params: dict[str, Any], keys: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(params)
    node: Any = out
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[keys[-1]] = value
    return out


def _drop(params: dict[str, Any], keys: tuple[str | int, ...]) -> dict[str, Any]:
    out = copy.deepcopy(params)
    node: Any = out
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    return out


def _breaks(site: _Site, protocol: str) -> Iterator[tuple[str, Any, bool]]:
    """(what, wrong value, reaches the wire as typed) for one member."""
    shape, kind = site.shape, site.shape.type_name
    body = site.location is None and protocol in ("json", "rest-json")
    query_like = protocol in ("query", "ec2") or site.location in ("querystring", "header")
    if body:
        wrong_types: dict[str, list[Any]] = {
            "string": [12345],
            "integer": ["two", 1.5],
            "long": ["two", 1.5],
            "boolean": ["yes"],
            "float": ["x"],
            "double": ["x"],
        }
        for value in wrong_types.get(kind, []):
            yield f"type {value!r}", value, True
        if kind == "list" and shape.member.type_name == "string":  # type: ignore[attr-defined]
            yield "item type 5", [5], True
            yield "item null", [None], True
    elif query_like and kind in ("integer", "long"):
        yield "type 'two'", "two", False
    if kind == "string" and site.location != "header":
        enum = getattr(shape, "enum", None)
        if enum:
            yield "enum", "NotAnEnumValue", body
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low and low > 0 and site.location != "uri":
            yield f"length < {low}", "a" * (low - 1), body
        if site.location == "uri" and protocol == "rest-json":
            yield "empty label", "", True
        if high and high < 5000 and not enum:
            yield f"length > {high}", "a" * (high + 1), body
        compiled = _compile(shape.metadata.get("pattern"))
        if compiled is not None and not enum:
            for candidate in ("!!!", " ", "-", "\t", "#"):
                value = candidate * max(low or 1, 1)
                if (high is None or len(value) <= high) and not compiled.fullmatch(value):
                    yield "pattern", value, body
                    break
    if kind in ("integer", "long", "float", "double"):
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None:
            yield f"value < {low}", low - 1, body
        if high is not None and high < 2**31:
            yield f"value > {high}", high + 1, body
    if kind == "list":
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        item = valid(shape.member)  # type: ignore[attr-defined]
        if low and low > 0:
            yield f"size < {low}", [item] * (low - 1), body
        if high is not None and high < 200:
            yield f"size > {high}", [item] * (high + 1), body


def cases(service: str, operation: str, limit: int = PER_OPERATION) -> list[Case]:
    """The malformed requests of one operation (at most `limit`, sampled deterministically)."""
    op: OperationModel = model(service).operation_model(operation)
    shape = op.input_shape
    if shape is None:
        return []
    protocol = model(service).protocol
    base = valid(shape)
    found: list[Case] = []
    for site in _sites(shape, base, (), ""):
        if site.required and site.location != "uri":
            found.append(
                Case(
                    service,
                    operation,
                    f"missing {site.path}",
                    site.path,
                    _drop(base, site.keys),
                    True,
                )
            )
        for what, value, typed in _breaks(site, protocol):
            found.append(
                Case(
                    service,
                    operation,
                    f"{what} {site.path}",
                    f"{site.path}.1.member" if what.startswith("item") else site.path,
                    _put(base, site.keys, value),
                    typed,
                )
            )
    if len(found) > limit:
        found = random.Random(f"{service}.{operation}").sample(found, limit)
    return found


def corpus(limit: int = PER_OPERATION) -> list[Case]:
    return [
        case
        for service, operations in product_operations().items()
        for operation in operations
        for case in cases(service, operation, limit)
    ]


def send(client: Any, case: Case) -> tuple[int, str, str] | None:
    """(status, code, message) of the answer; None if botocore cannot put the case on the wire.

    An answer botocore cannot parse (a framework's HTML error page) is kept with the status it
    came with, so a server error is never taken for a case that could not be sent."""
    from botocore.exceptions import ClientError

    statuses: list[int] = []

    def seen(response_dict: dict[str, Any], **_: Any) -> None:
        statuses.append(int(response_dict["status_code"]))

    method = getattr(client, xform_name(case.operation))
    client.meta.events.register("before-parse", seen)
    try:
        method(**case.params)
    except ClientError as err:
        response = err.response
        return (
            int(response["ResponseMetadata"]["HTTPStatusCode"]),
            str(response["Error"].get("Code", "")),
            str(response["Error"].get("Message", "")),
        )
    except Exception as exc:
        if statuses:
            return statuses[-1], "unparseable answer", str(exc)[-200:]
        return None
    finally:
        client.meta.events.unregister("before-parse", seen)
    return 200, "", ""


def _moto_report() -> None:
    """Send the corpus to moto alone and print what it accepted or failed on."""
    import threading

    import boto3
    from botocore.config import Config
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    config = Config(parameter_validation=False, retries={"total_max_attempts": 1})
    ours = {"sagemaker", "eks"}  # simulated by sim.aws, not by moto
    for service, operations in product_operations().items():
        if service in ours:
            continue
        client = boto3.client(
            service,
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=config,
        )
        for operation in operations:
            accepted, failed = [], []
            for case in cases(service, operation):
                answer = send(client, case)
                if answer is None:
                    continue
                if answer[0] < 400:
                    accepted.append(case.label)
                elif answer[0] >= 500:
                    failed.append(case.label)
            if accepted or failed:
                print(f"{service} {operation}: accepted {accepted} 5xx {failed}")
    server.shutdown()


if __name__ == "__main__":
    _moto_report()
