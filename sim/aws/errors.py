"""AWS error shapes, so that boto3 parses a simulated failure exactly as one from AWS.

Each wire protocol carries errors differently: JSON protocols put `__type` in the body and
`x-amzn-ErrorType` in a header, the query protocols (IAM, STS, CloudFormation) an
`<ErrorResponse>`, EC2 a `<Response><Errors>`, and S3 a bare `<Error>`.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from xml.sax.saxutils import escape

import botocore.session
from botocore.exceptions import UnknownServiceError
from botocore.model import NoShapeFoundError, ServiceModel

_SESSION = botocore.session.get_session()


@cache
def service_model(service: str) -> ServiceModel:
    """botocore's model of `service` (cached: loading a model takes tens of milliseconds)."""
    return _SESSION.get_service_model(service)


class AwsError(Exception):
    """A failure answered in the service's own error shape."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.extra = extra or {}

    def http_status(self, service: str | None) -> int:
        """The status AWS answers for this code: the model's, else what the code implies."""
        if self.status is not None:
            return self.status
        if service:
            try:
                shape = service_model(service).shape_for(self.code)
                status = shape.metadata.get("error", {}).get("httpStatusCode")
                if status:
                    return int(status)
            except (UnknownServiceError, NoShapeFoundError):
                pass
        return _DEFAULT_STATUS.get(self.code, 400)


_DEFAULT_STATUS = {
    "ResourceNotFound": 400,
    "ResourceNotFoundException": 404,
    "ResourceInUseException": 409,
    "ThrottlingException": 400,
    "Throttling": 400,
    "RequestLimitExceeded": 503,
    "SlowDown": 503,
    "TooManyRequestsException": 429,
    "InternalFailure": 500,
    "InternalError": 500,
    "InternalServerError": 500,
    "ServerException": 500,
    "ServiceUnavailable": 503,
    "ServiceUnavailableException": 503,
    "ServiceException": 500,
}


def render_error(
    err: AwsError, service: str | None, protocol: str, request_id: str
) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body of `err` in `protocol` (json, rest-json, query, ec2, rest-xml)."""
    status = err.http_status(service)
    headers = [("x-amzn-RequestId", request_id), ("x-amz-request-id", request_id)]
    code, message = escape(err.code), escape(err.message)
    if protocol in ("json", "rest-json"):
        body: dict[str, Any] = {"__type": err.code, "message": err.message, **err.extra}
        headers += [
            ("Content-Type", "application/x-amz-json-1.1"),
            ("x-amzn-ErrorType", err.code),
        ]
        return status, headers, json.dumps(body).encode()
    headers.append(("Content-Type", "text/xml"))
    if protocol == "ec2":
        xml = (
            f"<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error><Code>{code}</Code>"
            f"<Message>{message}</Message></Error></Errors><RequestID>{request_id}</RequestID>"
            "</Response>"
        )
    elif protocol == "rest-xml":
        # S3 puts an error's details beside its code (<Method>, <ResourceType>, <BucketName>...)
        details = "".join(
            f"<{escape(str(k))}>{escape(str(v))}</{escape(str(k))}>" for k, v in err.extra.items()
        )
        xml = (
            f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
            f"<Message>{message}</Message>{details}<RequestId>{request_id}</RequestId></Error>"
        )
    else:
        kind = "Receiver" if status >= 500 else "Sender"
        xml = (
            f"<ErrorResponse><Error><Type>{kind}</Type><Code>{code}</Code>"
            f"<Message>{message}</Message></Error><RequestId>{request_id}</RequestId>"
            "</ErrorResponse>"
        )
    return status, headers, xml.encode()


def throttling_code(service: str | None, protocol: str) -> str:
    """The code each service answers when it throttles a caller."""
    if protocol == "ec2":
        return "RequestLimitExceeded"
    if protocol == "rest-xml":
        return "SlowDown"
    if protocol == "query":
        return "Throttling"
    if service == "service-quotas":
        return "TooManyRequestsException"
    if service == "sqs":
        # SQS's modeled throttling error, HTTP 400 (the SQS API Reference, "Common Errors" and
        # each action's errors, e.g. https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html)
        return "RequestThrottled"
    return "ThrottlingException"


def server_error_code(service: str | None, protocol: str) -> str:
    """The code each service answers for an internal failure."""
    if service == "eks":
        return "ServerException"
    if service == "service-quotas":
        return "ServiceException"
    if service == "pricing":
        return "InternalErrorException"  # the Price List API's modeled 5xx (botocore pricing)
    if protocol in ("ec2", "rest-xml"):
        return "InternalError"
    return "InternalFailure"
