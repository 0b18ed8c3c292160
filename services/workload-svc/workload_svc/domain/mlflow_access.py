"""Pods' authenticated access to a SageMaker managed MLflow tracking server (IRSA), decided
purely from the job, the tracking server's ARN and the cluster's OIDC issuer.

A job whose `mlflow_tracking_uri` is a tracking server's ARN runs its pods as the service
account `mlflow-<server>` of its namespace. That account is annotated
`eks.amazonaws.com/role-arn` with the role `hyperpilot-<cluster>-mlflow-<server>`, whose trust is
the cluster's IAM OIDC provider limited to that one service account (audience
`sts.amazonaws.com`) and whose inline policy allows `sagemaker-mlflow:*` on that server's ARN
only ("Set up IAM permissions for MLflow" in the SageMaker developer guide: the MLflow REST
actions are the `sagemaker-mlflow` service prefix, on the tracking server resource). The
container's `sagemaker-mlflow` plugin reads `MLFLOW_TRACKING_URI` = the ARN, signs every request
with SigV4 for `sagemaker-mlflow` with the role's credentials (the EKS pod identity webhook puts
`AWS_ROLE_ARN` and the projected token in the pod), and routes it to
`https://{region}.experiments.sagemaker.aws` with the server's ARN in a header.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

KubeObject = dict[str, Any]
ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"mlflow-tracking-server/(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255})$"
)
ROLE_ARN_ANNOTATION = "eks.amazonaws.com/role-arn"
STS_AUDIENCE = "sts.amazonaws.com"
COMPONENT_LABEL = "hyperpilot.io/component"
COMPONENT = "mlflow-access"
POLICY_NAME = "hyperpilot"
MANAGED_TAG = "managed-by"


@dataclass(frozen=True)
class TrackingServer:
    arn: str
    partition: str
    region: str
    account: str
    name: str


def tracking_server(uri: str | None) -> TrackingServer | None:
    """The tracking server a job's tracking URI names, when it is a SageMaker server's ARN (an
    `http(s)://` MLflow needs no AWS identity)."""
    found = ARN.match((uri or "").split("#", 1)[0])
    if found is None:
        return None
    return TrackingServer(
        arn=found.group(0),
        partition=found["partition"],
        region=found["region"],
        account=found["account"],
        name=found["name"],
    )


def _bounded(text: str, limit: int) -> str:
    """`text` when it fits, else cut with a digest of the whole (names stay unique)."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: limit - 9].rstrip('-')}-{digest}"


def service_account_name(server: TrackingServer) -> str:
    return _bounded(f"mlflow-{server.name.lower()}", 63)


def role_name(cluster: str, server: TrackingServer) -> str:
    return _bounded(f"hyperpilot-{cluster}-mlflow-{server.name}", 64)


def oidc_url(issuer: str) -> str:
    return issuer.removeprefix("https://")


def trust_policy(
    server: TrackingServer, issuer: str, namespace: str, account_name: str
) -> dict[str, Any]:
    url = oidc_url(issuer)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {
                    "Federated": f"arn:{server.partition}:iam::{server.account}:oidc-provider/{url}"
                },
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{url}:sub": f"system:serviceaccount:{namespace}:{account_name}",
                        f"{url}:aud": STS_AUDIENCE,
                    }
                },
            }
        ],
    }


def access_policy(server: TrackingServer) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TrackingServer",
                "Effect": "Allow",
                "Action": "sagemaker-mlflow:*",
                "Resource": server.arn,
            }
        ],
    }


def service_account(namespace: str, name: str, role_arn: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {COMPONENT_LABEL: COMPONENT},
            "annotations": {ROLE_ARN_ANNOTATION: role_arn},
        },
    }


def pod_identity(uri: str | None) -> KubeObject:
    """What a job's pod spec takes for its tracking server: the service account (nothing for
    other tracking URIs)."""
    server = tracking_server(uri)
    return {} if server is None else {"serviceAccountName": service_account_name(server)}
