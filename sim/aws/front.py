"""The one endpoint: a WSGI front that answers the simulated operations, serves the admin API
under /_sim/, and hands every other AWS request to moto (correcting a few of its answers, see
sim.aws.overlays).

Per request: run the work the clock says is due, throttle a caller beyond AWS's published
request rates (sim.aws.throttle), apply armed faults, refuse what cannot be read
(an unknown operation, a malformed body) and what breaks botocore's model of the operation
(sim.aws.validation), for the simulation's operations and moto's alike, then call the
simulation (or moto), and log the call if it mutates.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sim.aws import moto_additions, sts
from sim.aws.context import SimContext
from sim.aws.errors import AwsError, render_error
from sim.aws.mlflow_api import MlflowApi
from sim.aws.overlays import Overlays
from sim.aws.sagemaker_extras import ForwardToMoto
from sim.aws.unserved import unserved
from sim.aws.validation import validate
from sim.aws.wire import AwsRequest, read_request

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], dict[str, Any]]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _wire_value(value: Any) -> Any:
    """A response value as JSON protocols send it: timestamps as epoch seconds, no nulls."""
    if isinstance(value, dict):
        return {k: _wire_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    if isinstance(value, datetime):
        return value.timestamp()
    return value


def _status_line(status: int) -> str:
    return f"{status} {_REASONS.get(status, 'Unknown')}"


class FrontApp:
    """WSGI application in front of moto."""

    def __init__(
        self,
        ctx: SimContext,
        handlers: dict[tuple[str, str], Handler],
        moto_app: WsgiApp,
        admin: WsgiApp,
        mlflow: MlflowApi | None = None,
    ) -> None:
        self.ctx = ctx
        self.mlflow = mlflow
        self.handlers = handlers
        self.moto_app = moto_app
        self.admin = admin
        self.overlays = Overlays(ctx)
        moto_additions.install()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith("/_sim/"):
            return self.admin(environ, start_response)
        if self.mlflow is not None and self.mlflow.handles(str(environ.get("PATH_INFO", ""))):
            self.ctx.scheduler.run_due()
            return self.mlflow(environ, start_response)
        body = _read_body(environ)
        req = read_request(environ, body)
        self.ctx.scheduler.run_due()
        simulated = (req.service, req.operation) in self.handlers
        # AWS throttles at its front door, before the request is looked at further: a throttled
        # call changes nothing (its call-log entry says applied: false).
        if (
            req.service is not None
            and req.operation is not None
            and not self.ctx.throttle.take(
                self.ctx.account_id,
                req.region or self.ctx.region,
                req.service,
                req.operation,
                req.mutating,
            )
        ):
            throttled = self.ctx.throttle.error(req.service, req.protocol)
            return self._error(req, throttled, start_response, simulated)
        error = (
            self.ctx.faults.request_error(req.service, req.operation, req.protocol)
            if req.operation
            else None
        )
        if error is not None:
            return self._error(req, error, start_response, simulated)
        refused = self._refusal(req)
        if refused is not None:
            return self._error(req, refused, start_response, simulated)
        if simulated:
            with contextlib.suppress(ForwardToMoto):
                return self._simulate(req, start_response)
        elif req.service is not None and req.operation is not None:
            missing = unserved(req.service, req.operation, req.protocol)
            if missing is not None:
                return self._error(req, missing, start_response, False)
        return self._forward(req, environ, body, start_response)

    def _refusal(self, req: AwsRequest) -> AwsError | None:
        """Why the request is refused before any handler runs, if it is."""
        if req.refused is not None:
            # An unrouted S3 request is moto's to answer: its virtual-host and legacy routes are
            # not all in botocore's model.
            if req.unrouted and req.protocol == "rest-xml":
                return _unrouted_s3(req)
            return req.refused
        if req.service is None or req.operation is None:
            return None
        try:
            validate(req.service, req.operation, req.checked, req.protocol)
            check = sts.CHECKS.get((req.service, req.operation))
            if check is not None:
                check(req.params)
        except AwsError as err:
            return err
        return None

    def _simulate(self, req: AwsRequest, start_response: StartResponse) -> Iterable[bytes]:
        assert req.service is not None and req.operation is not None
        handler = self.handlers[(req.service, req.operation)]
        try:
            with self.ctx.lock:
                result = handler(req.params)
                self.ctx.flush()
        except AwsError as err:
            return self._error(req, err, start_response, True)
        except ForwardToMoto:
            raise
        except Exception:
            log.exception("simulated %s.%s failed", req.service, req.operation)
            failure = AwsError(
                "InternalFailure", "The simulation failed to process the request.", 500
            )
            return self._error(req, failure, start_response, True)
        late = self.ctx.faults.request_error(req.service, req.operation, req.protocol, "after")
        if late is not None:
            return self._error(req, late, start_response, True, applied=True)
        payload = json.dumps(_wire_value(result)).encode()
        content_type = (
            "application/json" if req.protocol == "rest-json" else "application/x-amz-json-1.1"
        )
        self._log(req, 200, None, True, applied=True)
        start_response(
            "200 OK",
            [
                ("Content-Type", content_type),
                ("Content-Length", str(len(payload))),
                ("x-amzn-RequestId", req.request_id),
            ],
        )
        return [payload]

    def _error(
        self,
        req: AwsRequest,
        err: AwsError,
        start_response: StartResponse,
        simulated: bool,
        applied: bool = False,
    ) -> Iterable[bytes]:
        status, headers, payload = render_error(err, req.service, req.protocol, req.request_id)
        self._log(req, status, err.code, simulated, applied)
        start_response(_status_line(status), [*headers, ("Content-Length", str(len(payload)))])
        return [payload]

    def _forward(
        self, req: AwsRequest, environ: dict[str, Any], body: bytes, start_response: StartResponse
    ) -> Iterable[bytes]:
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["HTTP_X_MOTO_ACCOUNT_ID"] = self.ctx.account_id
        held: list[tuple[str, list[tuple[str, str]], Any]] = []

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            held.append((status, headers, exc_info))
            return lambda _data: None

        chunks = list(self.moto_app(environ, hold))
        status_line, headers, exc_info = held[0]
        status = int(status_line.split(" ", 1)[0])
        if status < 400 and req.operation:
            late = self.ctx.faults.request_error(req.service, req.operation, req.protocol, "after")
            if late is not None:
                return self._error(req, late, start_response, False, applied=True)
        if status < 400:
            body_out = self.overlays.patch(req, b"".join(chunks))
            chunks = [body_out]
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(body_out))))
        if exc_info:
            start_response(status_line, headers, exc_info)
        else:
            start_response(status_line, headers)
        error = _error_code(b"".join(chunks)) if status >= 400 else None
        self._log(req, status, error, False, applied=status < 400)
        return chunks

    def _log(
        self, req: AwsRequest, status: int, error: str | None, simulated: bool, applied: bool
    ) -> None:
        if req.service is None or req.operation is None or not req.mutating:
            return
        self.ctx.calls.record(
            service=req.service,
            operation=req.operation,
            params=req.params,
            status=status,
            error=error,
            request_id=req.request_id,
            simulated=simulated,
            applied=applied,
            at=self.ctx.now(),
        )


def _unrouted_s3(req: AwsRequest) -> AwsError | None:
    """What S3 answers for a path-style request no operation of its model takes, where moto
    fails: a POST to an object without a subresource (`?uploadId=`, `?uploads`, `?restore`,
    `?select`) is 405 MethodNotAllowed with the method and the resource type, as S3 answers a
    POST to an object URL (seen from s3.amazonaws.com in mhart/aws4fetch#14; the codes are
    https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html). Anything else is
    moto's, whose virtual-host and legacy routes are not all in botocore's model."""
    segments = [part for part in req.path.split("/") if part]
    if req.method == "POST" and len(segments) >= 2:
        return AwsError(
            "MethodNotAllowed",
            "The specified method is not allowed against this resource.",
            405,
            {"Method": "POST", "ResourceType": "OBJECT"},
        )
    return None


def _read_body(environ: dict[str, Any]) -> bytes:
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    length = str(environ.get("CONTENT_LENGTH") or "")
    if length.isdigit():
        return bytes(stream.read(int(length)))
    if length:  # not a length: nothing can be read; validation refuses the header
        return b""
    if environ.get("wsgi.input_terminated"):
        return bytes(stream.read())
    return b""


def _error_code(payload: bytes) -> str | None:
    """The error code in a moto error response (JSON or XML), for the call log."""
    text = payload.decode("utf-8", "replace")
    try:
        value = json.loads(text)
        if isinstance(value, dict):
            code = value.get("__type") or value.get("code") or value.get("Code")
            return str(code).rsplit("#", 1)[-1] if code else None
    except ValueError:
        pass
    start = text.find("<Code>")
    end = text.find("</Code>")
    return text[start + 6 : end] if start >= 0 and end > start else None
