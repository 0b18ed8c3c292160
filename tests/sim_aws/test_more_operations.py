"""The remaining simulated operations, and a guard that every one of them is exercised here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore import xform_name
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network, create_eks, create_hyperpod, group_spec, unique


def test_every_simulated_operation_is_called_by_this_suite(sim: SimulatedAws) -> None:
    source = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    missing = [
        op
        for op in sim.simulated_operations
        if f".{xform_name(op.split(':', 1)[1])}(" not in source
    ]
    assert missing == []
    assert len(sim.simulated_operations) > 60


def test_eks_versions_configuration_and_version_updates(
    sim: SimulatedAws, network: Network
) -> None:
    eks = aws_client(sim, "eks")
    versions = eks.describe_cluster_versions()["clusterVersions"]
    default = [v["clusterVersion"] for v in versions if v["defaultVersion"]]
    assert default == ["1.33"]
    config = eks.describe_addon_configuration(
        addonName="coredns", addonVersion="v1.12.2-eksbuild.4"
    )
    assert config["configurationSchema"].startswith("{")
    with pytest.raises(ClientError) as err:
        eks.describe_addon_configuration(addonName="coredns", addonVersion="v0")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    cluster = create_eks(sim, network, unique("ver"), version="1.31")
    with pytest.raises(ClientError) as err:
        eks.update_cluster_version(name=cluster["name"], version="1.33")
    assert err.value.response["Error"]["Code"] == "InvalidParameterException"
    update = eks.update_cluster_version(name=cluster["name"], version="1.32")["update"]
    assert eks.describe_cluster(name=cluster["name"])["cluster"]["status"] == "UPDATING"
    assert eks.list_updates(name=cluster["name"])["updateIds"] == [update["id"]]
    wait_for(
        lambda: eks.describe_cluster(name=cluster["name"])["cluster"]["status"] == "ACTIVE",
        timeout=15,
    )
    assert eks.describe_cluster(name=cluster["name"])["cluster"]["version"] == "1.32"
    assert (
        eks.describe_update(name=cluster["name"], updateId=update["id"])["update"]["status"]
        == "Successful"
    )
    eks.delete_cluster(name=cluster["name"])


def test_eks_pagination(sim: SimulatedAws, eks_cluster: dict[str, Any]) -> None:
    eks = aws_client(sim, "eks")
    page = eks.describe_addon_versions(maxResults=3)
    assert len(page["addons"]) == 3 and page["nextToken"]
    names = [
        a["addonName"]
        for a in eks.get_paginator("describe_addon_versions")
        .paginate()
        .build_full_result()["addons"]
    ]
    assert len(names) == len(set(names)) > 10
    with pytest.raises(ClientError) as err:
        eks.list_clusters(nextToken="garbage")
    assert err.value.response["Error"]["Code"] == "InvalidParameterException"


def test_service_quotas_defaults_services_and_increase_requests(sim: SimulatedAws) -> None:
    quotas = aws_client(sim, "service-quotas")
    services = {s["ServiceCode"] for s in quotas.list_services()["Services"]}
    assert {"sagemaker", "ec2"} <= services
    p_instances = quotas.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode="L-417A185B")[
        "Quota"
    ]
    assert p_instances["QuotaName"] == "Running On-Demand P instances"
    defaults = quotas.list_aws_default_service_quotas(ServiceCode="ec2")["Quotas"]
    assert {q["QuotaCode"] for q in defaults} >= {"L-1216C47A", "L-417A185B", "L-DB2E81BA"}
    code = next(
        q["QuotaCode"]
        for q in quotas.get_paginator("list_service_quotas")
        .paginate(ServiceCode="sagemaker")
        .build_full_result()["Quotas"]
        if q["QuotaName"] == "ml.p5e.48xlarge for cluster usage"
    )
    requested = quotas.request_service_quota_increase(
        ServiceCode="sagemaker", QuotaCode=code, DesiredValue=64
    )["RequestedQuota"]
    assert requested["Status"] == "CASE_OPENED"
    history = quotas.list_requested_service_quota_change_history(ServiceCode="sagemaker")[
        "RequestedQuotas"
    ]
    assert requested["Id"] in {h["Id"] for h in history}
    with pytest.raises(ClientError) as err:
        quotas.request_service_quota_increase(
            ServiceCode="sagemaker", QuotaCode=code, DesiredValue=1
        )
    assert err.value.response["Error"]["Code"] == "IllegalArgumentException"


def test_mlflow_update_and_presigned_url(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker")
    name = unique("mlf")
    sm.create_mlflow_tracking_server(
        TrackingServerName=name,
        ArtifactStoreUri="s3://b/one",
        RoleArn=network.role_arn,
        TrackingServerSize="Small",
    )
    with pytest.raises(ClientError) as err:
        sm.update_mlflow_tracking_server(TrackingServerName=name, TrackingServerSize="Medium")
    assert err.value.response["Error"]["Code"] == "ConflictException"
    wait_for(
        lambda: (
            sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"]
            == "Created"
        )
    )
    sm.update_mlflow_tracking_server(TrackingServerName=name, TrackingServerSize="Medium")
    wait_for(
        lambda: (
            sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"]
            == "Updated"
        )
    )
    assert (
        sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerSize"]
        == "Medium"
    )
    url = sm.create_presigned_mlflow_tracking_server_url(TrackingServerName=name)["AuthorizedUrl"]
    assert url.startswith("https://")
    sm.delete_mlflow_tracking_server(TrackingServerName=name)


def test_sagemaker_tags_and_cluster_listing(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    sm = aws_client(sim, "sagemaker")
    # An EKS cluster orchestrates one HyperPod cluster: the shared one and two of their own.
    orchestrators = [eks_cluster] + [
        create_eks(sim, network, unique("eks"), accessConfig={"authenticationMode": "API"})
        for _ in range(2)
    ]
    names = sorted(
        create_hyperpod(sim, network, eks, [group_spec(network, count=1)], wait=False)
        for eks in orchestrators
    )
    arn = sm.describe_cluster(ClusterName=names[0])["ClusterArn"]
    sm.add_tags(ResourceArn=arn, Tags=[{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}])
    sm.delete_tags(ResourceArn=arn, TagKeys=["a"])
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "b", "Value": "2"}]
    listed = [
        c["ClusterName"]
        for c in sm.list_clusters(NameContains="hp-", SortBy="NAME", SortOrder="Ascending")[
            "ClusterSummaries"
        ]
    ]
    assert [n for n in listed if n in names] == names
    first = sm.list_clusters(MaxResults=2, SortBy="NAME", SortOrder="Ascending")
    assert len(first["ClusterSummaries"]) == 2 and first["NextToken"]
    with pytest.raises(ClientError) as err:
        sm.list_clusters(NextToken="not-a-token")
    assert err.value.response["Error"]["Code"] == "ValidationException"
    for name in names:
        sm.delete_cluster(ClusterName=name)


def test_tags_of_resources_moto_owns_are_left_to_moto(sim: SimulatedAws, network: Network) -> None:
    sm = aws_client(sim, "sagemaker")
    model = sm.create_model(
        ModelName=unique("model"),
        ExecutionRoleArn=network.role_arn,
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )["ModelArn"]
    sm.add_tags(ResourceArn=model, Tags=[{"Key": "owner", "Value": "moto"}])
    assert sm.list_tags(ResourceArn=model)["Tags"] == [{"Key": "owner", "Value": "moto"}]
    tagged = [
        c for c in sim.call_log("sagemaker", "AddTags") if c["params"]["ResourceArn"] == model
    ]
    assert [(c["simulated"], c["status"]) for c in tagged] == [(False, 200)]
