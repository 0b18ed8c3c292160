"""Storage claims: the FSx for Lustre rules as the CreateFileSystem reference states them, the
mount rules of workloads, and the claim plans and deletes over fakes of the ports."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from cluster_svc.domain.claims import add_plan, delete_source, made_for, remove_plan
from cluster_svc.domain.fsx import FileSystem
from shared.contracts.storage import (
    AddStorage,
    RemoveStorage,
    StorageAdd,
    StorageClaim,
    StorageTarget,
    VolumeMount,
    check_volumes,
)
from shared.contracts.workloads import PyTorchRecipe
from shared.errors import PermanentError
from shared.storage_claims import default_claims
from shared.validation import RuleViolation

STORAGE: TypeAdapter[Any] = TypeAdapter(StorageAdd)


def _fsx(**fields: Any) -> Any:
    return STORAGE.validate_python({"kind": "fsx", "claim": "lustre", **fields})


@pytest.mark.parametrize(
    ("kind", "capacity", "ok"),
    [
        ("PERSISTENT_2", 1200, True),
        ("PERSISTENT_2", 2400, True),
        ("PERSISTENT_2", 4800, True),
        ("PERSISTENT_2", 3600, False),
        ("PERSISTENT_1", 7200, True),
        ("SCRATCH_2", 1800, False),
        ("SCRATCH_1", 3600, True),
        ("SCRATCH_1", 4800, False),
        ("SCRATCH_1", 2400, True),
    ],
)
def test_capacity_steps_follow_the_deployment_type(kind: str, capacity: int, ok: bool) -> None:
    fields = {"storage_capacity_gib": capacity, "deployment_type": kind}
    if ok:
        assert _fsx(**fields).storage_capacity_gib == capacity
    else:
        with pytest.raises(ValidationError, match="storage_capacity_gib"):
            _fsx(**fields)


@pytest.mark.parametrize(
    ("kind", "throughput", "ok"),
    [
        ("PERSISTENT_2", 125, True),
        ("PERSISTENT_2", 1000, True),
        ("PERSISTENT_2", 200, False),
        ("PERSISTENT_1", 50, True),
        ("PERSISTENT_1", 125, False),
        ("SCRATCH_2", 125, False),
    ],
)
def test_throughput_values_follow_the_deployment_type(kind: str, throughput: int, ok: bool) -> None:
    fields = {"storage_capacity_gib": 1200, "deployment_type": kind}
    if ok:
        assert _fsx(**fields, per_unit_storage_throughput=throughput).new_throughput() == throughput
    else:
        with pytest.raises(ValidationError, match="per_unit_storage_throughput"):
            _fsx(**fields, per_unit_storage_throughput=throughput)


def test_defaults_and_the_two_ways_to_name_a_file_system() -> None:
    new = _fsx(storage_capacity_gib=1200)
    assert (new.new_deployment_type(), new.new_throughput()) == ("PERSISTENT_2", 250)
    assert _fsx(storage_capacity_gib=1200, deployment_type="SCRATCH_2").new_throughput() is None
    with pytest.raises(ValidationError, match="describe a new one"):
        _fsx(file_system_id="fs-0123456789abcdef0", storage_capacity_gib=1200)
    with pytest.raises(ValidationError, match="needs file_system_id or storage_capacity_gib"):
        _fsx()
    with pytest.raises(ValidationError, match="DNS-1123"):
        STORAGE.validate_python({"kind": "s3", "claim": "Data", "bucket": "abc-data"})
    with pytest.raises(ValidationError, match="bucket name"):
        STORAGE.validate_python({"kind": "s3", "claim": "data", "bucket": "Not_A_Bucket"})


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("data", "not absolute"),
        ("/data/../etc", "normal form"),
        ("/etc/x", "covers the container's /etc"),
        ("/proc", "covers"),
    ],
)
def test_mount_paths_are_absolute_normal_and_not_system_directories(
    path: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        VolumeMount(claim="data", mount_path=path)


def test_volumes_neither_repeat_nor_overlap_nor_cover_the_default_mount() -> None:
    a = VolumeMount(claim="a", mount_path="/data")
    with pytest.raises(RuleViolation, match="mounted twice"):
        check_volumes([a, VolumeMount(claim="a", mount_path="/other")])
    with pytest.raises(RuleViolation, match="overlap"):
        check_volumes([a, VolumeMount(claim="b", mount_path="/data/inner")])
    with pytest.raises(RuleViolation, match="/s3 holds s3-claim"):
        check_volumes([VolumeMount(claim="b", mount_path="/s3/b")])
    with pytest.raises(RuleViolation, match="already mounted at /s3"):
        check_volumes([VolumeMount(claim="s3-claim", mount_path="/again")])
    check_volumes([a, VolumeMount(claim="b", mount_path="/fsx")])


def test_a_team_job_cannot_mount_claims_of_namespace_default() -> None:
    base = {"recipe": "pytorch", "name": "j", "instance_group": "gpu", "script": "t.py"}
    PyTorchRecipe.model_validate({**base, "volumes": [{"claim": "a", "mount_path": "/a"}]})
    with pytest.raises(ValidationError, match="namespace default"):
        PyTorchRecipe.model_validate(
            {**base, "team": "ml", "volumes": [{"claim": "a", "mount_path": "/a"}]}
        )


def test_the_default_claims_come_from_the_create_record() -> None:
    resources = {
        "bucket": {"bucket": "hyperpilot-c-1"},
        "storage": {"pvc_name": "s3-claim", "pv_name": "s3-hyperpilot-c-1"},
    }
    (own,) = default_claims(True, resources)
    assert (own.claim, own.bucket, own.source) == ("s3-claim", "hyperpilot-c-1", "default")
    assert default_claims(False, resources) == []


# ---- plans and deletes over fakes -----------------------------------------------------------


class Buckets:
    def __init__(self, tags: dict[str, dict[str, str]]) -> None:
        self.buckets = tags
        self.deleted: list[str] = []

    async def exists(self, name: str) -> bool:
        return name in self.buckets

    async def tags(self, name: str) -> dict[str, str]:
        return self.buckets.get(name, {})

    async def empty(self, name: str) -> int:
        return 2

    async def delete(self, name: str) -> None:
        self.deleted.append(name)
        del self.buckets[name]


class Lustre:
    def __init__(self, systems: list[FileSystem]) -> None:
        self.systems = {fs.file_system_id: fs for fs in systems}
        self.deleted: list[str] = []

    async def list_file_systems(self) -> list[FileSystem]:
        return list(self.systems.values())

    async def describe(self, file_system_id: str) -> FileSystem | None:
        return self.systems.get(file_system_id)

    async def delete(self, file_system_id: str) -> None:
        self.deleted.append(file_system_id)


TARGET = StorageTarget(eks_cluster="c", subnet_id="subnet-1", security_group_id="sg-1")
FOUND = FileSystem("fs-0123456789abcdef0", "AVAILABLE", {}, "fs.dns", "abcdmount", 1200)


def _add(storage: dict[str, Any], existing: list[str] | None = None) -> AddStorage:
    return AddStorage(
        cluster="c",
        region="us-east-1",
        target=TARGET,
        storage=STORAGE.validate_python(storage),
        existing=existing or ["s3-claim"],
    )


def test_plans_read_actual_state_and_refuse_what_cannot_be_attached() -> None:
    buckets, lustre = Buckets({"there": {}}), Lustre([FOUND])
    plan = asyncio.run(
        add_plan(
            _add({"kind": "fsx", "claim": "l", "file_system_id": FOUND.file_system_id}),
            buckets,  # type: ignore[arg-type]
            lustre,  # type: ignore[arg-type]
        )
    )
    assert plan.calls == [] and "abcdmount" in plan.notes[0]
    assert plan.objects[0].body is not None
    assert plan.objects[0].body["spec"]["csi"]["volumeAttributes"]["dnsname"] == "fs.dns"
    new = asyncio.run(
        add_plan(
            _add({"kind": "fsx", "claim": "n", "storage_capacity_gib": 2400}),
            buckets,  # type: ignore[arg-type]
            lustre,  # type: ignore[arg-type]
        )
    )
    (call,) = new.calls
    assert call.params["LustreConfiguration"]["PerUnitStorageThroughput"] == 250
    assert call.params["SubnetIds"] == ["subnet-1"]
    for storage, code in (
        ({"kind": "s3", "claim": "x", "bucket": "absent"}, "BucketNotFound"),
        ({"kind": "s3", "claim": "x", "bucket": "there", "create": True}, "BucketExists"),
        ({"kind": "fsx", "claim": "x", "file_system_id": "fs-00000000"}, "FileSystemNotFound"),
        ({"kind": "s3", "claim": "s3-claim", "bucket": "there"}, "ClaimExists"),
    ):
        with pytest.raises(PermanentError) as refused:
            asyncio.run(add_plan(_add(storage), buckets, lustre))  # type: ignore[arg-type]
        assert refused.value.code == code


def test_only_what_a_claim_created_is_deleted() -> None:
    ours = {"managed-by": "hyperpilot", "hyperpilot-cluster": "c", "hyperpilot-claim": "made"}
    assert made_for(ours, "c", "made") and not made_for(ours, "c", "other")
    buckets = Buckets({"found": {}, "made": ours, "retagged": {}})
    lustre = Lustre([FOUND])
    found = StorageClaim(claim="found", kind="s3", source="existing", bucket="found")
    made = StorageClaim(claim="made", kind="s3", source="created", bucket="made")
    fs = StorageClaim(claim="l", kind="fsx", source="existing", file_system_id=FOUND.file_system_id)
    for claim in (found, fs):
        answer = asyncio.run(delete_source("c", claim, buckets, lustre))  # type: ignore[arg-type]
        assert answer.outputs["kept"] in ("found", FOUND.file_system_id)
    asyncio.run(delete_source("c", made, buckets, lustre))  # type: ignore[arg-type]
    assert buckets.deleted == ["made"] and lustre.deleted == []
    retagged = StorageClaim(claim="r", kind="s3", source="created", bucket="retagged")
    with pytest.raises(PermanentError, match="no longer carries"):
        asyncio.run(delete_source("c", retagged, buckets, lustre))  # type: ignore[arg-type]
    plan = remove_plan(RemoveStorage(cluster="c", region="us-east-1", target=TARGET, claim=found))
    assert plan.calls == [] and "stays" in plan.notes[0]


def test_endpoint_volumes_are_for_self_managed_pods_in_namespace_default() -> None:
    from shared.contracts.inference import EndpointSpec

    base: dict[str, Any] = {
        "name": "e",
        "instance_type": "ml.g5.8xlarge",
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    volumes = [{"claim": "s3-claim", "mount_path": "/s3"}]  # not mounted by default here
    assert EndpointSpec.model_validate({**base, "volumes": volumes}).volumes[0].claim == "s3-claim"
    with pytest.raises(ValidationError, match="storage claims live in namespace default"):
        EndpointSpec.model_validate({**base, "team": "ml", "volumes": volumes})
    with pytest.raises(ValidationError, match="mounted twice"):
        EndpointSpec.model_validate({**base, "volumes": volumes * 2})
