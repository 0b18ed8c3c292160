"""Storage claims added to and removed from a cluster: the workflows and their plans.

add:    source (find the bucket or file system, or create it) -> volume (PV + PVC, bound)
remove: volume (PVC, then PV) -> source (delete the bucket or file system, only if the claim
        created it)

A bucket or file system that existed before it was attached is read, never changed nor deleted.
One the claim created carries Hyperpilot's tags with the cluster and the claim, so a retried
stage finds it (a crash after the create call) and a removal deletes only that.
"""

from __future__ import annotations

from typing import Any, Protocol

from cluster_svc.domain.components.base import (
    ClusterAccess,
    KubeApi,
    KubeFactory,
    KubeObject,
    is_managed,
    object_ref,
)
from cluster_svc.domain.control_plane import CLUSTER_KEY, MANAGED_BY, MANAGED_BY_KEY, EksPort
from cluster_svc.domain.fsx import LUSTRE_VERSION, FileSystem, FsxPort, creation_progress
from cluster_svc.domain.kube_storage import COMPONENT, claim_conflict, fsx_volume, s3_volume
from cluster_svc.domain.storage import BucketStore
from shared.contracts.plan import FieldChange, Plan, PlannedCall, PlannedObject
from shared.contracts.storage import (
    AddStorage,
    FsxStorage,
    RemoveStorage,
    S3Storage,
    StorageClaim,
)
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow

CLAIM_KEY = "hyperpilot-claim"


class ClaimBuckets(BucketStore, Protocol):
    async def tags(self, name: str) -> dict[str, str]: ...
    async def add_tags(self, name: str, tags: dict[str, str]) -> None: ...


def claim_tags(cluster: str, claim: str, extra: dict[str, str]) -> dict[str, str]:
    """Tags of what a claim creates: the cluster's, then Hyperpilot's (which win)."""
    return {**extra, MANAGED_BY_KEY: MANAGED_BY, CLUSTER_KEY: cluster, CLAIM_KEY: claim}


def made_for(tags: dict[str, str], cluster: str, claim: str) -> bool:
    return (
        tags.get(MANAGED_BY_KEY) == MANAGED_BY
        and tags.get(CLUSTER_KEY) == cluster
        and tags.get(CLAIM_KEY) == claim
    )


def volume_name(cluster: str, claim: str) -> str:
    """The PersistentVolume of an added claim (cluster-scoped, so the cluster's name is in it)."""
    return f"hp-{cluster.lower()}-{claim}"[:253]


def file_system_request(cmd: AddStorage, storage: FsxStorage, token: str) -> dict[str, Any]:
    """CreateFileSystem for a new claim's Lustre file system, in the compute subnet."""
    target = cmd.target
    if not target.subnet_id or not target.security_group_id:
        raise PermanentError(
            "NoComputeSubnet",
            f"cluster {cmd.cluster} has no recorded compute subnet and security group for a new"
            " file system",
            "attach an existing file system by file_system_id instead",
        )
    kind = storage.new_deployment_type()
    lustre: dict[str, Any] = {"DeploymentType": kind}
    if (throughput := storage.new_throughput()) is not None:
        lustre["PerUnitStorageThroughput"] = throughput
    if kind != "SCRATCH_1":
        lustre["DataCompressionType"] = "LZ4"
    tags = {**claim_tags(cmd.cluster, storage.claim, target.tags), "Name": storage.claim}
    return {
        "ClientRequestToken": token,
        "FileSystemType": "LUSTRE",
        "FileSystemTypeVersion": LUSTRE_VERSION,
        "StorageCapacity": storage.storage_capacity_gib,
        "StorageType": "SSD",
        "SubnetIds": [target.subnet_id],
        "SecurityGroupIds": [target.security_group_id],
        "LustreConfiguration": lustre,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def _fs_outputs(fs: FileSystem, created: bool) -> dict[str, Any]:
    return {
        "file_system_id": fs.file_system_id,
        "dns_name": fs.dns_name,
        "mount_name": fs.mount_name,
        "capacity_gib": fs.capacity_gib,
        "deployment_type": fs.deployment_type,
        "throughput_per_tib": fs.throughput_per_tib,
        "lifecycle": fs.lifecycle,
        "created": created,
    }


def volume_objects(cmd: AddStorage, source: dict[str, Any]) -> list[KubeObject]:
    """The claim's PV and PVC from what the source stage found or made."""
    storage = cmd.storage
    name = volume_name(cmd.cluster, storage.claim)
    if isinstance(storage, S3Storage):
        return s3_volume(storage.bucket, cmd.region, storage.claim, name)
    if not source.get("mount_name") or not source.get("dns_name"):
        raise PermanentError(
            "FsxMountNameMissing",
            f"FSx for Lustre {source.get('file_system_id')} has no MountName or DNSName yet",
            "retry once DescribeFileSystems shows LustreConfiguration.MountName and DNSName",
        )
    return fsx_volume(
        str(source["file_system_id"]),
        str(source["dns_name"]),
        str(source["mount_name"]),
        int(source.get("capacity_gib") or storage.storage_capacity_gib or 1200),
        storage.claim,
        name,
    )


def _not_lustre_ready(fs: FileSystem) -> PermanentError:
    return PermanentError(
        "FileSystemNotAvailable",
        f"FSx for Lustre {fs.file_system_id} is {fs.lifecycle}",
        "attach it once DescribeFileSystems shows it AVAILABLE",
    )


async def find_source(
    cmd: AddStorage, buckets: ClaimBuckets, fsx: FsxPort
) -> tuple[dict[str, Any], bool]:
    """What the claim would mount as it stands: (outputs, exists). Refuses what cannot be
    attached (a missing bucket or file system, a new bucket whose name is taken)."""
    storage = cmd.storage
    if isinstance(storage, S3Storage):
        exists = await buckets.exists(storage.bucket)
        if not storage.create and not exists:
            raise PermanentError(
                "BucketNotFound",
                f"storage.bucket: bucket {storage.bucket} does not exist in this account",
                "name an existing bucket, or send create: true to create it",
            )
        if storage.create and exists:
            tags = await buckets.tags(storage.bucket)
            if not made_for(tags, cmd.cluster, storage.claim):
                raise PermanentError(
                    "BucketExists",
                    f"storage.bucket: bucket {storage.bucket} already exists",
                    "send create: false to attach the existing bucket, or choose a new name",
                )
        return {"bucket": storage.bucket, "created": storage.create}, exists
    if storage.file_system_id is not None:
        found = await fsx.describe(storage.file_system_id)
        if found is None:
            raise PermanentError(
                "FileSystemNotFound",
                f"storage.file_system_id: FSx for Lustre {storage.file_system_id} does not"
                " exist in this region",
                "list file systems with aws fsx describe-file-systems and pass one's id",
            )
        if found.lifecycle not in ("AVAILABLE", "UPDATING"):
            raise _not_lustre_ready(found)
        return _fs_outputs(found, False), True
    ours = [
        fs
        for fs in await fsx.list_file_systems()
        if made_for(fs.tags, cmd.cluster, storage.claim) and fs.lifecycle != "DELETING"
    ]
    if ours:
        return _fs_outputs(ours[0], True), True
    return {"created": True}, False


def add_storage_workflow(
    buckets: ClaimBuckets, fsx: FsxPort, kube: KubeFactory, eks: EksPort
) -> Workflow[AddStorage]:
    async def source(ctx: StageContext[AddStorage]) -> Done | Submitted:
        cmd = ctx.cmd
        found, exists = await find_source(cmd, buckets, fsx)
        storage = cmd.storage
        if isinstance(storage, S3Storage):
            if exists:
                return Done(found, noop=True)
            await buckets.create(storage.bucket, cmd.region)
            await buckets.add_tags(
                storage.bucket, claim_tags(cmd.cluster, storage.claim, cmd.target.tags)
            )
            await buckets.block_public_access(storage.bucket)
            await buckets.encrypt(storage.bucket)
            return Done(found)
        if not exists:
            made = await fsx.create(file_system_request(cmd, storage, str(ctx.operation_id)))
            return Submitted(made.file_system_id, _fs_outputs(made, True))
        if found.get("lifecycle") == "AVAILABLE" or not found["created"]:
            return Done(found, noop=True)
        return Submitted(str(found["file_system_id"]), found)

    async def source_poll(ctx: StageContext[AddStorage]) -> Done | Pending:
        file_system_id = ctx.own_outputs.get("file_system_id") or ctx.external_id or ""
        found = await creation_progress(fsx, file_system_id)
        return found if isinstance(found, Pending) else Done(_fs_outputs(found, True))

    async def api(cmd: AddStorage | RemoveStorage) -> KubeApi:
        return kube(await _access(eks, cmd.target.eks_cluster, cmd.cluster))

    async def volume(ctx: StageContext[AddStorage]) -> Done | Submitted:
        wanted = volume_objects(ctx.cmd, ctx.outputs.get("source") or {})
        client = await api(ctx.cmd)
        found = [await client.get(*object_ref(obj)) for obj in wanted]
        for obj, existing in zip(wanted, found, strict=True):
            if existing is not None and (conflict := claim_conflict(obj, existing)):
                raise conflict
        claim = next((f for f in found if f and f["kind"] == "PersistentVolumeClaim"), None)
        stale = [f is not None and released(f, claim) for f in found]
        for obj, is_stale in zip(wanted, stale, strict=True):
            if is_stale:
                # Its claim was deleted (a Retain volume keeps the old claim's uid and binds no
                # other): the volume is made again; the bucket or file system is not touched.
                await client.delete(*object_ref(obj))
        found = [None if is_stale else f for f, is_stale in zip(found, stale, strict=True)]
        missing = [obj for obj, existing in zip(wanted, found, strict=True) if existing is None]
        for obj in missing:
            await client.apply(obj)
        result = {"volume": wanted[0]["metadata"]["name"], "claim": ctx.cmd.storage.claim}
        return Submitted(f"{ctx.cmd.cluster}/default/{ctx.cmd.storage.claim}", result)

    async def volume_poll(ctx: StageContext[AddStorage]) -> Done | Pending:
        client = await api(ctx.cmd)
        claim = await client.get("v1", "PersistentVolumeClaim", ctx.cmd.storage.claim, "default")
        if claim is None:
            raise PermanentError(
                "StorageObjectDeleted",
                f"claim {ctx.cmd.storage.claim} disappeared while binding",
                "retry the operation to recreate it",
            )
        phase = (claim.get("status") or {}).get("phase")
        if phase == "Lost":
            raise PermanentError(
                "ClaimLost",
                f"claim {ctx.cmd.storage.claim} lost its volume",
                "remove the claim and add it again",
            )
        if phase != "Bound":
            return Pending(f"waiting for {ctx.cmd.storage.claim} to bind ({phase or 'new'})")
        return Done(dict(ctx.own_outputs))

    return Workflow(
        kind=AddStorage.kind(),
        domain=AddStorage.domain,
        stages=(
            Stage("source", "Find or create the bucket or file system", source, source_poll),
            Stage(
                "volume",
                "Make the PersistentVolume and its claim",
                volume,
                volume_poll,
                needs=("source",),
            ),
        ),
        command=AddStorage,
    )


async def _access(eks: EksPort, eks_cluster: str, cluster: str) -> ClusterAccess:
    found = await eks.describe_cluster(eks_cluster)
    if found is None or not found.endpoint or not found.ca_data:
        raise PermanentError(
            "ResourceNotFoundException",
            f"EKS cluster {eks_cluster} of {cluster} is not reachable",
            f"check the cluster with GET /api/v1/clusters/{cluster}",
        )
    return ClusterAccess(found.name, found.endpoint, found.ca_data)


def remove_storage_workflow(
    buckets: ClaimBuckets, fsx: FsxPort, kube: KubeFactory, eks: EksPort
) -> Workflow[RemoveStorage]:
    async def volume(ctx: StageContext[RemoveStorage]) -> Done:
        cmd = ctx.cmd
        client = kube(await _access(eks, cmd.target.eks_cluster, cmd.cluster))
        removed = []
        refs: list[tuple[str, str, str, str | None]] = [
            ("v1", "PersistentVolumeClaim", cmd.claim.claim, "default")
        ]
        if cmd.claim.volume:
            refs.append(("v1", "PersistentVolume", cmd.claim.volume, None))
        for ref in refs:
            current = await client.get(*ref)
            if current is None or not is_managed(current, COMPONENT):
                continue
            if await client.delete(*ref):
                removed.append(f"{ref[1]}/{ref[2]}")
        return Done({"removed": removed}, noop=not removed)

    async def source(ctx: StageContext[RemoveStorage]) -> Done | Submitted:
        return await delete_source(ctx.cmd.cluster, ctx.cmd.claim, buckets, fsx)

    async def source_poll(ctx: StageContext[RemoveStorage]) -> Done | Pending:
        return await deleted_poll(ctx, fsx)

    return Workflow(
        kind=RemoveStorage.kind(),
        domain=RemoveStorage.domain,
        stages=(
            Stage("volume", "Remove the claim and its PersistentVolume", volume),
            Stage(
                "source",
                "Delete the bucket or file system the claim created",
                source,
                source_poll,
                needs=("volume",),
            ),
        ),
        command=RemoveStorage,
    )


async def delete_source(
    cluster: str, claim: StorageClaim, buckets: ClaimBuckets, fsx: FsxPort
) -> Done | Submitted:
    """Delete what `claim` created (tags checked first); a found bucket or file system stays."""
    if claim.source != "created":
        return Done({"kept": claim.bucket or claim.file_system_id}, noop=True)
    if claim.kind == "s3" and claim.bucket:
        if not await buckets.exists(claim.bucket):
            return Done(noop=True)
        if not made_for(await buckets.tags(claim.bucket), cluster, claim.claim):
            raise _not_ours(f"bucket {claim.bucket}")
        removed = await buckets.empty(claim.bucket)
        await buckets.delete(claim.bucket)
        return Done({"deleted": claim.bucket, "objects_removed": removed})
    if claim.file_system_id:
        found = await fsx.describe(claim.file_system_id)
        if found is None:
            return Done(noop=True)
        if not made_for(found.tags, cluster, claim.claim):
            raise _not_ours(f"FSx for Lustre {claim.file_system_id}")
        if found.lifecycle != "DELETING":
            await fsx.delete(claim.file_system_id)
        return Submitted(claim.file_system_id, {"file_system_id": claim.file_system_id})
    return Done(noop=True)


async def deleted_poll(ctx: StageContext[Any], fsx: FsxPort) -> Done | Pending:
    file_system_id = ctx.own_outputs.get("file_system_id") or ctx.external_id or ""
    found = await fsx.describe(file_system_id)
    if found is None:
        return Done({"deleted": file_system_id})
    return Pending(f"FSx for Lustre {found.lifecycle}")


def _not_ours(what: str) -> PermanentError:
    return PermanentError(
        "StorageNotOurs",
        f"{what} no longer carries Hyperpilot's tags for this claim",
        "delete it yourself if it is no longer used; Hyperpilot leaves it alone",
    )


# ---- plans ---------------------------------------------------------------------------------


def _object(obj: KubeObject) -> PlannedObject:
    api_version, kind, name, namespace = object_ref(obj)
    return PlannedObject(
        action="apply",
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=namespace,
        body=obj,
    )


async def add_plan(cmd: AddStorage, buckets: ClaimBuckets, fsx: FsxPort) -> Plan:
    """What adding the claim would do, from actual state (refusing what cannot be attached)."""
    storage = cmd.storage
    target = f"{cmd.cluster}/storage/{storage.claim}"
    if storage.claim in cmd.existing:
        raise PermanentError(
            "ClaimExists",
            f"storage.claim: cluster {cmd.cluster} already has a claim {storage.claim}",
            "choose another claim name, or remove the existing claim first",
        )
    found, exists = await find_source(cmd, buckets, fsx)
    calls: list[PlannedCall] = []
    notes: list[str] = []
    if isinstance(storage, S3Storage):
        if not exists:
            calls += [
                PlannedCall(
                    service="s3", operation="CreateBucket", params={"Bucket": storage.bucket}
                ),
                PlannedCall(
                    service="s3", operation="PutBucketTagging", params={"Bucket": storage.bucket}
                ),
            ]
            notes.append(f"bucket {storage.bucket} is created, and deleted with the claim")
        else:
            notes.append(
                f"bucket {storage.bucket} exists and is attached; Hyperpilot never deletes it"
            )
        objects = volume_objects(cmd, found)
    else:
        if not exists:
            request = file_system_request(cmd, storage, "<operation id>")
            calls.append(PlannedCall(service="fsx", operation="CreateFileSystem", params=request))
            notes.append("the file system is created, and deleted with the claim")
            placeholder = {
                "file_system_id": "fs-<new>",
                "dns_name": "<DNSName>",
                "mount_name": "<MountName>",
                "capacity_gib": storage.storage_capacity_gib,
            }
            objects = volume_objects(cmd, placeholder)
        else:
            notes.append(
                f"FSx for Lustre {found['file_system_id']} (MountName {found['mount_name']},"
                f" DNSName {found['dns_name']}) is attached"
                + ("; Hyperpilot never deletes it" if not found["created"] else "")
            )
            objects = volume_objects(cmd, found)
    return Plan(
        command=AddStorage.__name__,
        target=target,
        noop=False,
        diff={
            f"storage.{storage.claim}": FieldChange(
                actual=None, requested=storage.model_dump(mode="json")
            )
        },
        calls=calls,
        objects=[_object(o) for o in objects],
        notes=notes,
    )


def remove_plan(cmd: RemoveStorage) -> Plan:
    claim = cmd.claim
    objects = [
        PlannedObject(
            action="delete",
            api_version="v1",
            kind="PersistentVolumeClaim",
            name=claim.claim,
            namespace="default",
        )
    ]
    if claim.volume:
        objects.append(
            PlannedObject(
                action="delete", api_version="v1", kind="PersistentVolume", name=claim.volume
            )
        )
    calls: list[PlannedCall] = []
    notes: list[str] = []
    what = claim.bucket if claim.kind == "s3" else claim.file_system_id
    if claim.source == "created":
        if claim.kind == "s3":
            calls += [
                PlannedCall(
                    service="s3", operation="DeleteObjects", params={"Bucket": claim.bucket}
                ),
                PlannedCall(
                    service="s3", operation="DeleteBucket", params={"Bucket": claim.bucket}
                ),
            ]
        else:
            calls.append(
                PlannedCall(
                    service="fsx",
                    operation="DeleteFileSystem",
                    params={"FileSystemId": claim.file_system_id},
                )
            )
        notes.append(f"{what} was created for this claim and is deleted with it")
    else:
        notes.append(f"{what} existed before it was attached and stays")
    return Plan(
        command=RemoveStorage.__name__,
        target=f"{cmd.cluster}/storage/{claim.claim}",
        noop=False,
        diff={
            f"storage.{claim.claim}": FieldChange(
                actual=claim.model_dump(mode="json"), requested=None
            )
        },
        calls=calls,
        objects=objects,
        notes=notes,
    )


# ---- with the cluster ----------------------------------------------------------------------

CLAIMS_RESOURCE = "storage_claims"  # DeleteCluster.resources key: the added claims at accept


def delete_claims_stage(
    buckets: ClaimBuckets, fsx: FsxPort, kube: KubeFactory, eks: EksPort
) -> Stage:
    """On cluster delete: remove the added claims' volumes, delete what the claims created, and
    leave every bucket and file system that existed before it was attached."""

    def claims(ctx: StageContext[Any]) -> list[StorageClaim]:
        recorded = ctx.cmd.resources.get(CLAIMS_RESOURCE) or {}
        return [StorageClaim.model_validate(c) for c in recorded.get("claims") or []]

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        found = claims(ctx)
        if not found:
            return Done({"deleted": [], "kept": []}, noop=True)
        cluster = ctx.cmd.name
        eks_name = str((ctx.cmd.resources.get(CLAIMS_RESOURCE) or {}).get("eks_cluster") or "")
        described = await eks.describe_cluster(eks_name) if eks_name else None
        if described is not None and described.endpoint and described.ca_data:
            client = kube(ClusterAccess(described.name, described.endpoint, described.ca_data))
            for claim in found:
                for ref in (
                    ("v1", "PersistentVolumeClaim", claim.claim, "default"),
                    ("v1", "PersistentVolume", claim.volume or "", None),
                ):
                    current = await client.get(*ref) if ref[2] else None
                    if current is not None and is_managed(current, COMPONENT):
                        await client.delete(*ref)
        deleted: list[str] = []
        waiting: list[str] = []
        kept = [str(c.bucket or c.file_system_id) for c in found if c.source != "created"]
        for claim in found:
            answer = await delete_source(cluster, claim, buckets, fsx)
            if isinstance(answer, Submitted):
                waiting.append(answer.external_id)
            elif answer.outputs.get("deleted"):
                deleted.append(str(answer.outputs["deleted"]))
        result = {"deleted": deleted, "kept": kept, "file_systems": waiting}
        if waiting:
            return Submitted(",".join(waiting), result)
        return Done(result, noop=not deleted)

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        result = dict(ctx.own_outputs)
        left = [fs for fs in result.get("file_systems") or [] if await fsx.describe(fs)]
        if left:
            return Pending(f"deleting FSx for Lustre {', '.join(left)}")
        result["deleted"] = [*result.get("deleted", []), *result.get("file_systems", [])]
        return Done(result)

    return Stage(
        "delete_claims",
        "Remove the added storage claims (what they found stays)",
        run,
        poll,
    )


def released(obj: KubeObject, claim: KubeObject | None) -> bool:
    """A PersistentVolume of Hyperpilot's whose claim is gone: Released, or bound by uid to a
    claim other than `claim` (the one there now, if any)."""
    if obj.get("kind") != "PersistentVolume" or not is_managed(obj, COMPONENT):
        return False
    if (obj.get("status") or {}).get("phase") == "Released":
        return True
    bound_uid = ((obj.get("spec") or {}).get("claimRef") or {}).get("uid")
    current_uid = ((claim or {}).get("metadata") or {}).get("uid")
    return bool(bound_uid) and bound_uid != current_uid
