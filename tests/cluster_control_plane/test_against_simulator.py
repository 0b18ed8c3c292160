"""The stages and their adapters against the simulated AWS, through unmodified boto3 over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.eks import EksClusters
from cluster_svc.adapters.fsx import FsxFileSystems
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.domain import control_plane, fsx, hyperpod, lifecycle
from shared.contracts.cluster import InstanceGroupSpec
from shared.errors import PermanentError
from shared.stages import Done, Stage, Submitted
from sim.aws import SimulatedAws
from sim.testing import aws_client, inject_fault
from tests.cluster_control_plane.conftest import (
    OTHER_ZONE,
    Prereqs,
    by_name,
    cluster_command,
    context,
    drive,
    unique,
)


def _creates(aws: AwsClients) -> dict[str, Stage]:
    return {
        **by_name(control_plane.create_stages(EksClusters(aws), S3Buckets(aws))),
        **by_name(hyperpod.create_stages(SageMakerClusters(aws))),
        **by_name(fsx.create_stages(FsxFileSystems(aws))),
    }


def _deletes(aws: AwsClients) -> dict[str, Stage]:
    return {
        **by_name(control_plane.delete_stages(EksClusters(aws), S3Buckets(aws))),
        **by_name(hyperpod.delete_stages(SageMakerClusters(aws))),
        **by_name(fsx.delete_stages(FsxFileSystems(aws))),
    }


def _calls(sim: SimulatedAws, service: str, operation: str, key: str, value: str) -> int:
    return sum(1 for c in sim.call_log(service, operation) if c["params"].get(key) == value)


async def test_bucket_is_encrypted_private_tagged_and_holds_the_lifecycle_script(
    sim: SimulatedAws, aws: AwsClients
) -> None:
    name = unique("cp-bucket")
    stage = _creates(aws)["bucket"]
    done = await stage.run(context(cluster_command(name)))
    assert isinstance(done, Done) and not done.noop
    bucket = f"{name}-data"
    assert done.outputs == {
        "bucket": bucket,
        "lifecycle_script_uri": f"s3://{bucket}/hyperpod/lifecycle/",
        "created": True,
    }
    s3 = aws_client(sim, "s3")
    script = s3.get_object(Bucket=bucket, Key="hyperpod/lifecycle/on_create.sh")["Body"].read()
    assert script == lifecycle.script_body()
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values())
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags["hyperpilot-cluster"] == name and tags["team"] == "research"

    again = await stage.run(context(cluster_command(name)))
    assert isinstance(again, Done) and again.noop and again.outputs["created"] is True
    assert _calls(sim, "s3", "PutObject", "Bucket", bucket) == 1


async def test_eks_cluster_polls_to_active_and_a_rerun_makes_no_second_cluster(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs
) -> None:
    name = unique("cp-eks")
    stage = _creates(aws)["eks_cluster"]
    ctx = context(cluster_command(name), prereqs.outputs)
    # A crash after CreateCluster and before the engine persisted the submission: run again.
    first = await stage.run(ctx)
    second = await stage.run(ctx)
    assert isinstance(first, Submitted) and isinstance(second, Submitted)
    assert first.external_id == second.external_id
    driven = await drive(stage, ctx)
    assert _calls(sim, "eks", "CreateCluster", "name", name) == 1
    out = driven.done.outputs
    assert out["cluster_name"] == name and out["created"] is True
    assert out["cluster_arn"] == first.external_id
    assert out["endpoint"].startswith("https://") and out["ca_data"] and out["oidc_issuer"]
    assert driven.progress and driven.progress[0].startswith("EKS control plane CREATING (")
    described = aws_client(sim, "eks").describe_cluster(name=name)["cluster"]
    assert described["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert described["clientRequestToken"] == str(ctx.operation_id)
    subnets = prereqs.outputs["network"]
    assert described["resourcesVpcConfig"]["subnetIds"] == [
        *subnets["public_subnet_ids"],
        *subnets["private_subnet_ids"],
    ]


async def test_eks_cluster_of_the_same_name_without_our_tags_is_refused(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs
) -> None:
    name = unique("cp-foreign")
    network = prereqs.outputs["network"]
    aws_client(sim, "eks").create_cluster(
        name=name,
        roleArn=prereqs.outputs["eks_role"]["role_arn"],
        resourcesVpcConfig={"subnetIds": network["private_subnet_ids"]},
    )
    with pytest.raises(PermanentError) as caught:
        await _creates(aws)["eks_cluster"].run(context(cluster_command(name), prereqs.outputs))
    assert caught.value.code == "EksClusterNameTaken"
    assert name in caught.value.message and "not created by Hyperpilot" in caught.value.message
    assert caught.value.hint and "another cluster name" in caught.value.hint
    assert _calls(sim, "eks", "CreateCluster", "name", name) == 1  # only the foreign one


@pytest.fixture  # per test: an EKS cluster orchestrates one HyperPod cluster
async def active_eks(aws: AwsClients, prereqs: Prereqs) -> dict[str, Any]:
    name = unique("cp-shared")
    ctx = context(cluster_command(name), prereqs.outputs)
    return (await drive(_creates(aws)["eks_cluster"], ctx)).done.outputs


async def test_access_entries_for_the_caller_and_the_execution_role(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs, active_eks: dict[str, Any]
) -> None:
    outputs = {**prereqs.outputs, "eks_cluster": active_eks}
    stage = _creates(aws)["access_entries"]
    done = await stage.run(context(cluster_command(active_eks["cluster_name"]), outputs))
    assert isinstance(done, Done)
    caller = aws_client(sim, "sts").get_caller_identity()["Arn"]
    execution = prereqs.outputs["execution_role"]["role_arn"]
    assert done.outputs["principal_arns"] == [caller, execution]
    eks = aws_client(sim, "eks")
    cluster = active_eks["cluster_name"]
    entry = eks.describe_access_entry(clusterName=cluster, principalArn=execution)["accessEntry"]
    assert entry["type"] == "HYPERPOD_LINUX"
    policies = eks.list_associated_access_policies(clusterName=cluster, principalArn=caller)
    assert [p["policyArn"] for p in policies["associatedAccessPolicies"]] == [
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    ]
    made = _calls(sim, "eks", "CreateAccessEntry", "clusterName", cluster)
    again = await stage.run(context(cluster_command(cluster), outputs))
    assert isinstance(again, Done) and again.noop
    assert _calls(sim, "eks", "CreateAccessEntry", "clusterName", cluster) == made
    assert _calls(sim, "eks", "AssociateAccessPolicy", "clusterName", cluster) <= 1


async def test_hyperpod_cluster_creating_to_inservice_once_with_groups_in_two_zones(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs, active_eks: dict[str, Any]
) -> None:
    name = unique("cp-hp")
    groups = [
        InstanceGroupSpec(name="workers", instance_type="ml.g5.8xlarge", count=2),
        InstanceGroupSpec(
            name="spot",
            instance_type="ml.g5.2xlarge",
            count=1,
            availability_zone_id=OTHER_ZONE,
            capacity_type="spot",
            labels={"pool": "spot"},
        ),
    ]
    outputs = {
        **prereqs.outputs,
        "eks_cluster": active_eks,
        "bucket": {"lifecycle_script_uri": f"s3://{name}-data/hyperpod/lifecycle/"},
    }
    stage = _creates(aws)["hyperpod_cluster"]
    ctx = context(cluster_command(name, groups=groups), outputs)
    first = await stage.run(ctx)
    second = await stage.run(ctx)  # as after a crash before the submission was persisted
    assert isinstance(first, Submitted) and isinstance(second, Submitted)
    driven = await drive(stage, ctx)
    assert _calls(sim, "sagemaker", "CreateCluster", "ClusterName", name) == 1
    assert driven.done.outputs == {
        "cluster_arn": first.external_id,
        "cluster_name": name,
        "created": True,
    }
    assert driven.progress and driven.progress[0].startswith("HyperPod cluster Creating (")
    described = aws_client(sim, "sagemaker").describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "InService"
    assert described["Orchestrator"]["Eks"]["ClusterArn"] == active_eks["cluster_arn"]
    spot = next(g for g in described["InstanceGroups"] if g["InstanceGroupName"] == "spot")
    assert spot["OverrideVpcConfig"]["Subnets"] == [
        prereqs.outputs["compute_subnet"]["subnets"][OTHER_ZONE]
    ]
    nodes = aws_client(sim, "sagemaker").list_cluster_nodes(ClusterName=name)[
        "ClusterNodeSummaries"
    ]
    assert len(nodes) == 3


async def test_insufficient_capacity_fails_the_stage_with_aws_message_and_other_zones(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs, active_eks: dict[str, Any]
) -> None:
    name = unique("cp-short")
    groups = [InstanceGroupSpec(name="gpus", instance_type="ml.g5.2xlarge", count=1)]
    outputs = {
        **prereqs.outputs,
        "eks_cluster": active_eks,
        "bucket": {"lifecycle_script_uri": f"s3://{name}-data/hyperpod/lifecycle/"},
    }
    stage = _creates(aws)["hyperpod_cluster"]
    ctx = context(cluster_command(name, groups=groups), outputs)
    zone = prereqs.outputs["compute_subnet"]["availability_zone_id"]
    with (
        inject_fault(
            sim, "insufficient_capacity", instance_type="ml.g5.2xlarge", availability_zone_id=zone
        ),
        pytest.raises(PermanentError) as caught,
    ):
        await drive(stage, ctx)
    error = caught.value
    assert error.code == "InsufficientInstanceCapacity"
    assert "InsufficientInstanceCapacity" in error.message and zone in error.message
    assert error.hint is not None
    assert "try another Availability Zone (ml.g5.2xlarge is offered in use1-az1" in error.hint
    offered = error.hint.split("offered in ", 1)[1].split(")", 1)[0]
    assert zone not in offered
    assert "training plan" in error.hint

    # Retrying the operation removes the failed cluster, waits for it to go, creates it again.
    retried = await stage.run(ctx)
    assert isinstance(retried, Submitted) and retried.outputs["replacing_failed_cluster"] is True
    assert _calls(sim, "sagemaker", "DeleteCluster", "ClusterName", name) == 1


async def test_fsx_is_created_in_the_compute_subnet_and_polled_to_available(
    sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs
) -> None:
    name = unique("cp-fsx")
    stage = _creates(aws)["fsx"]
    ctx = context(cluster_command(name, fsx_capacity_gib=1200), prereqs.outputs)
    first = await stage.run(ctx)
    assert isinstance(first, Submitted)
    driven = await drive(stage, ctx)
    out = driven.done.outputs
    assert out["file_system_id"] == first.external_id and out["created"] is True
    assert out["dns_name"] and out["mount_name"] and out["capacity_gib"] == 1200
    # moto ignores FSx's ClientRequestToken: the tag lookup is what keeps a re-run from creating.
    again = await stage.run(context(cluster_command(name, fsx_capacity_gib=1200), prereqs.outputs))
    assert isinstance(again, Done) and again.noop
    assert again.outputs["file_system_id"] == out["file_system_id"]
    described = aws_client(sim, "fsx").describe_file_systems(FileSystemIds=[out["file_system_id"]])
    system = described["FileSystems"][0]
    assert system["SubnetIds"] == [prereqs.outputs["compute_subnet"]["subnet_id"]]
    assert system["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    assert (
        sum(
            1
            for c in sim.call_log("fsx", "CreateFileSystem")
            if c["params"]["ClientRequestToken"] == str(ctx.operation_id)
        )
        == 1
    )
