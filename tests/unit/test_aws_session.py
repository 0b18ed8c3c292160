"""One boto3 session per process: every adapter's clients, in any region, come from it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.loaders import Loader

from shared.adapters import aws_session


@pytest.fixture
def fresh_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's session made anew, its credentials from the environment."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setattr(aws_session, "_session", None)


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


def test_the_session_keeps_service_models_without_their_documentation(fresh_session: None) -> None:
    ec2 = aws_session.client("ec2", "us-east-1", "http://127.0.0.1:1")
    loader = aws_session.session()._session.get_component("data_loader")
    assert isinstance(loader, aws_session.ModelLoader)
    held = loader.load_service_model("ec2", "service-2")
    assert isinstance(held["shapes"], aws_session.CompactMapping)
    shapes = {name: held["shapes"][name] for name in held["shapes"]}
    pending = [{**held, "shapes": shapes}]
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
    assert theirs == {**held, "shapes": shapes}
    assert list(theirs["shapes"]) == list(held["shapes"])
    assert all(list(theirs["shapes"][n]) == list(shapes[n]) for n in shapes)  # member order
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
    # an error answer is matched to its modelled exception (botocore lists every shape once)
    assert ec2.meta.service_model.shape_for_error_code("NoSuchKey") is None
    error = s3.meta.service_model.shape_for_error_code("NoSuchKey")
    assert error is not None and error.metadata.get("exception")


def test_a_model_s_shapes_held_compact_take_less_memory_than_parsed() -> None:
    """In a process of its own: the clients cluster-svc makes, their models' memory with the
    shapes parsed (botocore's loader, documentation emptied) and compact."""
    import subprocess
    import sys
    import textwrap

    probe = textwrap.dedent(
        """
        import gc, os, sys, tracemalloc
        os.environ.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret")
        from shared.adapters import aws_session
        if sys.argv[1] == "parsed":
            aws_session.CompactMapping = lambda shapes: shapes
        tracemalloc.start()
        clients = [
            aws_session.client(name, "us-east-1", "http://127.0.0.1:1")
            for name in "ec2 eks sagemaker iam s3 sts fsx cloudformation sqs events".split()
        ]
        gc.collect()
        print(tracemalloc.get_traced_memory()[0])
        """
    )
    traced = {
        form: int(
            subprocess.run(
                [sys.executable, "-c", probe, form], check=True, capture_output=True, text=True
            ).stdout
        )
        for form in ("parsed", "compact")
    }
    assert traced["compact"] < 0.75 * traced["parsed"], traced


def test_the_endpoint_data_keeps_its_services_compact_and_resolves_as_botocore_s_own(
    fresh_session: None,
) -> None:
    ours = aws_session.session()
    theirs = boto3.session.Session()
    loader = ours._session.get_component("data_loader")
    data, _ = loader.load_data_with_path("endpoints")
    assert all(isinstance(p["services"], aws_session.CompactMapping) for p in data["partitions"])
    plain, _ = Loader().load_data_with_path("endpoints")
    for held, parsed in zip(data["partitions"], plain["partitions"], strict=True):
        assert list(held["services"]) == list(parsed["services"])
        assert all(
            held["services"][name] == parsed["services"][name] for name in parsed["services"]
        )
    for service in ("ec2", "sagemaker", "eks", "s3", "iam", "pricing", "sts"):
        for partition in ("aws", "aws-cn", "aws-us-gov"):
            assert ours.get_available_regions(service, partition) == theirs.get_available_regions(
                service, partition
            )
    for service, region in (("sagemaker", "eu-west-1"), ("iam", "us-east-1"), ("s3", "cn-north-1")):
        mine = aws_session.client(service, region)
        assert (
            mine.meta.endpoint_url == theirs.client(service, region_name=region).meta.endpoint_url
        )
