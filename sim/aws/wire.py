"""Read an incoming AWS request: which service, which operation, which parameters.

The service comes from the SigV4 credential scope (and `X-Amz-Target` where services share a
signing name); the operation and parameters from botocore's model, through moto's router and
protocol parsers, so a request is understood the way AWS understands it.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import botocore.session
from moto.core.parse import PROTOCOL_PARSERS
from moto.core.request import Request, determine_request_protocol
from moto.core.routing import get_service_router
from moto.core.utils import get_service_model

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
    if not match:
        return req
    req.region, signing_name = match.group(1), match.group(2)
    req.service = service_for(signing_name, environ.get("HTTP_X_AMZ_TARGET"))
    if req.service is None:
        return req
    copy = dict(environ)
    copy["wsgi.input"] = io.BytesIO(body)
    request = Request(copy)
    try:
        model = get_service_model(req.service)
        req.protocol = determine_request_protocol(model, request.content_type)
        operation, uri_params = get_service_router(req.service).match(request)
    except Exception:
        return req
    req.operation = operation.name
    try:
        parser = PROTOCOL_PARSERS[req.protocol](operation)
        req.params = parser.parse(
            {
                "method": request.method,
                "values": request.values,
                "headers": request.headers,
                "body": request.get_data(),
                "url_path": request.path,
                "url_params": uri_params,
            }
        )
    except Exception:
        req.params = _fallback_params(req.protocol, body)
    return req


def _fallback_params(protocol: str, body: bytes) -> dict[str, Any]:
    """Parameters of a request the model parser rejected: the raw JSON body, if any."""
    if protocol in ("json", "rest-json") and body:
        try:
            value = json.loads(body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}
