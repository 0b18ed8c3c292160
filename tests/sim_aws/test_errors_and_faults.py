"""AWS error shapes and injected faults, as boto3 parses them."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.testing import aws_client, inject_fault
from tests.sim_aws.conftest import Network, group_spec, unique

NO_CLIENT_CHECKS = Config(
    parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1}
)
NO_RETRIES = Config(retries={"mode": "standard", "total_max_attempts": 1})


def error_of(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, int, str]:
    response: dict[str, Any] = exc.value.response
    return (
        response["Error"]["Code"],
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Message"],
    )


def test_validation_names_the_field_for_sagemaker(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker", config=NO_CLIENT_CHECKS)
    with pytest.raises(ClientError) as err:
        sm.create_cluster(
            ClusterName=unique("v"),
            InstanceGroups=[group_spec(network, instance_type="ml.not-a-type")],
        )
    code, status, message = error_of(err)
    assert (code, status) == ("ValidationException", 400)
    assert (
        "Value 'ml.not-a-type' at 'instanceGroups.1.member.instanceType' failed to satisfy constraint"
        in message
    )
    assert message.startswith("1 validation error detected")
    with pytest.raises(ClientError) as err:
        sm.create_cluster(
            ClusterName="bad name!",
            NodeRecovery="Sometimes",
            InstanceGroups=[
                {
                    "InstanceGroupName": "g",
                    "InstanceType": "ml.g5.xlarge",
                    "ExecutionRole": network.role_arn,
                }
            ],
        )
    code, _, message = error_of(err)
    assert code == "ValidationException"
    assert message.startswith("3 validation errors detected")
    assert "at 'clusterName'" in message and "at 'nodeRecovery'" in message
    assert (
        "Value null at 'instanceGroups.1.member.instanceCount' failed to satisfy constraint: Member must not be null"
        in message
    )
    assert sim.call_log("sagemaker", "CreateCluster")[-1]["error"] == "ValidationException"


def test_validation_for_eks_and_service_quotas(sim: SimulatedAws) -> None:
    eks = aws_client(sim, "eks", config=NO_CLIENT_CHECKS)
    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name="x",
            roleArn="arn:aws:iam::111111111111:role/r",
            resourcesVpcConfig={},
            accessConfig={"authenticationMode": "BOTH"},
        )
    code, status, message = error_of(err)
    assert (code, status) == ("InvalidParameterException", 400)
    assert "accessConfig.authenticationMode" in message
    quotas = aws_client(sim, "service-quotas", config=NO_CLIENT_CHECKS)
    with pytest.raises(ClientError) as err:
        quotas.get_service_quota(ServiceCode="sagemaker")
    assert error_of(err)[0] == "ValidationException"


@pytest.mark.parametrize(
    ("service", "call", "expected"),
    [
        (
            "sagemaker",
            lambda c: c.describe_cluster(ClusterName="absent"),
            ("ResourceNotFound", 400),
        ),
        (
            "sagemaker",
            lambda c: c.update_cluster(ClusterName="absent", NodeRecovery="None"),
            ("ResourceNotFound", 400),
        ),
        (
            "sagemaker",
            lambda c: c.list_cluster_nodes(ClusterName="absent"),
            ("ResourceNotFound", 400),
        ),
        ("eks", lambda c: c.describe_cluster(name="absent"), ("ResourceNotFoundException", 404)),
        ("eks", lambda c: c.list_addons(clusterName="absent"), ("ResourceNotFoundException", 404)),
        (
            "service-quotas",
            lambda c: c.get_service_quota(ServiceCode="sagemaker", QuotaCode="L-00000000"),
            ("NoSuchResourceException", 400),
        ),
        (
            "service-quotas",
            lambda c: c.list_service_quotas(ServiceCode="nothing"),
            ("NoSuchResourceException", 400),
        ),
    ],
)
def test_not_found_shapes(
    sim: SimulatedAws, service: str, call: Any, expected: tuple[str, int]
) -> None:
    with pytest.raises(ClientError) as err:
        call(aws_client(sim, service))
    assert error_of(err)[:2] == expected


def test_modeled_exceptions_are_raised_as_their_classes(sim: SimulatedAws) -> None:
    sm = aws_client(sim, "sagemaker")
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_cluster(ClusterName="absent")
    eks = aws_client(sim, "eks")
    with pytest.raises(eks.exceptions.ResourceNotFoundException):
        eks.describe_cluster(name="absent")


def test_throttling_reaches_boto3_and_standard_retries_absorb_it(
    sim: SimulatedAws, clean_faults: None
) -> None:
    eks = aws_client(sim, "eks", config=NO_RETRIES)
    with (
        inject_fault(sim, "throttle", service="eks", operation="ListClusters"),
        pytest.raises(ClientError) as err,
    ):
        eks.list_clusters()
    assert error_of(err)[:1] == ("ThrottlingException",)
    sm = aws_client(
        sim, "sagemaker", config=Config(retries={"mode": "standard", "total_max_attempts": 3})
    )
    before = len(sim.call_log("sagemaker", "CreateMlflowTrackingServer"))
    sim.faults.inject(
        "throttle", service="sagemaker", operation="CreateMlflowTrackingServer", times=1
    )
    name = unique("ml")
    sm.create_mlflow_tracking_server(
        TrackingServerName=name,
        ArtifactStoreUri="s3://b/m",
        RoleArn="arn:aws:iam::111111111111:role/sim-test-role",
    )
    attempts = sim.call_log("sagemaker", "CreateMlflowTrackingServer")[before:]
    assert [(a["status"], a["error"]) for a in attempts] == [
        (400, "ThrottlingException"),
        (200, None),
    ]


@pytest.mark.parametrize(
    ("service", "call", "code"),
    [
        ("ec2", lambda c: c.create_vpc(CidrBlock="10.9.0.0/16"), "RequestLimitExceeded"),
        (
            "iam",
            lambda c: c.create_role(RoleName="throttled", AssumeRolePolicyDocument="{}"),
            "Throttling",
        ),
        ("s3", lambda c: c.create_bucket(Bucket="throttled-bucket"), "SlowDown"),
        ("service-quotas", lambda c: c.list_services(), "TooManyRequestsException"),
    ],
)
def test_throttling_in_each_protocols_shape(
    sim: SimulatedAws, clean_faults: None, service: str, call: Any, code: str
) -> None:
    client = aws_client(sim, service, config=NO_RETRIES)
    with inject_fault(sim, "throttle", service=service), pytest.raises(ClientError) as err:
        call(client)
    assert error_of(err)[0] == code


def test_transient_server_errors_are_retried(sim: SimulatedAws, clean_faults: None) -> None:
    eks = aws_client(sim, "eks", config=NO_RETRIES)
    with (
        inject_fault(sim, "server_error", service="eks", operation="ListClusters"),
        pytest.raises(ClientError) as err,
    ):
        eks.list_clusters()
    assert error_of(err)[:2] == ("ServerException", 500)
    s3 = aws_client(sim, "s3", config=Config(retries={"mode": "standard", "total_max_attempts": 3}))
    sim.faults.inject("server_error", service="s3", operation="CreateBucket", times=1, status=503)
    s3.create_bucket(Bucket="retried-bucket")
    attempts = [
        c
        for c in sim.call_log("s3", "CreateBucket")
        if c["params"].get("Bucket") == "retried-bucket"
    ]
    assert [a["status"] for a in attempts] == [503, 200]
    s3.delete_bucket(Bucket="retried-bucket")


def test_custom_error_fault(sim: SimulatedAws, clean_faults: None) -> None:
    sm = aws_client(sim, "sagemaker", config=NO_RETRIES)
    with inject_fault(
        sim,
        "error",
        service="sagemaker",
        operation="ListClusters",
        code="AccessDeniedException",
        message="nope",
        status=400,
        times=None,
    ):
        for _ in range(2):
            with pytest.raises(ClientError) as err:
                sm.list_clusters()
            assert error_of(err) == ("AccessDeniedException", 400, "nope")
    sm.list_clusters()


def test_unknown_fault_kind_is_refused(sim: SimulatedAws) -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        sim.faults.inject("meteor")
    with pytest.raises(ValueError, match="unknown fault options"):
        sim.faults.inject("throttle", colour="red")


def test_fault_after_the_call_took_effect(
    sim: SimulatedAws, network: Network, clean_faults: None
) -> None:
    """A response lost after the work was done: retries meet what the first attempt did."""
    retrying = Config(retries={"mode": "standard", "total_max_attempts": 3})
    eks = aws_client(sim, "eks", config=retrying)
    name = unique("lost")
    sim.faults.inject("server_error", service="eks", operation="CreateCluster", phase="after")
    created = eks.create_cluster(
        name=name,
        roleArn=network.role_arn,
        resourcesVpcConfig={"subnetIds": list(network.subnets.values())},
    )
    assert created["cluster"]["name"] == name
    attempts = [c for c in sim.call_log("eks", "CreateCluster") if c["params"]["name"] == name]
    assert [(a["status"], a["applied"]) for a in attempts] == [(500, True), (200, True)]
    assert (
        attempts[0]["params"]["clientRequestToken"] == attempts[1]["params"]["clientRequestToken"]
    )
    assert eks.list_clusters()["clusters"].count(name) == 1
    eks.delete_cluster(name=name)

    sm = aws_client(sim, "sagemaker", config=retrying)
    sim.faults.inject("server_error", service="sagemaker", operation="CreateCluster", phase="after")
    hp = unique("lost")
    with pytest.raises(ClientError) as err:
        sm.create_cluster(
            ClusterName=hp,
            InstanceGroups=[group_spec(network, count=1)],
            VpcConfig={
                "Subnets": [network.subnets["use1-az1"]],
                "SecurityGroupIds": [network.security_group],
            },
        )
    assert error_of(err)[0] == "ResourceInUse"
    assert sm.describe_cluster(ClusterName=hp)["ClusterName"] == hp
    sm.delete_cluster(ClusterName=hp)

    iam = aws_client(sim, "iam", config=retrying)
    sim.faults.inject("server_error", service="iam", operation="CreateRole", phase="after")
    with pytest.raises(ClientError) as err:
        iam.create_role(RoleName="lost-role", AssumeRolePolicyDocument="{}")
    assert error_of(err)[0] == "EntityAlreadyExists"
    applied = [
        c["applied"]
        for c in sim.call_log("iam", "CreateRole")
        if c["params"].get("RoleName") == "lost-role"
    ]
    assert applied == [True, False]
    iam.delete_role(RoleName="lost-role")


def test_batch_node_calls_take_at_most_25_ids(sim: SimulatedAws) -> None:
    sm = aws_client(sim, "sagemaker", config=NO_CLIENT_CHECKS)
    with pytest.raises(ClientError) as err:
        sm.batch_reboot_cluster_nodes(ClusterName="any", NodeIds=[f"i-{n:017x}" for n in range(26)])
    code, _, message = error_of(err)
    assert code == "ValidationException"
    assert (
        "at 'nodeIds' failed to satisfy constraint: Member must have length less than or equal to 25"
        in message
    )
