"""One boto3 session per process: every adapter's clients, in any region, come from it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.loaders import Loader

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


def test_the_session_keeps_service_models_without_their_documentation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setattr(aws_session, "_session", None)
    ec2 = aws_session.client("ec2", "us-east-1", "http://127.0.0.1:1")
    loader = aws_session.session()._session.get_component("data_loader")
    assert isinstance(loader, aws_session.ModelLoader)
    held = loader.load_service_model("ec2", "service-2")
    pending = [held]
    while pending:  # no documentation member anywhere in the model the client uses
        item = pending.pop()
        if isinstance(item, dict):
            assert type(item) is dict  # plain dicts, not botocore's OrderedDicts
            assert not any(item.get(key) for key in aws_session.DOCUMENTATION)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    # the same model as botocore's own parse, in the same order, less its documentation
    theirs = Loader().load_service_model("ec2", "service-2")
    aws_session.without_documentation(theirs)
    assert theirs == held
    assert list(theirs["shapes"]) == list(held["shapes"])
    # everything a call needs is there: the operation, its members, their constraints
    op = ec2.meta.service_model.operation_model("DescribeVpcs")
    assert {"VpcIds", "Filters", "MaxResults"} <= set(op.input_shape.members)
    assert op.input_shape.members["MaxResults"].metadata["min"] == 5
    assert len(loader.search_paths) == len(set(loader.search_paths))
    with pytest.raises(Exception, match="Invalid type for parameter VpcIds"):
        ec2.describe_vpcs(VpcIds="vpc-1")  # client-side validation still reads the model
    s3 = aws_session.client("s3", "us-east-1", "http://127.0.0.1:1")
    with pytest.raises(Exception, match="Could not connect"):  # built and sent, as before
        s3.put_object(Bucket="b", Key="k", Body=b"x")
