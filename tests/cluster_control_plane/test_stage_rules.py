"""The stages' decisions, with fakes of the ports: adopt what is ours, refuse what is not,
record what was made, and fail with AWS's words and a next step."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest

from cluster_svc.domain import control_plane, fsx, hyperpod
from cluster_svc.domain.control_plane import EksCluster
from cluster_svc.domain.hyperpod import HyperPodCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, PollFn, Stage, Submitted
from tests.cluster_control_plane.conftest import by_name, cluster_command, context

OURS = {"managed-by": "hyperpilot", "hyperpilot-cluster": "llm"}
PREREQS: dict[str, dict[str, Any]] = {
    "network": {
        "public_subnet_ids": ["subnet-p1", "subnet-p2"],
        "private_subnet_ids": ["subnet-q1"],
    },
    "security_group": {"security_group_id": "sg-1"},
    "eks_role": {"role_arn": "arn:aws:iam::1:role/eks"},
    "execution_role": {"role_arn": "arn:aws:iam::1:role/exec"},
    "eks_cluster": {"cluster_name": "llm", "cluster_arn": "arn:aws:eks:us-east-1:1:cluster/llm"},
    "compute_subnet": {"subnet_id": "subnet-c", "availability_zone_id": "use1-az2"},
    "bucket": {"lifecycle_script_uri": "s3://llm-data/hyperpod/lifecycle/"},
}


class FakeEks:
    def __init__(self, cluster: EksCluster | None = None, caller: str = "arn:aws:iam::1:user/me"):
        self.cluster = cluster
        self.caller = caller
        self.calls: list[str] = []
        self.entries: dict[str, str] = {}
        self.policies: dict[str, list[str]] = {}

    async def describe_cluster(self, name: str) -> EksCluster | None:
        return self.cluster

    async def create_cluster(self, request: dict[str, Any]) -> EksCluster:
        self.calls.append("create")
        self.cluster = EksCluster(
            request["name"],
            f"arn:aws:eks:us-east-1:1:cluster/{request['name']}",
            "CREATING",
            request["tags"],
        )
        return self.cluster

    async def delete_cluster(self, name: str) -> None:
        self.calls.append("delete")

    async def caller_arn(self) -> str:
        return self.caller

    async def access_entry_exists(self, cluster: str, principal_arn: str) -> bool:
        return principal_arn in self.entries

    async def create_access_entry(
        self, cluster: str, principal_arn: str, entry_type: str, tags: dict[str, str]
    ) -> None:
        self.calls.append(f"entry {principal_arn}")
        self.entries[principal_arn] = entry_type

    async def associated_policies(self, cluster: str, principal_arn: str) -> list[str]:
        return self.policies.get(principal_arn, [])

    async def associate_cluster_policy(
        self, cluster: str, principal_arn: str, policy_arn: str
    ) -> None:
        self.calls.append(f"policy {principal_arn}")
        self.policies.setdefault(principal_arn, []).append(policy_arn)


class FakeBuckets:
    def __init__(self, existing: dict[str, dict[str, str]] | None = None) -> None:
        self.buckets = dict(existing or {})
        self.objects: dict[str, bytes] = {}
        self.calls: list[str] = []

    async def exists(self, name: str) -> bool:
        return name in self.buckets

    async def create(self, name: str, region: str) -> None:
        self.calls.append("create")
        self.buckets[name] = {}

    async def block_public_access(self, name: str) -> bool:
        return False

    async def encrypt(self, name: str) -> bool:
        return False

    async def tag(self, name: str) -> None:
        self.calls.append("tag")

    async def tags(self, name: str) -> dict[str, str]:
        return dict(self.buckets[name])

    async def add_tags(self, name: str, tags: dict[str, str]) -> None:
        self.calls.append("add_tags")
        self.buckets[name].update(tags)

    async def object_etag(self, name: str, key: str) -> str | None:
        body = self.objects.get(key)
        return hashlib.md5(body, usedforsecurity=False).hexdigest() if body is not None else None

    async def put_object(self, name: str, key: str, body: bytes, content_type: str = "") -> None:
        self.calls.append(f"put {key}")
        self.objects[key] = body

    async def empty(self, name: str) -> int:
        self.calls.append("empty")
        return len(self.objects)

    async def delete(self, name: str) -> None:
        self.calls.append("delete")
        self.buckets.pop(name, None)


class FakeSageMaker:
    def __init__(self, cluster: HyperPodCluster | None = None, tags: dict[str, str] | None = None):
        self.cluster = cluster
        self.tags = tags or {}
        self.calls: list[str] = []
        self.requests: list[dict[str, Any]] = []

    async def describe_cluster(self, name: str) -> HyperPodCluster | None:
        return self.cluster

    async def cluster_tags(self, arn: str) -> dict[str, str]:
        return self.tags

    async def create_cluster(self, request: dict[str, Any]) -> str:
        self.calls.append("create")
        self.requests.append(request)
        return "arn:aws:sagemaker:us-east-1:1:cluster/abc"

    async def delete_cluster(self, name: str) -> None:
        self.calls.append("delete")

    async def offered_zone_ids(self, instance_type: str) -> list[str]:
        return ["use1-az1", "use1-az2", "use1-az4"]


def _poll(stage: Stage) -> PollFn:
    assert stage.poll is not None
    return stage.poll


def _eks_stages(eks: FakeEks, buckets: FakeBuckets | None = None) -> dict[str, Stage]:
    return by_name(control_plane.create_stages(eks, buckets or FakeBuckets()))


async def test_eks_cluster_created_when_missing_and_polled_with_progress() -> None:
    eks = FakeEks()
    stage = _eks_stages(eks)["eks_cluster"]
    ctx = context(cluster_command("llm"), PREREQS)
    submitted = await stage.run(ctx)
    assert isinstance(submitted, Submitted)
    assert submitted.outputs["created"] is True and eks.calls == ["create"]
    assert eks.cluster is not None
    eks.cluster = EksCluster("llm", eks.cluster.arn, "CREATING", OURS, created_at=datetime.now(UTC))
    ctx.own_outputs = submitted.outputs
    pending = await _poll(stage)(ctx)
    assert isinstance(pending, Pending) and pending.progress is not None
    assert pending.progress.startswith(
        "EKS control plane CREATING ("
    ) and pending.progress.endswith(" s)")


async def test_eks_cluster_with_our_tags_is_adopted_without_a_second_create() -> None:
    eks = FakeEks(EksCluster("llm", "arn:aws:eks:us-east-1:1:cluster/llm", "CREATING", OURS))
    result = await _eks_stages(eks)["eks_cluster"].run(context(cluster_command("llm"), PREREQS))
    assert isinstance(result, Submitted) and result.external_id.endswith("cluster/llm")
    assert eks.calls == []


async def test_eks_cluster_without_our_tags_is_a_conflict_naming_the_fix() -> None:
    eks = FakeEks(
        EksCluster("llm", "arn:aws:eks:us-east-1:1:cluster/llm", "ACTIVE", {"owner": "x"})
    )
    with pytest.raises(PermanentError) as caught:
        await _eks_stages(eks)["eks_cluster"].run(context(cluster_command("llm"), PREREQS))
    assert caught.value.code == "EksClusterNameTaken"
    assert "arn:aws:eks:us-east-1:1:cluster/llm" in caught.value.message
    assert caught.value.hint and "import" in caught.value.hint
    assert eks.calls == []


async def test_failed_eks_cluster_on_poll_carries_its_health_issue() -> None:
    failed = EksCluster(
        "llm",
        "arn:aws:eks:us-east-1:1:cluster/llm",
        "FAILED",
        OURS,
        health="ClusterUnreachable: no",
    )
    stage = _eks_stages(FakeEks(failed))["eks_cluster"]
    with pytest.raises(PermanentError) as caught:
        await _poll(stage)(context(cluster_command("llm"), PREREQS))
    assert (
        caught.value.code == "EksClusterFailed" and "ClusterUnreachable: no" in caught.value.message
    )


async def test_access_entries_use_the_role_behind_an_assumed_role_and_are_idempotent() -> None:
    eks = FakeEks(caller="arn:aws:sts::1:assumed-role/Admin/session-7")
    stage = _eks_stages(eks)["access_entries"]
    ctx = context(cluster_command("llm"), PREREQS)
    first = await stage.run(ctx)
    assert isinstance(first, Done) and not first.noop
    assert first.outputs["principal_arns"] == [
        "arn:aws:iam::1:role/Admin",
        "arn:aws:iam::1:role/exec",
    ]
    assert eks.entries == {
        "arn:aws:iam::1:role/Admin": "STANDARD",
        "arn:aws:iam::1:role/exec": "HYPERPOD_LINUX",
    }
    assert eks.policies["arn:aws:iam::1:role/Admin"] == [
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    ]
    calls = list(eks.calls)
    second = await stage.run(ctx)
    assert isinstance(second, Done) and second.noop and eks.calls == calls


async def test_bucket_of_someone_else_is_used_but_not_recorded_as_created() -> None:
    buckets = FakeBuckets({"shared-data": {"owner": "platform"}})
    stage = _eks_stages(FakeEks(), buckets)["bucket"]
    done = await stage.run(context(cluster_command("llm", bucket="shared-data")))
    assert isinstance(done, Done)
    assert done.outputs == {
        "bucket": "shared-data",
        "lifecycle_script_uri": "s3://shared-data/hyperpod/lifecycle/",
        "created": False,
    }
    assert "create" not in buckets.calls and "add_tags" not in buckets.calls
    assert buckets.calls == ["put hyperpod/lifecycle/on_create.sh"]
    again = await stage.run(context(cluster_command("llm", bucket="shared-data")))
    assert isinstance(again, Done) and again.noop


async def test_delete_stages_leave_what_was_not_created_alone() -> None:
    eks, buckets = FakeEks(EksCluster("llm", "arn", "ACTIVE", OURS)), FakeBuckets({"b": {}})
    sagemaker = FakeSageMaker(HyperPodCluster("llm", "arn", "InService"), OURS)
    resources = {
        "eks_cluster": {"cluster_name": "llm", "created": False},
        "bucket": {"bucket": "b", "created": False},
        "hyperpod_cluster": {"cluster_name": "llm", "created": False},
    }
    command = {"name": "llm", "region": "us-east-1", "resources": resources}
    stages = {
        **by_name(control_plane.delete_stages(eks, buckets)),
        **by_name(hyperpod.delete_stages(sagemaker)),
    }
    for name in ("delete_hyperpod", "delete_eks", "delete_bucket"):
        result = await stages[name].run(context(command))
        assert isinstance(result, Done) and result.noop, name
    assert eks.calls == buckets.calls == sagemaker.calls == []


async def test_delete_refuses_a_cluster_that_lost_our_tags() -> None:
    eks = FakeEks(EksCluster("llm", "arn", "ACTIVE", {"owner": "x"}))
    command = {
        "name": "llm",
        "region": "us-east-1",
        "resources": {"eks_cluster": {"cluster_name": "llm", "created": True}},
    }
    stage = by_name(control_plane.delete_stages(eks, FakeBuckets()))["delete_eks"]
    with pytest.raises(PermanentError) as caught:
        await stage.run(context(command))
    assert caught.value.code == "EksClusterNotOurs" and eks.calls == []


async def test_hyperpod_failure_other_than_capacity_keeps_aws_message() -> None:
    failed = HyperPodCluster(
        "llm", "arn", "Failed", "ValidationException: lifecycle script exited 1"
    )
    stage = by_name(hyperpod.create_stages(FakeSageMaker(failed, OURS)))["hyperpod_cluster"]
    with pytest.raises(PermanentError) as caught:
        await _poll(stage)(context(cluster_command("llm"), PREREQS))
    assert caught.value.code == "HyperPodClusterFailed"
    assert "lifecycle script exited 1" in caught.value.message and caught.value.hint


async def test_hyperpod_capacity_failure_points_to_other_zones_and_a_retry_deletes_it() -> None:
    message = "InsufficientInstanceCapacity: no ml.g5.8xlarge capacity in use1-az2"
    sagemaker = FakeSageMaker(HyperPodCluster("llm", "arn", "Failed", message), OURS)
    stage = by_name(hyperpod.create_stages(sagemaker))["hyperpod_cluster"]
    with pytest.raises(PermanentError) as caught:
        await _poll(stage)(context(cluster_command("llm"), PREREQS, external_id="arn"))
    assert caught.value.code == "InsufficientInstanceCapacity"
    assert caught.value.hint is not None
    assert "ml.g5.8xlarge is offered in use1-az1, use1-az4" in caught.value.hint
    assert sagemaker.calls == []
    # The retry deletes the failed cluster and waits for it before creating it again.
    retried = await stage.run(context(cluster_command("llm"), PREREQS))
    assert isinstance(retried, Submitted) and retried.external_id == "arn"
    assert sagemaker.calls == ["delete"]
    waiting = await _poll(stage)(
        context(cluster_command("llm"), PREREQS, external_id="arn", own=retried.outputs)
    )
    assert isinstance(waiting, Pending) and "deleted" in (waiting.progress or "")


async def test_fsx_not_requested_is_a_noop_and_requested_is_created_in_the_compute_subnet() -> None:
    class FakeFsx:
        def __init__(self) -> None:
            self.requests: list[dict[str, Any]] = []

        async def list_file_systems(self) -> list[fsx.FileSystem]:
            return []

        async def describe(self, file_system_id: str) -> fsx.FileSystem | None:
            return None

        async def create(self, request: dict[str, Any]) -> fsx.FileSystem:
            self.requests.append(request)
            return fsx.FileSystem("fs-1", "CREATING", OURS)

        async def delete(self, file_system_id: str) -> None:
            raise AssertionError("not expected")

    port = FakeFsx()
    stage = by_name(fsx.create_stages(port, deployment_type="SCRATCH_2"))["fsx"]
    skipped = await stage.run(context(cluster_command("llm"), PREREQS))
    assert isinstance(skipped, Done) and skipped.noop and port.requests == []
    made = await stage.run(context(cluster_command("llm", fsx_capacity_gib=1200), PREREQS))
    assert isinstance(made, Submitted) and made.external_id == "fs-1"
    assert port.requests[0]["SubnetIds"] == ["subnet-c"]
    assert port.requests[0]["LustreConfiguration"]["DeploymentType"] == "SCRATCH_2"
