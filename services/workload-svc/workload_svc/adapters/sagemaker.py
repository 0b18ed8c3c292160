"""SageMaker's managed MLflow tracking servers and HyperPod cluster descriptions, through boto3
(run in threads)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from shared.adapters import aws_session
from shared.errors import PermanentError, StageError, TemporaryError
from shared.regions import scoped_region

T = TypeVar("T")
RETRYABLE = frozenset({"ThrottlingException", "InternalFailure", "ServiceUnavailable"})


def aws_error(exc: Exception, what: str) -> StageError:
    """A boto3 failure as a stage error: throttling and unreachable endpoints are temporary."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        message = str(exc.response.get("Error", {}).get("Message", exc))
        if code in RETRYABLE:
            return TemporaryError(code, f"{what}: {message}")
        return PermanentError(code, f"{what}: {message}")
    if isinstance(exc, EndpointConnectionError | ConnectionError):
        return TemporaryError("EndpointUnreachable", f"{what}: {exc}")
    return PermanentError(type(exc).__name__, f"{what}: {exc}")


async def in_thread(what: str, fn: Callable[[], T]) -> T:
    """Run a blocking boto3 call in a thread; its failure as a stage error naming `what`."""
    try:
        return await asyncio.to_thread(fn)
    except StageError:
        raise
    except Exception as exc:
        raise aws_error(exc, what) from exc


class TrackingServers:
    def __init__(self, region: str, endpoint_url: str | None = None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url

    @property
    def client(self) -> Any:
        """SageMaker in the region of the running command or query, else the default region."""
        return self._client(scoped_region() or self.region)

    # Made on first use, one per region: SageMaker's service model costs the process about
    # 20 MB, and tracking-server calls are rare.
    @functools.cache  # noqa: B019 - one client per region for the life of the process
    def _client(self, region: str) -> Any:
        return aws_session.client(
            "sagemaker",
            region,
            self.endpoint_url,
            Config(retries={"max_attempts": 3, "mode": "standard"}),
        )

    async def describe(self, name: str) -> dict[str, Any] | None:
        def call() -> dict[str, Any] | None:
            try:
                found: dict[str, Any] = self.client.describe_mlflow_tracking_server(
                    TrackingServerName=name
                )
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in (
                    "ResourceNotFound",
                    "ResourceNotFoundException",
                ):
                    return None
                raise
            found.pop("ResponseMetadata", None)
            return found

        return await self._run(f"DescribeMlflowTrackingServer {name}", call)

    async def describe_cluster(self, region: str, cluster: str) -> dict[str, Any] | None:
        """DescribeCluster of a HyperPod cluster (by name or ARN) in `region`."""

        def call() -> dict[str, Any] | None:
            client = self._client(region)
            try:
                found: dict[str, Any] = client.describe_cluster(ClusterName=cluster)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in (
                    "ResourceNotFound",
                    "ResourceNotFoundException",
                ):
                    return None
                raise
            found.pop("ResponseMetadata", None)
            return found

        return await self._run(f"DescribeCluster {cluster}", call)

    async def create(self, params: dict[str, Any]) -> str:
        def call() -> str:
            return str(self.client.create_mlflow_tracking_server(**params)["TrackingServerArn"])

        return await self._run(f"CreateMlflowTrackingServer {params['TrackingServerName']}", call)

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        return await in_thread(what, fn)
