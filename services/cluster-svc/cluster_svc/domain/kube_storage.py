"""Shared storage as Kubernetes volumes: the cluster's S3 bucket through the Mountpoint for S3
CSI driver, and (when the cluster has one) FSx for Lustre through the FSx CSI driver.

Both are statically provisioned: a PersistentVolume that names the bucket or file system, and a
claim pre-bound to it (`s3-claim`, `fsx-claim` in `default`), which training pods mount.
"""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.components.base import (
    KubeApi,
    KubeFactory,
    KubeObject,
    cluster_access,
    is_managed,
    labelled,
    object_ref,
)
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

COMPONENT = "storage"
VERSION = "1"
NAMESPACE = "default"
S3_DRIVER = "s3.csi.aws.com"
FSX_DRIVER = "fsx.csi.aws.com"
S3_CLAIM = "s3-claim"
FSX_CLAIM = "fsx-claim"
S3_CAPACITY = "1200Gi"  # Mountpoint ignores it; Kubernetes requires one


def _pv(
    name: str, capacity: str, csi: dict[str, Any], options: list[str], claim: str
) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": options,
            "claimRef": {"namespace": NAMESPACE, "name": claim},
            "csi": csi,
        },
    }


def _pvc(name: str, volume: str, capacity: str) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "resources": {"requests": {"storage": capacity}},
            "volumeName": volume,
        },
    }


def s3_volume(
    bucket: str, region: str, claim: str = S3_CLAIM, volume: str | None = None
) -> list[KubeObject]:
    """PV + PVC for the bucket; `allow-delete` lets jobs remove their own checkpoints."""
    name = volume or f"s3-{bucket}"[:253]
    csi = {
        "driver": S3_DRIVER,
        "volumeHandle": f"s3-csi-{bucket}",
        "volumeAttributes": {"bucketName": bucket},
    }
    options = ["allow-delete", f"region {region}"]
    return [
        labelled(_pv(name, S3_CAPACITY, csi, options, claim), COMPONENT, VERSION),
        labelled(_pvc(claim, name, S3_CAPACITY), COMPONENT, VERSION),
    ]


def fsx_volume(
    file_system_id: str,
    dns_name: str,
    mount_name: str,
    capacity_gib: int,
    claim: str = FSX_CLAIM,
    volume: str | None = None,
) -> list[KubeObject]:
    """PV + PVC for the file system: its id, DNSName and Lustre MountName."""
    capacity = f"{capacity_gib}Gi"
    name = volume or f"fsx-{file_system_id}"
    csi = {
        "driver": FSX_DRIVER,
        "volumeHandle": file_system_id,
        "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
    }
    return [
        labelled(_pv(name, capacity, csi, ["flock"], claim), COMPONENT, VERSION),
        labelled(_pvc(claim, name, capacity), COMPONENT, VERSION),
    ]


def wanted_volumes(ctx: StageContext[CreateCluster]) -> list[KubeObject]:
    cmd = ctx.cmd
    objects = s3_volume(ctx.output("bucket", "bucket"), cmd.region)
    fsx = ctx.outputs.get("fsx") or {}
    if fsx.get("file_system_id"):
        fs_id = str(fsx["file_system_id"])
        if not fsx.get("mount_name"):
            raise PermanentError(
                "FsxMountNameMissing",
                f"the fsx stage reported file system {fs_id} without its Lustre mount name",
                "the fsx stage must output mount_name (DescribeFileSystems"
                " LustreConfiguration.MountName); retry once it does",
            )
        dns_name = str(fsx.get("dns_name") or f"{fs_id}.fsx.{cmd.region}.amazonaws.com")
        capacity = int(fsx.get("capacity_gib") or cmd.spec.storage.fsx_capacity_gib or 1200)
        objects += fsx_volume(fs_id, dns_name, str(fsx["mount_name"]), capacity)
    return objects


def claim_conflict(wanted: KubeObject, current: KubeObject) -> PermanentError | None:
    """A claim or volume of the same name that Hyperpilot did not make and points elsewhere."""
    if is_managed(current, COMPONENT):
        return None
    kind, name = current["kind"], current["metadata"]["name"]
    if kind == "PersistentVolumeClaim":
        bound_to = (current.get("spec") or {}).get("volumeName")
        if bound_to == wanted["spec"]["volumeName"]:
            return None
        where = f"volume {bound_to}" if bound_to else "another volume"
    else:
        ref = (current.get("spec") or {}).get("claimRef") or {}
        if (ref.get("namespace"), ref.get("name")) in (
            (None, None),
            (NAMESPACE, wanted["spec"]["claimRef"]["name"]),
        ):
            return None
        where = f"claim {ref.get('namespace')}/{ref.get('name')}"
    return PermanentError(
        "StorageNameTaken",
        f"{kind} {name} already exists and is bound to {where}",
        f"delete or rename the existing {kind} (kubectl delete {kind.lower()} {name}), then retry",
    )


def storage_stage(kube_factory: KubeFactory) -> Stage:
    async def current(
        ctx: StageContext[Any],
    ) -> tuple[KubeApi, list[KubeObject], list[KubeObject | None]]:
        kube = kube_factory(cluster_access(ctx.outputs["eks_cluster"]))
        wanted = wanted_volumes(ctx)
        found = [await kube.get(*object_ref(obj)) for obj in wanted]
        return kube, wanted, found

    def outputs(wanted: list[KubeObject], found: list[KubeObject | None]) -> dict[str, Any]:
        claims = [o for o in wanted if o["kind"] == "PersistentVolumeClaim"]
        volumes = [o for o in wanted if o["kind"] == "PersistentVolume"]
        result: dict[str, Any] = {
            "pv_name": volumes[0]["metadata"]["name"],
            "pvc_name": claims[0]["metadata"]["name"],
            "namespace": NAMESPACE,
            "created": [_ref(o) for o in found if o is not None and is_managed(o, COMPONENT)],
        }
        if len(claims) > 1:
            result["fsx_pv_name"] = volumes[1]["metadata"]["name"]
            result["fsx_pvc_name"] = claims[1]["metadata"]["name"]
        return result

    def unbound(found: list[KubeObject | None]) -> list[str]:
        waiting = []
        for obj in found:
            if obj is None or obj["kind"] != "PersistentVolumeClaim":
                continue
            phase = (obj.get("status") or {}).get("phase")
            if phase == "Lost":
                raise PermanentError(
                    "ClaimLost",
                    f"claim {obj['metadata']['name']} lost its volume",
                    "delete the claim and its volume, then retry the operation",
                )
            if phase != "Bound":
                waiting.append(obj["metadata"]["name"])
        return waiting

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        kube, wanted, found = await current(ctx)
        for obj, existing in zip(wanted, found, strict=True):
            if existing is not None and (conflict := claim_conflict(obj, existing)):
                raise conflict  # checked for every object before any is applied
        missing = [obj for obj, existing in zip(wanted, found, strict=True) if existing is None]
        for obj in missing:
            await kube.apply(obj)
        applied = bool(missing)
        found = [await kube.get(*object_ref(obj)) for obj in wanted]
        result = outputs(wanted, found)
        if not any(o is None for o in found) and not unbound(found):
            return Done(result, noop=not applied)
        cluster = ctx.outputs["eks_cluster"]["cluster_name"]
        return Submitted(f"{cluster}/{NAMESPACE}/{S3_CLAIM}", result)

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        _, wanted, found = await current(ctx)
        if any(obj is None for obj in found):
            missing = [_ref(w) for w, f in zip(wanted, found, strict=True) if f is None]
            raise PermanentError(
                "StorageObjectDeleted",
                f"{', '.join(str(m['name']) for m in missing)} disappeared while binding",
                "retry the operation to recreate them",
            )
        waiting = unbound(found)
        if waiting:
            return Pending(f"waiting for {', '.join(waiting)} to bind")
        return Done(outputs(wanted, found))

    return Stage(
        "storage",
        "Attach shared storage to the cluster",
        run,
        poll,
        needs=("dependencies", "bucket"),
    )


def _ref(obj: KubeObject) -> dict[str, Any]:
    api_version, kind, name, namespace = object_ref(obj)
    return {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}


def delete_storage_stage(kube_factory: KubeFactory) -> Stage:
    """Remove the claims and volumes the storage stage made (claims first). The bucket and
    file system behind them are deleted by their own stages."""

    async def run(ctx: StageContext[DeleteCluster]) -> Done:
        resources = ctx.cmd.resources
        created = list((resources.get("storage") or {}).get("created") or [])
        eks = resources.get("eks_cluster") or {}
        if not created or not eks.get("endpoint"):
            return Done({"removed": []}, noop=True)
        kube = kube_factory(cluster_access(eks))
        removed = []
        for ref in sorted(created, key=lambda r: r["kind"] != "PersistentVolumeClaim"):
            current = await kube.get(ref["apiVersion"], ref["kind"], ref["name"], ref["namespace"])
            if current is None or not is_managed(current, COMPONENT):
                continue
            if await kube.delete(ref["apiVersion"], ref["kind"], ref["name"], ref["namespace"]):
                removed.append(f"{ref['kind']}/{ref['name']}")
        return Done({"removed": removed}, noop=not removed)

    return Stage("delete_storage", "Remove the cluster's storage volumes", run)
