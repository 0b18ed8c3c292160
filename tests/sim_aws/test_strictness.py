"""The simulated AWS refuses what AWS refuses: each malformed request of issue 24, by name.

Raw botocore with client-side validation off, as another SDK or a hand-written request would
send it; every refusal is a 4xx in the service's own shape, and nothing refused is stored.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network, create_eks, create_hyperpod, group_spec, unique

RAW = Config(parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1})


def refused(call: Any) -> tuple[str, int, str]:
    """(code, status, message) of a call that must fail."""
    with pytest.raises(ClientError) as err:
        call()
    response: dict[str, Any] = err.value.response
    return (
        response["Error"]["Code"],
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"].get("Message", ""),
    )


def signed(
    sim: SimulatedAws, service: str, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    """Send one SigV4-signed request as is; (status, body)."""
    request = AWSRequest(method=method, url=sim.endpoint_url + path, data=body, headers=headers)
    SigV4Auth(Credentials("testing", "testing"), service, sim.region).add_auth(request)
    raw = urllib.request.Request(
        request.url, data=body or None, headers=dict(request.headers), method=method
    )
    try:
        with urllib.request.urlopen(raw) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def hyperpod_names(sim: SimulatedAws) -> list[Any]:
    sm = aws_client(sim, "sagemaker")
    return [c["ClusterName"] for c in sm.list_clusters()["ClusterSummaries"]]


def test_instance_count_as_a_word_is_a_validation_error_not_a_500(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker", config=RAW)
    code, status, message = refused(
        lambda: sm.create_cluster(
            ClusterName=unique("two"),
            InstanceGroups=[group_spec(network, count="two")],  # type: ignore[arg-type]
        )
    )
    assert (code, status) == ("ValidationException", 400)
    assert "Value 'two' at 'instanceGroups.1.member.instanceCount'" in message
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)])
    code, status, message = refused(
        lambda: sm.update_cluster(
            ClusterName=name,
            InstanceGroups=[group_spec(network, count="two")],  # type: ignore[arg-type]
        )
    )
    assert (code, status) == ("ValidationException", 400)
    assert "instanceGroups.1.member.instanceCount" in message
    assert sm.describe_cluster(ClusterName=name)["InstanceGroups"][0]["TargetCount"] == 1


def test_instance_count_with_a_fraction_is_refused(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker", config=RAW)
    name = unique("frac")
    code, status, message = refused(
        lambda: sm.create_cluster(
            ClusterName=name,
            InstanceGroups=[group_spec(network, count=1.5)],  # type: ignore[arg-type]
        )
    )
    assert (code, status) == ("ValidationException", 400)
    assert "Value '1.5' at 'instanceGroups.1.member.instanceCount'" in message
    assert name not in hyperpod_names(sim)


def test_cluster_name_true_is_refused_and_not_stored(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker", config=RAW)
    before = hyperpod_names(sim)
    code, status, message = refused(
        lambda: sm.create_cluster(ClusterName=True, InstanceGroups=[group_spec(network)])
    )
    assert (code, status) == ("ValidationException", 400)
    assert "at 'clusterName' failed to satisfy constraint: Member must be of type string" in message
    # Other tests' clusters may finish deleting meanwhile, so the check is that nothing was added.
    after = hyperpod_names(sim)
    assert set(after) <= set(before)
    assert all(isinstance(n, str) for n in after)


def test_unknown_target_is_unknown_operation_in_json(sim: SimulatedAws) -> None:
    status, body = signed(
        sim,
        "sagemaker",
        "POST",
        "/",
        b"{}",
        {"X-Amz-Target": "SageMaker.NoSuchOperation", "Content-Type": "application/x-amz-json-1.1"},
    )
    assert status == 400
    answer = json.loads(body)
    assert answer["__type"] == "UnknownOperationException"
    assert "SageMaker.NoSuchOperation" in answer["message"]


def test_unknown_query_action_is_invalid_action(sim: SimulatedAws) -> None:
    status, body = signed(
        sim,
        "iam",
        "POST",
        "/",
        b"Action=NoSuchAction&Version=2010-05-08",
        {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
    )
    assert status == 400
    assert b"<Code>InvalidAction</Code>" in body


def test_eks_describe_cluster_with_an_empty_name_is_refused(sim: SimulatedAws) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    code, status, message = refused(lambda: eks.describe_cluster(name=""))
    assert (code, status) == ("InvalidParameterException", 400)
    assert "Value null at 'name'" in message


def test_get_clusters_with_a_trailing_slash_is_refused(sim: SimulatedAws) -> None:
    status, body = signed(sim, "eks", "GET", "/clusters/", b"", {})
    assert status == 400
    assert json.loads(body)["__type"] == "InvalidParameterException"
    assert signed(sim, "eks", "GET", "/clusters", b"", {})[0] == 200


def test_create_addon_with_a_list_for_its_name_is_refused(
    sim: SimulatedAws, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    code, status, message = refused(
        lambda: eks.create_addon(clusterName=eks_cluster["name"], addonName=["x"])
    )
    assert (code, status) == ("InvalidParameterException", 400)
    assert "at 'addonName' failed to satisfy constraint: Member must be of type string" in message


def test_eks_create_cluster_with_a_numeric_name_is_refused_and_listing_still_works(
    sim: SimulatedAws, network: Network
) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    code, status, message = refused(
        lambda: eks.create_cluster(
            name=123,
            roleArn=network.role_arn,
            resourcesVpcConfig={"subnetIds": list(network.subnets.values())[:2]},
        )
    )
    assert (code, status) == ("InvalidParameterException", 400)
    assert "at 'name'" in message
    clusters = eks.list_clusters()["clusters"]
    assert all(isinstance(c, str) for c in clusters) and 123 not in clusters


@pytest.mark.parametrize("node_ids", [[5], [None]], ids=["number", "null"])
def test_node_ids_that_are_not_strings_are_refused(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any], node_ids: list[Any]
) -> None:
    sm = aws_client(sim, "sagemaker", config=RAW)
    name = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)])
    for call in (sm.batch_reboot_cluster_nodes, sm.batch_replace_cluster_nodes):
        code, status, message = refused(lambda call=call: call(ClusterName=name, NodeIds=node_ids))
        assert (code, status) == ("ValidationException", 400)
        assert "at 'nodeIds.1.member'" in message
    assert sim.call_log("sagemaker", "BatchRebootClusterNodes")[-1]["applied"] is False


@pytest.mark.parametrize(
    ("cidr", "reason"),
    [
        ("not-a-cidr", "is not a valid IPv4 CIDR block"),
        ("8.8.0.0/16", "must be within 10.0.0.0/8"),
        ("10.0.0.0/8", "prefix length between /12 and /24"),
        ("10.0.0.0/16", "overlaps the VPC CIDR block 10.0.0.0/16"),
    ],
)
def test_service_ipv4_cidr_must_be_a_valid_private_block(
    sim: SimulatedAws, network: Network, cidr: str, reason: str
) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    name = unique("cidr")
    code, status, message = refused(
        lambda: eks.create_cluster(
            name=name,
            roleArn=network.role_arn,
            resourcesVpcConfig={"subnetIds": list(network.subnets.values())[:2]},
            kubernetesNetworkConfig={"serviceIpv4Cidr": cidr},
        )
    )
    assert (code, status) == ("InvalidParameterException", 400)
    assert reason in message
    assert name not in eks.list_clusters()["clusters"]


def test_service_ipv4_cidr_that_fits_is_kept(sim: SimulatedAws, network: Network) -> None:
    cluster = create_eks(
        sim, network, unique("cidr"), kubernetesNetworkConfig={"serviceIpv4Cidr": "172.20.0.0/16"}
    )
    assert cluster["kubernetesNetworkConfig"]["serviceIpv4Cidr"] == "172.20.0.0/16"


def test_configuration_values_that_do_not_parse_are_refused(
    sim: SimulatedAws, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    code, status, message = refused(
        lambda: eks.create_addon(
            clusterName=eks_cluster["name"], addonName="coredns", configurationValues="{{{:::"
        )
    )
    assert (code, status) == ("InvalidParameterException", 400)
    assert "must be a JSON or YAML object" in message
    assert "coredns" not in eks.list_addons(clusterName=eks_cluster["name"])["addons"]


def test_configuration_values_outside_the_addon_schema_are_refused(
    sim: SimulatedAws, network: Network
) -> None:
    eks = aws_client(sim, "eks", config=RAW)
    name = create_eks(sim, network, unique("cfg"))["name"]
    code, status, message = refused(
        lambda: eks.create_addon(
            clusterName=name, addonName="coredns", configurationValues='{"noSuchKey": 1}'
        )
    )
    assert (code, status) == ("InvalidParameterException", 400)
    assert "Json schema validation failed" in message and "noSuchKey" in message
    schema = json.loads(
        eks.describe_addon_configuration(addonName="coredns", addonVersion="v1.12.2-eksbuild.4")[
            "configurationSchema"
        ]
    )
    assert schema["additionalProperties"] is False and "replicaCount" in schema["properties"]
    eks.create_addon(clusterName=name, addonName="coredns", configurationValues="replicaCount: 3")
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=name, addonName="coredns")["addon"]["status"] == "ACTIVE"
        ),
        timeout=10,
    )
    code, _, message = refused(
        lambda: eks.update_addon(
            clusterName=name, addonName="coredns", configurationValues='{"replicaCount": "x"}'
        )
    )
    assert code == "InvalidParameterException" and "replicaCount" in message


def test_second_hyperpod_cluster_on_the_same_eks_cluster_is_refused(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    first = create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)], wait=False)
    before = hyperpod_names(sim)
    with pytest.raises(ClientError) as err:
        create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)], wait=False)
    assert err.value.response["Error"]["Code"] == "ValidationException"
    assert "already associated with HyperPod cluster" in err.value.response["Error"]["Message"]
    assert hyperpod_names(sim) == before
    aws_client(sim, "sagemaker").delete_cluster(ClusterName=first)
    # Once the first is being deleted the EKS cluster can take another.
    create_hyperpod(sim, network, eks_cluster, [group_spec(network, count=1)], wait=False)


def test_training_operator_without_cert_manager_does_not_become_active(
    sim: SimulatedAws, network: Network
) -> None:
    eks = aws_client(sim, "eks")
    name = create_eks(sim, network, unique("op"))["name"]
    operator = "amazon-sagemaker-hyperpod-training-operator"

    def status(addon: str) -> str:
        return str(eks.describe_addon(clusterName=name, addonName=addon)["addon"]["status"])

    eks.create_addon(clusterName=name, addonName=operator)
    wait_for(lambda: status(operator) != "CREATING", timeout=10)
    addon = eks.describe_addon(clusterName=name, addonName=operator)["addon"]
    assert addon["status"] == "CREATE_FAILED"
    assert addon["health"]["issues"][0]["resourceIds"] == ["cert-manager"]
    eks.delete_addon(clusterName=name, addonName=operator)
    wait_for(lambda: operator not in eks.list_addons(clusterName=name)["addons"], timeout=10)
    eks.create_addon(clusterName=name, addonName="cert-manager")
    eks.create_addon(clusterName=name, addonName=operator)
    wait_for(lambda: status(operator) == "ACTIVE", timeout=10)


def test_query_protocols_answer_in_their_own_shape(sim: SimulatedAws) -> None:
    iam = aws_client(sim, "iam", config=RAW)
    code, status, message = refused(lambda: iam.create_role(RoleName=unique("r")))
    assert (code, status) == ("ValidationError", 400)
    assert "Value null at 'assumeRolePolicyDocument'" in message
    ec2 = aws_client(sim, "ec2", config=RAW)
    code, status, message = refused(lambda: ec2.describe_vpcs(MaxResults="abc"))
    assert (code, status) == ("InvalidParameterValue", 400)
    assert "MaxResults" in message


def _unsigned_sts(sim: SimulatedAws) -> Any:
    # botocore sends these operations without a signature, as STS's model says (noAuth)
    return aws_client(sim, "sts", config=RAW)


def test_unsigned_sts_operations_are_validated_like_signed_ones(sim: SimulatedAws) -> None:
    sts = _unsigned_sts(sim)
    role = "arn:aws:iam::111111111111:role/irsa"
    code, status, message = refused(
        lambda: sts.assume_role_with_web_identity(RoleArn=role, WebIdentityToken="token-1234")
    )
    assert (code, status) == ("ValidationError", 400)
    assert "Value null at 'roleSessionName' failed to satisfy constraint" in message
    code, status, message = refused(
        lambda: sts.assume_role_with_web_identity(
            RoleArn=role,
            RoleSessionName="pod-session",
            WebIdentityToken="token-1234",
            DurationSeconds=5,
        )
    )
    assert (code, status) == ("ValidationError", 400)
    assert "at 'durationSeconds'" in message
    code, status, _ = refused(
        lambda: sts.assume_role_with_web_identity(RoleSessionName="pod-session")
    )
    assert (code, status) == ("ValidationError", 400)
    # a well-formed one still gets credentials (what IRSA's pods call)
    answer = sts.assume_role_with_web_identity(
        RoleArn=role, RoleSessionName="pod-session", WebIdentityToken="token-1234"
    )
    assert answer["Credentials"]["AccessKeyId"]


def _saml(attributes: dict[str, str]) -> str:
    values = "".join(
        f'<saml:Attribute Name="{name}"><saml:AttributeValue>{value}</saml:AttributeValue>'
        "</saml:Attribute>"
        for name, value in attributes.items()
    )
    document = (
        '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
        'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"><saml:Assertion>'
        f"<saml:AttributeStatement>{values}</saml:AttributeStatement></saml:Assertion>"
        "</samlp:Response>"
    )
    return base64.b64encode(document.encode()).decode()


@pytest.mark.parametrize(
    ("assertion", "reason"),
    [
        ("not base64!", "not the base64 encoding"),
        (base64.b64encode(b"\xa6\xff\x00garbage").decode(), "not the base64 encoding"),
        (base64.b64encode(b"plain text").decode(), "is not XML"),
        (base64.b64encode(b"<other/>").decode(), "not a SAML 2.0 samlp:Response"),
        (
            _saml({"https://aws.amazon.com/SAML/Attributes/RoleSessionName": "u"}),
            "no https://aws.amazon.com/SAML/Attributes/Role attribute",
        ),
    ],
    ids=["not-base64", "not-utf8", "not-xml", "not-saml", "no-role"],
)
def test_saml_assertion_sts_cannot_read_is_invalid_identity_token(
    sim: SimulatedAws, assertion: str, reason: str
) -> None:
    sts = _unsigned_sts(sim)
    code, status, message = refused(
        lambda: sts.assume_role_with_saml(
            RoleArn="arn:aws:iam::111111111111:role/saml",
            PrincipalArn="arn:aws:iam::111111111111:saml-provider/idp",
            SAMLAssertion=assertion,
        )
    )
    assert (code, status) == ("InvalidIdentityToken", 400)
    assert reason in message


def test_saml_assertion_with_role_and_session_name_gets_credentials(sim: SimulatedAws) -> None:
    role = "arn:aws:iam::111111111111:role/saml"
    idp = "arn:aws:iam::111111111111:saml-provider/idp"
    assertion = _saml(
        {
            "https://aws.amazon.com/SAML/Attributes/Role": f"{role},{idp}",
            "https://aws.amazon.com/SAML/Attributes/RoleSessionName": "someone",
        }
    )
    answer = _unsigned_sts(sim).assume_role_with_saml(
        RoleArn=role, PrincipalArn=idp, SAMLAssertion=assertion
    )
    assert answer["Credentials"]["AccessKeyId"]


def test_post_to_an_object_without_a_subresource_is_method_not_allowed(sim: SimulatedAws) -> None:
    s3 = aws_client(sim, "s3", config=RAW)
    bucket = unique("post")
    s3.create_bucket(Bucket=bucket)
    # CompleteMultipartUpload without its uploadId is POST /bucket/key on the wire
    code, status, message = refused(
        lambda: s3.complete_multipart_upload(Bucket=bucket, Key="k", MultipartUpload={"Parts": []})
    )
    assert (code, status) == ("MethodNotAllowed", 405)
    assert message == "The specified method is not allowed against this resource."
    status, body = signed(sim, "s3", "POST", f"/{bucket}/k", b"", {})
    assert status == 405
    assert b"<Method>POST</Method><ResourceType>OBJECT</ResourceType>" in body
    upload = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    part = s3.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=1, Body=b"x")
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="k",
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x"


def test_an_operation_moto_does_not_implement_is_501_in_the_service_shape(
    sim: SimulatedAws,
) -> None:
    ec2 = aws_client(sim, "ec2", config=RAW)
    # moto has no CreateIpam: it was moto's HTML 500 page, which no SDK can parse
    code, status, message = refused(lambda: ec2.create_ipam(Description="x"))
    assert (code, status) == ("NotImplemented", 501)
    assert "does not implement ec2 CreateIpam" in message
    assert sim.call_log("ec2", "CreateIpam")[-1]["applied"] is False


def test_every_operation_the_product_calls_is_served(sim: SimulatedAws) -> None:
    from sim.aws.errors import service_model
    from sim.aws.unserved import unserved
    from tests.sim_aws.model_corpus import product_operations

    simulated = {tuple(name.split(":", 1)) for name in sim.simulated_operations}
    missing = [
        f"{service} {operation}"
        for service, operations in product_operations().items()
        for operation in operations
        if (service, operation) not in simulated
        and unserved(service, operation, service_model(service).protocol) is not None
    ]
    assert not missing


def test_oidc_provider_client_ids_are_added_and_removed_idempotently(sim: SimulatedAws) -> None:
    iam = aws_client(sim, "iam", config=RAW)
    arn = iam.create_open_id_connect_provider(
        Url=f"https://oidc.eks.us-east-1.amazonaws.com/id/{unique('c').upper()}",
        ClientIDList=["sts.amazonaws.com"],
        ThumbprintList=["9" * 40],
    )["OpenIDConnectProviderArn"]
    for _ in range(2):
        iam.add_client_id_to_open_id_connect_provider(OpenIDConnectProviderArn=arn, ClientID="a")
    assert iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)["ClientIDList"] == [
        "sts.amazonaws.com",
        "a",
    ]
    for _ in range(2):
        iam.remove_client_id_from_open_id_connect_provider(
            OpenIDConnectProviderArn=arn, ClientID="sts.amazonaws.com"
        )
    assert iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)["ClientIDList"] == ["a"]
    missing = arn.rsplit("/", 1)[0] + "/nowhere"
    code, status, _ = refused(
        lambda: iam.add_client_id_to_open_id_connect_provider(
            OpenIDConnectProviderArn=missing, ClientID="a"
        )
    )
    assert (code, status) == ("NoSuchEntity", 404)
    code, status, message = refused(
        lambda: iam.add_client_id_to_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    )
    assert (code, status) == ("ValidationError", 400)
    assert "at 'clientID'" in message
    iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn)
