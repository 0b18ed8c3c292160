"""boto3 clients from one factory, and AWS errors translated into stage errors.

Botocore's own retries are off: the stage engine retries temporary errors itself, so each
retry is visible as an event and counted against the stage's budget.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.parsers import ResponseParserError

from shared.adapters import aws_session
from shared.errors import PermanentError, StageError, TemporaryError
from shared.regions import scoped_region

T = TypeVar("T")

THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "RequestThrottled",
        "ProvisionedThroughputExceededException",
    }
)
TRANSIENT = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "InternalServerError",
        "RequestTimeout",
    }
)


def stage_error(exc: Exception) -> StageError:
    """Classify an AWS failure: temporary (retry the call) or permanent (fail the stage)."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        message = str(error.get("Message", "")) or str(exc)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in THROTTLING or code in TRANSIENT or status >= 500 or status == 429:
            return TemporaryError(code, message)
        return PermanentError(code, message)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return PermanentError(
            "NoCredentials",
            "no AWS credentials were found for the control plane",
            "give the service credentials (an instance profile, AWS_PROFILE or AWS_ACCESS_KEY_ID)",
        )
    if isinstance(exc, BotoConnectionError | HTTPClientError | ConnectionError):
        return TemporaryError("EndpointUnreachable", str(exc))  # never answered, or cut off
    if isinstance(exc, ResponseParserError):
        # it answered, in a shape the service's model does not describe: not "unreachable"
        return TemporaryError("UnreadableResponse", f"the AWS answer could not be read: {exc}")
    if isinstance(exc, ParamValidationError):
        return PermanentError("InvalidParameter", str(exc))
    return PermanentError(type(exc).__name__, str(exc))


class AwsClients:
    """One boto3 session per process; clients are thread-safe and cached per service and
    region. A call goes to the region of the command or query it runs for (its cluster's,
    `shared.regions.region_scope`), else to the default region."""

    def __init__(
        self, region: str, endpoint_url: str | None = None, served: tuple[str, ...] = ()
    ) -> None:
        self.default_region = region
        self.served = served or (region,)  # the regions the control plane manages clusters in
        self.endpoint_url = endpoint_url
        self._config = Config(
            user_agent_extra="hyperpilot/0.1",
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
        )
        self._clients: dict[tuple[str, str], Any] = {}

    @property
    def region(self) -> str:
        """The region calls go to now: the running command's or query's, else the default."""
        return scoped_region() or self.default_region

    def client(self, service: str, region: str | None = None) -> Any:
        """The client of `service` in the clients' region, or in `region` (a service served
        from a few regions only, such as the Price List API)."""
        key = (service, region or self.region)
        if key not in self._clients:
            self._clients[key] = aws_session.client(
                service, key[1], self.endpoint_url, self._config
            )
        return self._clients[key]

    async def call(self, service: str, operation: str, **params: Any) -> Any:
        """Run one AWS call in a thread; errors come back as stage errors."""
        method: Callable[..., Any] = getattr(self.client(service), operation)
        try:
            return await asyncio.to_thread(functools.partial(method, **params))
        except (ClientError, BotoCoreError) as exc:
            raise stage_error(exc) from exc

    @staticmethod
    def error_code(exc: StageError) -> str:
        return exc.code
