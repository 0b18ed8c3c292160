"""The pure request builders and rules, checked against botocore's own service models."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from cluster_svc.domain import lifecycle
from cluster_svc.domain.control_plane import (
    admin_policy_arn,
    client_request_token,
    eks_create_request,
    is_ours,
    principal_arn,
    resource_tags,
)
from cluster_svc.domain.fsx import file_system_request
from cluster_svc.domain.hyperpod import (
    ClusterRefs,
    capacity_hint,
    cluster_request,
    failed_instance_types,
)
from shared.contracts.cluster import ClusterSpec, InstanceGroupSpec, StorageSpec, Taint
from shared.contracts.commands import CreateCluster
from shared.errors import PermanentError

PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/plan-1"
REFS = ClusterRefs(
    eks_cluster_arn="arn:aws:eks:us-east-1:123456789012:cluster/llm",
    security_group_id="sg-0123456789abcdef0",
    subnet_id="subnet-0aaaaaaaaaaaaaaaa",
    subnets_by_zone={
        "use1-az2": "subnet-0aaaaaaaaaaaaaaaa",
        "use1-az4": "subnet-0bbbbbbbbbbbbbbbb",
    },
    execution_role_arn="arn:aws:iam::123456789012:role/exec",
    lifecycle_script_uri="s3://llm-data/hyperpod/lifecycle/",
)


def _validate(service: str, operation: str, params: dict[str, Any]) -> None:
    model = botocore.session.get_session().get_service_model(service)
    shape = model.operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()


def _spec(**extra: Any) -> ClusterSpec:
    groups = [
        InstanceGroupSpec(name="workers", instance_type="ml.g5.8xlarge", count=2),
        InstanceGroupSpec(
            name="spot",
            instance_type="ml.g5.2xlarge",
            count=4,
            min_count=1,
            availability_zone_id="use1-az4",
            capacity_type="spot",
            interface_type="efa-only",
            ebs_volume_gb=1000,
            threads_per_core=2,
            deep_health_checks=["InstanceStress", "InstanceConnectivity"],
            labels={"team": "research"},
            taints=[
                Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule"),
                Taint(key="dedicated", effect="NoExecute"),
            ],
        ),
        InstanceGroupSpec(
            name="reserved",
            instance_type="ml.p5.48xlarge",
            count=2,
            availability_zone_id="use1-az2",
            capacity_type="training-plan",
            training_plan_arn=PLAN,
        ),
    ]
    return ClusterSpec(name="llm", availability_zone_id="use1-az2", instance_groups=groups, **extra)


def test_hyperpod_request_has_every_member_the_spec_asks_for_and_is_valid() -> None:
    request = cluster_request(_spec(node_recovery="None", tags={"cost": "ml"}), REFS)
    _validate("sagemaker", "CreateCluster", request)
    assert request["Orchestrator"] == {"Eks": {"ClusterArn": REFS.eks_cluster_arn}}
    assert request["NodeRecovery"] == "None"
    assert request["VpcConfig"] == {
        "SecurityGroupIds": [REFS.security_group_id],
        "Subnets": ["subnet-0aaaaaaaaaaaaaaaa"],
    }
    assert {"Key": "cost", "Value": "ml"} in request["Tags"]
    assert {"Key": "managed-by", "Value": "hyperpilot"} in request["Tags"]
    workers, spot, reserved = request["InstanceGroups"]
    assert workers == {
        "InstanceGroupName": "workers",
        "InstanceType": "ml.g5.8xlarge",
        "InstanceCount": 2,
        "ExecutionRole": REFS.execution_role_arn,
        "LifeCycleConfig": {"SourceS3Uri": REFS.lifecycle_script_uri, "OnCreate": "on_create.sh"},
        "ThreadsPerCore": 1,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "NetworkInterface": {"InterfaceType": "efa"},
        "CapacityRequirements": {"OnDemand": {}},
    }
    assert spot["MinInstanceCount"] == 1
    assert spot["ThreadsPerCore"] == 2
    assert spot["CapacityRequirements"] == {"Spot": {}}
    assert spot["NetworkInterface"] == {"InterfaceType": "efa-only"}
    assert spot["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert spot["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 1000}}]
    assert spot["OverrideVpcConfig"] == {
        "SecurityGroupIds": [REFS.security_group_id],
        "Subnets": ["subnet-0bbbbbbbbbbbbbbbb"],
    }
    assert spot["KubernetesConfig"] == {
        "Labels": {"team": "research"},
        "Taints": [
            {"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NoSchedule"},
            {"Key": "dedicated", "Effect": "NoExecute"},
        ],
    }
    # A group in the cluster's own zone needs no override; a training plan replaces capacity type.
    assert "OverrideVpcConfig" not in reserved
    assert reserved["TrainingPlanArn"] == PLAN
    assert "CapacityRequirements" not in reserved
    assert "MinInstanceCount" not in workers and "KubernetesConfig" not in workers


def test_group_in_a_zone_without_compute_subnet_is_a_permanent_error_with_next_step() -> None:
    refs = ClusterRefs(
        **{**REFS.__dict__, "subnets_by_zone": {"use1-az2": "subnet-0aaaaaaaaaaaaaaaa"}}
    )
    with pytest.raises(PermanentError) as caught:
        cluster_request(_spec(), refs)
    assert caught.value.code == "ComputeSubnetMissing"
    assert "use1-az4" in caught.value.message
    assert caught.value.hint and "availability_zone_id" in caught.value.hint


def test_eks_request_is_valid_uses_api_auth_and_the_operation_token() -> None:
    op = uuid.uuid4()
    spec = _spec(kubernetes_version="1.31")
    request = eks_create_request(
        spec,
        subnet_ids=["subnet-01", "subnet-02", "subnet-03", "subnet-04"],
        security_group_id="sg-01111111111111111",
        role_arn="arn:aws:iam::123456789012:role/eks",
        token=client_request_token(op),
    )
    _validate("eks", "CreateCluster", request)
    assert request["clientRequestToken"] == client_request_token(op) == str(op)
    assert request["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert request["version"] == "1.31"
    assert request["resourcesVpcConfig"]["subnetIds"] == [
        "subnet-01",
        "subnet-02",
        "subnet-03",
        "subnet-04",
    ]
    assert is_ours(request["tags"], "llm") and not is_ours(request["tags"], "other")


def test_our_tags_win_over_the_users() -> None:
    spec = ClusterSpec(
        name="llm",
        availability_zone_id="use1-az2",
        instance_groups=[InstanceGroupSpec(name="w", instance_type="ml.g5.8xlarge", count=1)],
        tags={"managed-by": "someone", "team": "a"},
    )
    assert resource_tags(spec) == {
        "managed-by": "hyperpilot",
        "hyperpilot-cluster": "llm",
        "team": "a",
    }


@pytest.mark.parametrize(
    ("caller", "principal"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/Admin/alice@example.com",
            "arn:aws:iam::123456789012:role/Admin",
        ),
        (
            "arn:aws-cn:sts::123456789012:assumed-role/Ops/s1",
            "arn:aws-cn:iam::123456789012:role/Ops",
        ),
        ("arn:aws:iam::123456789012:user/bob", "arn:aws:iam::123456789012:user/bob"),
        ("arn:aws:iam::123456789012:role/ci", "arn:aws:iam::123456789012:role/ci"),
    ],
)
def test_access_entry_principal_of_the_caller(caller: str, principal: str) -> None:
    assert principal_arn(caller) == principal


def test_admin_policy_follows_the_partition() -> None:
    assert admin_policy_arn("arn:aws:eks:us-east-1:1:cluster/x") == (
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )
    assert admin_policy_arn("arn:aws-us-gov:eks:us-gov-west-1:1:cluster/x").startswith(
        "arn:aws-us-gov:eks::aws:"
    )


@pytest.mark.parametrize("deployment", ["SCRATCH_2", "PERSISTENT_2"])
def test_fsx_request_is_valid_for_both_deployment_types(deployment: Any) -> None:
    cmd = CreateCluster(
        spec=_spec(storage=StorageSpec(fsx_capacity_gib=2400)),
        region="us-east-1",
        bucket="llm-data",
    )
    request = file_system_request(
        cmd,
        subnet_id="subnet-0aaaaaaaaaaaaaaaa",
        security_group_id="sg-01111111111111111",
        token=str(uuid.uuid4()),
        deployment_type=deployment,
        throughput_per_tib=250,
    )
    _validate("fsx", "CreateFileSystem", request)
    assert request["StorageCapacity"] == 2400
    assert request["SubnetIds"] == ["subnet-0aaaaaaaaaaaaaaaa"]
    lustre = request["LustreConfiguration"]
    assert lustre["DeploymentType"] == deployment
    assert ("PerUnitStorageThroughput" in lustre) == (deployment == "PERSISTENT_2")


def test_capacity_hint_names_the_other_offered_zones_and_training_plans() -> None:
    message = (
        "InsufficientInstanceCapacity: We currently do not have sufficient ml.p5.48xlarge capacity "
        "in the Availability Zone use1-az2 for instance group reserved."
    )
    assert failed_instance_types(message, _spec()) == ["ml.p5.48xlarge"]
    hint = capacity_hint(message, {"ml.p5.48xlarge": ["use1-az1", "use1-az2", "use1-az6"]})
    assert "ml.p5.48xlarge is offered in use1-az1, use1-az6" in hint
    assert "use1-az2" not in hint
    assert "training plan" in hint
    # Without a named type, every group's type is a candidate.
    assert failed_instance_types("InsufficientInstanceCapacity", _spec()) == [
        "ml.g5.8xlarge",
        "ml.g5.2xlarge",
        "ml.p5.48xlarge",
    ]


def test_lifecycle_script_location_and_shell_syntax(tmp_path: Any) -> None:
    assert lifecycle.source_uri("llm-data") == "s3://llm-data/hyperpod/lifecycle/"
    assert lifecycle.SCRIPT_KEY == "hyperpod/lifecycle/on_create.sh"
    body = lifecycle.script_body()
    assert body.startswith(b"#!/bin/bash\n")
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "on_create.sh"
    script.write_bytes(body)
    checked = subprocess.run([bash, "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
