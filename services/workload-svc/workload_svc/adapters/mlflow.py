"""A job's MLflow side: the IRSA role its pods assume (IAM, and the cluster's OIDC issuer from
EKS), and its runs and metric history read from the tracking server's MLflow REST API.

The REST calls are made the way the `sagemaker-mlflow` plugin makes them (aws/sagemaker-mlflow:
`auth.py`, `mlflow_sagemaker_helpers.py`): to `https://{region}.experiments.sagemaker.aws`
(`SAGEMAKER_MLFLOW_CUSTOM_ENDPOINT`, or the configured AWS endpoint, replaces it), with the
server's ARN in `x-mlflow-sm-tracking-server-arn`, signed with SigV4 for `sagemaker-mlflow` with
this service's own credentials."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any
from urllib.parse import urlencode

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.exceptions import ClientError

from shared.adapters import aws_session
from shared.errors import PermanentError, TemporaryError
from shared.regions import scoped_region
from workload_svc.adapters.sagemaker import in_thread
from workload_svc.domain.mlflow_access import MANAGED_TAG, POLICY_NAME, TrackingServer

SERVICE = "sagemaker-mlflow"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str):
        a = json.loads(a)
    return bool(a == b)


class MlflowIdentity:
    """IAM roles for jobs' service accounts, trusted through the cluster's OIDC provider."""

    def __init__(self, region: str, endpoint_url: str | None = None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url

    @functools.cached_property
    def iam(self) -> Any:
        return aws_session.client(
            "iam", self.region, self.endpoint_url, Config(retries={"mode": "standard"})
        )

    @property
    def eks(self) -> Any:
        """EKS in the region of the running command (the job's cluster's), else the default."""
        return self._eks(scoped_region() or self.region)

    @functools.cache  # noqa: B019 - one client per region for the life of the process
    def _eks(self, region: str) -> Any:
        return aws_session.client(
            "eks", region, self.endpoint_url, Config(retries={"mode": "standard"})
        )

    async def issuer(self, eks_cluster: str) -> str | None:
        def call() -> str | None:
            found = self.eks.describe_cluster(name=eks_cluster)["cluster"]
            issuer = ((found.get("identity") or {}).get("oidc") or {}).get("issuer")
            return str(issuer) if issuer else None

        return await in_thread(f"DescribeCluster {eks_cluster}", call)

    async def ensure_role(
        self, name: str, trust: dict[str, Any], policy: dict[str, Any], cluster: str
    ) -> str:
        """The role's ARN, after making it (or its trust and policy) equal to the request. A
        same-named role Hyperpilot did not make for `cluster` is refused, never changed."""

        def call() -> str:
            try:
                role = self.iam.get_role(RoleName=name)["Role"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchEntity":
                    raise
                role = self.iam.create_role(
                    RoleName=name,
                    AssumeRolePolicyDocument=json.dumps(trust),
                    Description=f"MLflow access of jobs on Hyperpilot cluster {cluster}",
                    Tags=[
                        {"Key": MANAGED_TAG, "Value": "hyperpilot"},
                        {"Key": "hyperpilot-cluster", "Value": cluster},
                    ],
                )["Role"]
            else:
                tags = {t["Key"]: t["Value"] for t in role.get("Tags") or []}
                if (
                    tags.get(MANAGED_TAG) != "hyperpilot"
                    or tags.get("hyperpilot-cluster") != cluster
                ):
                    raise PermanentError(
                        "RoleNameTaken",
                        f"IAM role {name} exists and was not made by Hyperpilot for cluster"
                        f" {cluster}",
                        f"delete or rename role {name}, then retry",
                    )
                if not _same(role.get("AssumeRolePolicyDocument"), trust):
                    self.iam.update_assume_role_policy(
                        RoleName=name, PolicyDocument=json.dumps(trust)
                    )
            try:
                current = self.iam.get_role_policy(RoleName=name, PolicyName=POLICY_NAME)
                same = _same(current.get("PolicyDocument"), policy)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchEntity":
                    raise
                same = False
            if not same:
                self.iam.put_role_policy(
                    RoleName=name, PolicyName=POLICY_NAME, PolicyDocument=json.dumps(policy)
                )
            return str(role["Arn"])

        return await in_thread(f"IAM role {name}", call)


class MlflowRuns:
    """Signed reads of a tracking server's runs and metric history (MLflow's REST API)."""

    def __init__(self, region: str, endpoint_url: str | None = None) -> None:
        self.region = region
        self.endpoint_url = endpoint_url

    def _endpoint(self, server: TrackingServer) -> str:
        custom = os.environ.get("SAGEMAKER_MLFLOW_CUSTOM_ENDPOINT") or self.endpoint_url
        return (custom or f"https://{server.region}.experiments.sagemaker.aws").rstrip("/")

    async def call(
        self, server: TrackingServer, method: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """One MLflow REST call; a 404 answers {} (no such experiment or run)."""
        url = f"{self._endpoint(server)}/api/2.0/mlflow/{operation}"
        body = b""
        if method == "GET":
            url += "?" + urlencode(params, doseq=True).replace("+", "%20")
        else:
            body = json.dumps(params).encode()
        headers = {
            "Content-Type": "application/json",
            "x-mlflow-sm-tracking-server-arn": server.arn,
            "X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest(),
        }

        def signed() -> dict[str, str]:
            credentials = aws_session.session().get_credentials()
            if credentials is None:
                raise PermanentError(
                    "NoCredentials",
                    "workload-svc has no AWS credentials to sign MLflow requests with",
                    "give the service an AWS identity allowed sagemaker-mlflow:* on the server",
                )
            request = AWSRequest(method=method, url=url, data=body or None, headers=headers)
            SigV4Auth(credentials.get_frozen_credentials(), SERVICE, server.region).add_auth(
                request
            )
            return dict(request.headers.items())

        signed_headers = await in_thread("sign MLflow request", signed)
        # imported here: a service process loads httpx only once it reads MLflow (shared/slim.py)
        import httpx

        try:
            async with httpx.AsyncClient(timeout=15) as client:
                answer = await client.request(
                    method, url, content=body or None, headers=signed_headers
                )
        except httpx.HTTPError as exc:
            raise TemporaryError(
                "TrackingServerUnreachable", f"tracking server {server.name}: {exc}"
            ) from exc
        if answer.status_code == 404:
            return {}
        if answer.status_code >= 400:
            try:
                found = answer.json()
            except ValueError:
                found = {}
            code = str(found.get("error_code") or f"HTTP{answer.status_code}")
            message = str(found.get("message") or answer.text[:200])
            error = TemporaryError if answer.status_code >= 500 else PermanentError
            raise error(code, f"tracking server {server.name}: {message}")
        result: dict[str, Any] = answer.json()
        return result
