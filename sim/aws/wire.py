"""Read an incoming AWS request: which service, which operation, which parameters.

The service comes from the SigV4 credential scope (and `X-Amz-Target` where services share a
signing name); the operation and parameters from botocore's model, through moto's router and
protocol parsers, so a request is understood the way AWS understands it. Besides the parsed
parameters a request carries what validation checks (`checked`): the JSON body as sent, for
the JSON protocols, so that a string where the model says integer is seen as such instead of
being coerced; and a request that cannot be read (an unknown operation, a body that is not
JSON, a query value that is not a number) carries the refusal AWS answers (`refused`).
"""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import parse_qs

import botocore.session
from botocore.model import OperationModel, ServiceModel
from moto.core.parse import PROTOCOL_PARSERS, UNDEFINED, EC2QueryParser, QueryParser
from moto.core.request import Request, determine_request_protocol
from moto.core.routing import get_service_router
from moto.core.utils import get_service_model
from werkzeug.exceptions import NotFound

from sim.aws.errors import AwsError
from sim.aws.validation import Violation, refusal

log = logging.getLogger(__name__)

_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")

_READ_PREFIXES = (
    "Describe",
    "List",
    "Get",
    "Head",
    "Search",
    "BatchGet",
    "BatchDescribe",
    "Validate",
    "Lookup",
    "Select",
    "Estimate",
    "Check",
)


def is_mutating(operation: str) -> bool:
    """Whether an operation changes state (reads are named Describe/List/Get/... in AWS)."""
    return not operation.startswith(_READ_PREFIXES)


# Signing names that differ from botocore's service name.
_SIGNING_ALIASES = {
    "servicequotas": "service-quotas",
    "monitoring": "cloudwatch",
    "email": "ses",
    "states": "stepfunctions",
    "execute-api": "apigateway",
    "elasticloadbalancing": "elbv2",
    "events": "events",
    "aps": "amp",  # Amazon Managed Service for Prometheus signs as aps; botocore names it amp
}


@cache
def _known_service(name: str) -> bool:
    try:
        botocore.session.get_session().get_service_model(name)
    except Exception:
        return False
    return True


def service_for(signing_name: str, target: str | None) -> str | None:
    """The botocore service a request is for (SageMaker's runtimes share its signing name but
    not its `X-Amz-Target` JSON protocol)."""
    name = _SIGNING_ALIASES.get(signing_name, signing_name)
    if name == "sagemaker" and not target:
        return None
    return name if _known_service(name) else None


# Query-protocol services with operations called without a signature: STS's
# AssumeRoleWithWebIdentity and AssumeRoleWithSAML carry no Authorization header (botocore
# models them `"auth": ["smithy.api#noAuth"]`; the STS API reference: "Calling
# AssumeRoleWithWebIdentity does not require the use of AWS security credentials",
# https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html), so
# the credential scope cannot name the service. AWS knows it from the endpoint's host; the
# simulation's one endpoint knows it from the Action and Version only these services take.
_UNSIGNED_QUERY_SERVICES = ("sts",)


@cache
def _unsigned_operations() -> dict[tuple[str, str], str]:
    """(Version, Action) -> service, for each operation modelled as called unsigned."""
    found: dict[tuple[str, str], str] = {}
    for service in _UNSIGNED_QUERY_SERVICES:
        model = get_service_model(service)
        for name in model.operation_names:
            if model.operation_model(name).auth_type == "none":
                found[(str(model.api_version), name)] = service
    return found


def unsigned_service(environ: dict[str, Any], body: bytes) -> str | None:
    """The service of an unsigned query-protocol request, if it is an operation modelled as
    called without a signature (Action and Version in the query string or the form body)."""
    values = parse_qs(str(environ.get("QUERY_STRING", "")))
    if "form-urlencoded" in str(environ.get("CONTENT_TYPE", "")):
        values.update(parse_qs(body.decode("utf-8", "replace")))
    action, version = values.get("Action"), values.get("Version")
    if not action or not version:
        return None
    return _unsigned_operations().get((version[0], action[0]))


@dataclass
class AwsRequest:
    """An AWS API request as the simulation sees it."""

    method: str
    path: str
    body: bytes
    service: str | None = None
    region: str | None = None
    operation: str | None = None
    protocol: str = "json"
    params: dict[str, Any] = field(default_factory=dict)
    checked: dict[str, Any] = field(default_factory=dict)
    refused: AwsError | None = None
    unrouted: bool = False
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def mutating(self) -> bool:
        return self.operation is not None and is_mutating(self.operation)


def read_request(environ: dict[str, Any], body: bytes) -> AwsRequest:
    """Identify the service, operation and parameters of a buffered WSGI request."""
    req = AwsRequest(
        method=environ.get("REQUEST_METHOD", "GET"),
        path=environ.get("PATH_INFO", "/"),
        body=body,
    )
    match = _SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match:
        req.region, signing_name = match.group(1), match.group(2)
    else:
        unsigned = unsigned_service(environ, body)
        if unsigned is None:
            return req
        signing_name = unsigned
    req.service = service_for(signing_name, environ.get("HTTP_X_AMZ_TARGET"))
    if req.service is None:
        return req
    copy = dict(environ)
    copy["wsgi.input"] = io.BytesIO(body)
    request = Request(copy)
    try:
        model = get_service_model(req.service)
        req.protocol = determine_request_protocol(model, request.content_type)
    except Exception:
        return req
    if req.protocol == "rest-json":
        empty = _empty_label(model, request.method, request.path)
        if empty is not None:
            req.operation, member = empty
            req.refused = refusal(
                req.service,
                req.protocol,
                [Violation(member, member, _NULL.format(member), missing=True)],
            )
            return req
    try:
        operation, uri_params = _route(req.service, request)
    except Exception:
        req.unrouted = True
        req.refused = _unknown_operation(
            req, environ.get("HTTP_X_AMZ_TARGET"), request.values.get("Action")
        )
        return req
    req.operation = operation.name
    if req.protocol in ("rest-json", "rest-xml"):
        bad = _scalar_violations(operation, request)
        if bad:
            req.refused = refusal(req.service, req.protocol, bad)
            return req
    parser_class = _STRICT_PARSERS.get(req.protocol, PROTOCOL_PARSERS[req.protocol])
    try:
        req.params = parser_class(operation).parse(
            {
                "method": request.method,
                "values": request.values,
                "headers": request.headers,
                "body": request.get_data(),
                "url_path": request.path,
                "url_params": uri_params,
            }
        )
    except _BadScalar as bad:
        req.refused = refusal(req.service, req.protocol, [bad.violation])
    except Exception as exc:
        req.params = _fallback_params(req.protocol, body)
        if req.protocol not in ("json", "rest-json"):
            unreadable = Violation("", "", f"The request could not be read: {exc}")
            req.refused = refusal(req.service, req.protocol, [unreadable])
    req.checked = req.params
    if req.protocol in ("json", "rest-json") and req.refused is None:
        _check_json_body(req, model, operation.name, body)
    return req


def _route(service: str, request: Request) -> tuple[Any, dict[str, Any]]:
    """moto's router for the request. Only werkzeug's NotFound means the model has no such
    operation; anything else (seen once under load for a request AMP routes every day, and
    not reproduced) is tried once more and logged, so it is never mistaken for an unknown
    operation without a trace."""
    try:
        return get_service_router(service).match(request)
    except NotFound:
        raise
    except Exception:
        log.warning(
            "routing %s %s %s failed; trying once more",
            service,
            request.method,
            request.path,
            exc_info=True,
        )
        return get_service_router(service).match(request)


_NULL = "Value null at '{}' failed to satisfy constraint: Member must not be null"


def _unknown_operation(req: AwsRequest, target: str | None, action: str | None) -> AwsError:
    """What AWS answers for an operation its model does not have: UnknownOperationException
    for the JSON protocols (observed as HTTP 400 from CloudWatch Logs, aws/aws-sdk-net#1536),
    InvalidAction for the query protocols (400, the Common Errors page of every query service,
    e.g. https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html)."""
    if req.protocol in ("query", "ec2"):
        return AwsError(
            "InvalidAction", f"The action {action} is not valid for this web service.", 400
        )
    what = target or f"{req.method} {req.path}"
    return AwsError("UnknownOperationException", f"Unknown operation: {what}", 400)


def _check_json_body(req: AwsRequest, model: ServiceModel, operation: str, body: bytes) -> None:
    """Validate the JSON body as sent (moto's parser coerces "2" and 1.5 to 2 and 1)."""
    if not body.strip():
        raw: Any = {}
    else:
        try:
            raw = json.loads(body)
        except ValueError:
            raw = None
    if not isinstance(raw, dict):
        req.refused = AwsError("SerializationException", "The request body is not a JSON object.")
        return
    if req.protocol == "json":
        req.checked = raw
        return
    shape = model.operation_model(operation).input_shape
    if shape is None:
        return
    members = shape.members
    in_body = {
        name: member.serialization.get("name", name)
        for name, member in members.items()
        if "location" not in member.serialization
    }
    checked = {k: v for k, v in req.params.items() if k not in in_body}
    for name, wire in in_body.items():
        if raw.get(wire) is not None:
            checked[name] = raw[wire]
    req.checked = checked


@cache
def _label_routes(model: ServiceModel) -> list[tuple[str, str, re.Pattern[str]]]:
    """(method, operation, path regex with labels allowed empty) for each labelled URI."""
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        uri = str(http.get("requestUri", "/")).split("?", 1)[0]
        if "{" not in uri:
            continue
        pattern = re.sub(
            r"\\\{([A-Za-z0-9_]+)(\\\+)?\\\}",
            lambda m: f"(?P<{m.group(1)}>{'.*' if m.group(2) else '[^/]*'})",
            re.escape(uri),
        )
        routes.append((str(http.get("method", "POST")), name, re.compile(pattern)))
    return routes


def _empty_label(model: ServiceModel, method: str, path: str) -> tuple[str, str] | None:
    """(operation, label) when `path` is an operation's URI with a label left empty.

    botocore sends `describe_cluster(name="")` as GET /clusters/; Smithy lets a trailing slash
    be ignored, which would make that ListClusters. AWS refuses the empty required label, so
    the simulation reads such a path as the labelled operation with the label null."""
    if not (path.endswith("/") or "//" in path) or path == "/":
        return None
    for route_method, name, pattern in _label_routes(model):
        if route_method != method:
            continue
        match = pattern.fullmatch(path)
        if match is None:
            continue
        for label, value in match.groupdict().items():
            if value == "":
                return name, _lower_first(_label_member(model, name, label))
    return None


def _label_member(model: ServiceModel, operation: str, label: str) -> str:
    """The input member a URI label carries (`{name}` is clusterName in /clusters/{name}/...)."""
    shape = model.operation_model(operation).input_shape
    for member, member_shape in (shape.members if shape is not None else {}).items():
        serialization = member_shape.serialization
        if serialization.get("location") == "uri" and serialization.get("name") == label:
            return str(member)
    return label


def _scalar_violations(operation: OperationModel, request: Request) -> list[Violation]:
    """Query-string and header members of a REST request whose text is not of their type
    ("two" for maxResults): moto's parser would coerce them or fail with a 500."""
    shape = operation.input_shape
    if shape is None:
        return []
    found = []
    for member, member_shape in shape.members.items():
        location = member_shape.serialization.get("location")
        kind = member_shape.type_name
        if location not in ("querystring", "header") or kind not in _SCALARS:
            continue
        wire = member_shape.serialization.get("name", member)
        text = request.args.get(wire) if location == "querystring" else request.headers.get(wire)
        if text is not None and not _SCALARS[kind](text):
            path = _lower_first(member)
            found.append(
                Violation(
                    path,
                    wire,
                    f"Value '{text}' at '{path}' failed to satisfy constraint: "
                    f"Member must be of type {kind}",
                )
            )
    return found


def _is_integer(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text.strip()) is not None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_SCALARS: dict[str, Callable[[str], bool]] = {
    "integer": _is_integer,
    "long": _is_integer,
    "float": _is_number,
    "double": _is_number,
    "boolean": lambda text: text.lower() in ("true", "false"),
}


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class _BadScalar(Exception):
    """A query-protocol value that is not of its member's type."""

    def __init__(self, member: str, value: Any, kind: str) -> None:
        super().__init__(member)
        self.violation = Violation(
            member,
            member,
            f"Value '{value}' at '{member}' failed to satisfy constraint: "
            f"Member must be of type {kind}",
        )


class _StrictQueryParser(QueryParser):
    """moto's query parser, refusing what it would coerce: "maybe" for a boolean (False),
    "two" for an integer (a ValueError, answered 500)."""

    def _parse_boolean(self, shape: Any, query_params: Any, prefix: str = "") -> Any:
        value = query_params.get(prefix, shape.metadata.get("default", UNDEFINED))
        if value is UNDEFINED or isinstance(value, bool):
            return value
        if str(value).lower() not in ("true", "false"):
            raise _BadScalar(prefix, value, "boolean")
        return str(value).lower() == "true"

    def _parse_integer(self, shape: Any, query_params: Any, prefix: str = "") -> Any:
        value = query_params.get(prefix, shape.metadata.get("default", UNDEFINED))
        if value is UNDEFINED:
            return value
        try:
            return int(value)
        except (TypeError, ValueError):
            raise _BadScalar(prefix, value, "integer") from None

    def _parse_float(self, shape: Any, query_params: Any, prefix: str = "") -> Any:
        value = query_params.get(prefix, shape.metadata.get("default", UNDEFINED))
        if value is UNDEFINED:
            return value
        try:
            return float(value)
        except (TypeError, ValueError):
            raise _BadScalar(prefix, value, "double") from None

    _parse_long = _parse_integer
    _parse_double = _parse_float


class _StrictEc2Parser(_StrictQueryParser, EC2QueryParser):
    """The EC2 flavour of the strict query parser."""


_STRICT_PARSERS: dict[str, Any] = {"query": _StrictQueryParser, "ec2": _StrictEc2Parser}


def _fallback_params(protocol: str, body: bytes) -> dict[str, Any]:
    """Parameters of a request the model parser rejected: the raw JSON body, if any."""
    if protocol in ("json", "rest-json") and body:
        try:
            value = json.loads(body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}
