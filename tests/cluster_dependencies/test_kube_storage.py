"""The S3 (Mountpoint) and FSx volumes and the storage stages, against an in-memory cluster."""

from __future__ import annotations

from typing import Any

import pytest

from cluster_svc.domain.components.base import COMPONENT_LABEL, KubeObject
from cluster_svc.domain.dependencies import create_stages, delete_stages
from cluster_svc.domain.kube_storage import fsx_volume, s3_volume
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, Submitted
from tests.cluster_dependencies.fakes import FakeAddons, FakeKube, FakeKubeFactory
from tests.cluster_dependencies.helpers import Contexts, create_command, eks_outputs


def storage(kube: FakeKube) -> Stage:
    stage = next(
        s for s in create_stages(FakeKubeFactory(kube), FakeAddons({})) if s.name == "storage"
    )
    assert stage.needs == ("dependencies", "bucket")
    return stage


def contexts(fsx: dict[str, Any] | None = None) -> Contexts:
    outputs: dict[str, dict[str, Any]] = {
        "eks_cluster": eks_outputs(),
        "bucket": {"bucket": "hp-llm-data"},
        "dependencies": {},
    }
    if fsx is not None:
        outputs["fsx"] = fsx
    return Contexts("storage", create_command(), outputs)


def bind_claims(kube: FakeKube) -> None:
    for key, obj in kube.objects.items():
        if key[1] == "PersistentVolumeClaim":
            obj["status"] = {"phase": "Bound"}


def test_s3_volume_is_a_static_mountpoint_pv_with_its_claim() -> None:
    pv, pvc = s3_volume("hp-llm-data", "eu-west-1")
    assert pv["spec"]["csi"]["driver"] == "s3.csi.aws.com"
    assert pv["spec"]["csi"]["volumeAttributes"] == {"bucketName": "hp-llm-data"}
    assert pv["spec"]["mountOptions"] == ["allow-delete", "region eu-west-1"]
    assert pv["spec"]["claimRef"] == {"namespace": "default", "name": "s3-claim"}
    assert pv["spec"]["storageClassName"] == "" == pvc["spec"]["storageClassName"]
    assert pvc["metadata"] == {
        "name": "s3-claim",
        "namespace": "default",
        "labels": pvc["metadata"]["labels"],
    }
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["accessModes"] == pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_fsx_volume_names_the_file_system_dns_and_mount_name() -> None:
    pv, pvc = fsx_volume(
        "fs-0123456789abcdef0", "fs-0123.fsx.us-east-1.amazonaws.com", "abcd1234", 2400
    )
    assert pv["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "volumeAttributes": {
            "dnsname": "fs-0123.fsx.us-east-1.amazonaws.com",
            "mountname": "abcd1234",
        },
    }
    assert pv["spec"]["capacity"] == {"storage": "2400Gi"} == pvc["spec"]["resources"]["requests"]
    assert pvc["metadata"]["name"] == "fsx-claim"


async def test_storage_applies_pv_and_claim_then_polls_until_bound() -> None:
    kube = FakeKube()
    stage, ctx = storage(kube), contexts()
    assert stage.poll is not None
    submitted = ctx.keep(await stage.run(ctx()))
    assert isinstance(submitted, Submitted)
    assert submitted.external_id == "llm/default/s3-claim"
    assert [k[1] for op, k in kube.mutations] == ["PersistentVolume", "PersistentVolumeClaim"]
    assert await stage.poll(ctx()) == Pending("waiting for s3-claim to bind")
    bind_claims(kube)
    done = await stage.poll(ctx())
    assert isinstance(done, Done)
    assert done.outputs["pv_name"] == "s3-hp-llm-data"
    assert (done.outputs["pvc_name"], done.outputs["namespace"]) == ("s3-claim", "default")
    assert [r["kind"] for r in done.outputs["created"]] == [
        "PersistentVolume",
        "PersistentVolumeClaim",
    ]

    count = len(kube.mutations)
    again = await stage.run(contexts()())
    assert isinstance(again, Done) and again.noop and len(kube.mutations) == count


async def test_a_claim_of_the_same_name_bound_elsewhere_is_reported_not_overwritten() -> None:
    kube = FakeKube()
    theirs: KubeObject = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "s3-claim", "namespace": "default"},
        "spec": {"volumeName": "someone-elses-pv"},
    }
    kube.put(theirs)
    with pytest.raises(PermanentError) as err:
        await storage(kube).run(contexts()())
    assert err.value.code == "StorageNameTaken"
    assert "someone-elses-pv" in err.value.message
    assert "kubectl delete persistentvolumeclaim s3-claim" in (err.value.hint or "")
    assert not kube.mutations


async def test_fsx_outputs_add_the_fsx_volume_and_claim() -> None:
    kube = FakeKube()
    kube.on_apply = lambda obj: (
        obj.update(status={"phase": "Bound"}) if obj["kind"] == "PersistentVolumeClaim" else None
    )
    fsx = {
        "file_system_id": "fs-0abc",
        "mount_name": "m1n2",
        "dns_name": "fs-0abc.fsx.us-east-1.amazonaws.com",
    }
    done = await storage(kube).run(contexts(fsx)())
    assert isinstance(done, Done)
    assert done.outputs["fsx_pvc_name"] == "fsx-claim"
    assert done.outputs["fsx_pv_name"] == "fsx-fs-0abc"
    pv = kube.objects[("v1", "PersistentVolume", "", "fsx-fs-0abc")]
    assert pv["spec"]["csi"]["volumeAttributes"]["mountname"] == "m1n2"
    with pytest.raises(PermanentError) as err:
        await storage(FakeKube()).run(contexts({"file_system_id": "fs-0abc"})())
    assert err.value.code == "FsxMountNameMissing"


async def test_delete_storage_removes_only_what_storage_made_claims_first() -> None:
    kube = FakeKube()
    kube.on_apply = lambda obj: (
        obj.update(status={"phase": "Bound"}) if obj["kind"] == "PersistentVolumeClaim" else None
    )
    done = await storage(kube).run(contexts()())
    assert isinstance(done, Done)
    foreign = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "keep-me"}}
    kube.put(foreign)
    created = [
        *done.outputs["created"],
        {"apiVersion": "v1", "kind": "PersistentVolume", "name": "keep-me", "namespace": None},
    ]
    stage = next(
        s
        for s in delete_stages(FakeKubeFactory(kube), FakeAddons({}))
        if s.name == "delete_storage"
    )
    command = {
        "name": "llm",
        "region": "us-east-1",
        "resources": {
            "eks_cluster": eks_outputs(),
            "storage": {**done.outputs, "created": created},
        },
    }
    result = await stage.run(Contexts("delete_storage", command, {})())
    assert isinstance(result, Done)
    assert result.outputs["removed"] == [
        "PersistentVolumeClaim/s3-claim",
        "PersistentVolume/s3-hp-llm-data",
    ]
    assert list(kube.objects) == [("v1", "PersistentVolume", "", "keep-me")]
    assert COMPONENT_LABEL not in foreign["metadata"]
    again = await stage.run(Contexts("delete_storage", command, {})())
    assert isinstance(again, Done) and again.noop
