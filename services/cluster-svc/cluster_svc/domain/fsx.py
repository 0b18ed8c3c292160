"""FSx for Lustre next to the compute nodes: create and delete stages.

Only when `storage.fsx_capacity_gib` is set. The file system lives in the compute subnet (the
nodes' zone: Lustre traffic stays in one zone) behind the cluster's security group, whose
self-referencing rules already admit Lustre's ports. Its PersistentVolume and claim are made
by the dependencies stages from this stage's outputs: `file_system_id`, `dns_name`,
`mount_name`, `capacity_gib`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from cluster_svc.domain.control_plane import elapsed_seconds, is_ours, recorded, resource_tags
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

DeploymentType = Literal["SCRATCH_2", "PERSISTENT_2"]
LUSTRE_VERSION = "2.15"
DEFAULT_DEPLOYMENT: DeploymentType = "PERSISTENT_2"
DEFAULT_THROUGHPUT_PER_TIB = 250  # MB/s per TiB


@dataclass(frozen=True)
class FileSystem:
    """What the stages read of a file system (DescribeFileSystems)."""

    file_system_id: str
    lifecycle: str  # CREATING | AVAILABLE | FAILED | DELETING | UPDATING | MISCONFIGURED
    tags: dict[str, str]
    dns_name: str | None = None
    mount_name: str | None = None
    capacity_gib: int | None = None
    failure: str | None = None
    created_at: datetime | None = None
    deployment_type: str | None = None  # LustreConfiguration.DeploymentType, e.g. PERSISTENT_2
    throughput_per_tib: int | None = None  # PerUnitStorageThroughput, MB/s per TiB (PERSISTENT)


class FsxPort(Protocol):
    async def list_file_systems(self) -> list[FileSystem]: ...
    async def describe(self, file_system_id: str) -> FileSystem | None: ...
    async def create(self, request: dict[str, Any]) -> FileSystem: ...
    async def delete(self, file_system_id: str) -> None: ...


def file_system_request(
    cmd: CreateCluster,
    *,
    subnet_id: str,
    security_group_id: str,
    token: str,
    deployment_type: DeploymentType,
    throughput_per_tib: int,
) -> dict[str, Any]:
    """FSx CreateFileSystem parameters for a Lustre file system of the requested size."""
    spec = cmd.spec
    lustre: dict[str, Any] = {"DeploymentType": deployment_type, "DataCompressionType": "LZ4"}
    if deployment_type == "PERSISTENT_2":
        lustre["PerUnitStorageThroughput"] = throughput_per_tib
    tags = {**resource_tags(spec), "Name": f"{spec.name}-lustre"}
    return {
        "ClientRequestToken": token,
        "FileSystemType": "LUSTRE",
        "FileSystemTypeVersion": LUSTRE_VERSION,
        "StorageCapacity": spec.storage.fsx_capacity_gib,
        "StorageType": "SSD",
        "SubnetIds": [subnet_id],
        "SecurityGroupIds": [security_group_id],
        "LustreConfiguration": lustre,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def _outputs(fs: FileSystem) -> dict[str, Any]:
    return {
        "file_system_id": fs.file_system_id,
        "dns_name": fs.dns_name,
        "mount_name": fs.mount_name,
        "capacity_gib": fs.capacity_gib,
        "deployment_type": fs.deployment_type,
        "throughput_per_tib": fs.throughput_per_tib,
        "created": True,
    }


def _failed(fs: FileSystem) -> PermanentError:
    return PermanentError(
        "FileSystemFailed",
        f"FSx for Lustre {fs.file_system_id} is {fs.lifecycle}"
        + (f": {fs.failure}" if fs.failure else ""),
        "check the compute subnet's free addresses and that the security group admits TCP 988 "
        "and 1018-1023 from itself, then retry the operation: the failed file system is deleted",
    )


async def creation_progress(fsx: FsxPort, file_system_id: str) -> FileSystem | Pending:
    """A file system being created: itself once AVAILABLE, else its progress; gone or failed
    is a permanent error."""
    found = await fsx.describe(file_system_id)
    if found is None:
        raise PermanentError(
            "FileSystemGone",
            f"FSx for Lustre {file_system_id} disappeared while it was being created",
            "retry the operation to create it again",
        )
    if found.lifecycle in ("FAILED", "MISCONFIGURED"):
        raise _failed(found)
    if found.lifecycle == "AVAILABLE":
        return found
    return Pending(f"FSx for Lustre {found.lifecycle} ({elapsed_seconds(found.created_at)} s)")


def create_stages(
    fsx: FsxPort,
    *,
    deployment_type: DeploymentType = DEFAULT_DEPLOYMENT,
    throughput_per_tib: int = DEFAULT_THROUGHPUT_PER_TIB,
) -> list[Stage]:
    async def file_system(ctx: StageContext[CreateCluster]) -> Done | Submitted:
        cmd = ctx.cmd
        if cmd.spec.storage.fsx_capacity_gib is None:
            return Done(noop=True)
        ours = [
            fs
            for fs in await fsx.list_file_systems()
            if is_ours(fs.tags, cmd.spec.name) and fs.lifecycle != "DELETING"
        ]
        if not ours:
            request = file_system_request(
                cmd,
                subnet_id=ctx.output("compute_subnet", "subnet_id"),
                security_group_id=ctx.output("security_group", "security_group_id"),
                token=str(ctx.operation_id),
                deployment_type=deployment_type,
                throughput_per_tib=throughput_per_tib,
            )
            made = await fsx.create(request)
            return Submitted(made.file_system_id, _outputs(made))
        found = ours[0]
        if found.lifecycle in ("FAILED", "MISCONFIGURED"):
            await fsx.delete(found.file_system_id)
            error = _failed(found)
            raise PermanentError(
                error.code,
                error.message,
                "the failed file system is being deleted: retry the operation in a few minutes",
            )
        if found.lifecycle == "AVAILABLE":
            return Done(_outputs(found), noop=True)
        return Submitted(found.file_system_id, _outputs(found))

    async def file_system_poll(ctx: StageContext[Any]) -> Done | Pending:
        file_system_id = ctx.own_outputs.get("file_system_id") or ctx.external_id or ""
        found = await creation_progress(fsx, file_system_id)
        return found if isinstance(found, Pending) else Done(_outputs(found))

    return [
        Stage(
            "fsx",
            "Create the FSx for Lustre file system",
            file_system,
            file_system_poll,
            needs=("security_group", "compute_subnet"),
        )
    ]


def delete_stages(fsx: FsxPort) -> list[Stage]:
    async def delete_fsx(ctx: StageContext[DeleteCluster]) -> Done | Submitted:
        made = recorded(ctx, "fsx")
        file_system_id = made.get("file_system_id")
        if not made.get("created") or not file_system_id:
            return Done(noop=True)
        found = await fsx.describe(file_system_id)
        if found is None:
            return Done(noop=True)
        if not is_ours(found.tags, ctx.cmd.name):
            raise PermanentError(
                "FileSystemNotOurs",
                f"FSx for Lustre {file_system_id} no longer carries Hyperpilot's tags for this cluster",
                "delete it yourself if it is no longer used; Hyperpilot leaves it alone",
            )
        if found.lifecycle != "DELETING":
            await fsx.delete(file_system_id)
        return Submitted(file_system_id, {"file_system_id": file_system_id})

    async def delete_fsx_poll(ctx: StageContext[Any]) -> Done | Pending:
        file_system_id = ctx.own_outputs.get("file_system_id") or ctx.external_id or ""
        found = await fsx.describe(file_system_id)
        if found is None:
            return Done({"deleted": file_system_id})
        return Pending(f"FSx for Lustre {found.lifecycle}")

    return [
        Stage(
            "delete_fsx",
            "Delete the FSx for Lustre file system",
            delete_fsx,
            delete_fsx_poll,
            needs=("delete_hyperpod",),
        )
    ]
