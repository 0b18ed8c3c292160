"""One boto3 session per process: every adapter's clients, in any region, come from it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from shared.adapters import aws_session


def test_every_adapter_makes_its_clients_from_the_one_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []
    real = boto3.session.Session

    def counted(*args: Any, **kwargs: Any) -> Any:
        session = real(*args, **kwargs)
        made.append(session)
        return session

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setattr(aws_session, "_session", None)
    monkeypatch.setattr(boto3.session, "Session", counted)

    from cluster_svc.adapters.aws import AwsClients
    from shared.adapters.eks_kube import eks_token
    from workload_svc.adapters.sagemaker import TrackingServers
    from workload_svc.adapters.secretsmanager import SecretsManager

    aws = AwsClients("us-east-1", "http://127.0.0.1:1")
    clients = [aws.client("eks"), aws.client("sagemaker")]
    clients.append(SecretsManager("http://127.0.0.1:1")._client("us-west-2"))
    clients.append(TrackingServers("us-east-1", "http://127.0.0.1:1").client)
    token = eks_token(aws_session.session(), "c1", "us-east-1", "cluster-svc")

    assert len(made) == 1
    assert {c.meta.region_name for c in clients} == {"us-east-1", "us-west-2"}
    assert token.startswith("k8s-aws-v1.")
    assert aws.client("eks") is clients[0]  # cached per service
