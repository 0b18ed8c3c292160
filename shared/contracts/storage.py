"""Storage of a cluster as a list of claims: S3 buckets through the Mountpoint for S3 CSI driver
and FSx for Lustre file systems through the FSx CSI driver, each a statically provisioned
PersistentVolume and a claim pre-bound to it in `default`, named by the user.

The cluster's own bucket stays the claim `s3-claim` (made by the cluster's create); every other
claim is added and removed here. A bucket or file system that existed before it was attached is
never deleted by Hyperpilot; one Hyperpilot created for a claim is deleted with the claim (or
with the cluster).

Workloads (jobs, Ray jobs, model downloads, endpoints) name the claims they mount and where,
in `volumes` (`VolumeMount`): the claim must exist on the cluster, the path is absolute, and
neither a claim nor a path repeats.

The FSx for Lustre rules are the CreateFileSystem API reference's:
- DeploymentType SCRATCH_1 | SCRATCH_2 | PERSISTENT_1 | PERSISTENT_2 (SSD storage);
- PerUnitStorageThroughput (MB/s/TiB), "required with PERSISTENT_1 and PERSISTENT_2": PERSISTENT_1
  SSD 50, 100, 200; PERSISTENT_2 SSD 125, 250, 500, 1000; not accepted for SCRATCH_*;
- StorageCapacity (GiB): SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 on SSD take 1200, 2400 and
  increments of 2400; SCRATCH_1 takes 1200, 2400 and increments of 3600.
(https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html,
API_CreateFileSystemLustreConfiguration.html)
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.boundary import dns_label
from shared.contracts.commands import Command
from shared.contracts.events import Event
from shared.contracts.spec import Spec
from shared.naming import bucket_name_problem
from shared.validation import RuleViolation

DEFAULT_CLAIM = "s3-claim"  # the cluster's own bucket, made by its create
DEFAULT_MOUNT = "/s3"  # where every workload pod mounts the default claim
STORAGE_NAMESPACE = "default"
MAX_CLAIMS = 20
MAX_VOLUMES = 10
FILE_SYSTEM_ID_PATTERN = r"^fs-[0-9a-f]{8,21}$"

DeploymentType = Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
THROUGHPUTS: dict[str, tuple[int, ...]] = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
DEFAULT_THROUGHPUT = {"PERSISTENT_1": 200, "PERSISTENT_2": 250}
# Paths a volume may not cover: the container's own system directories.
RESERVED_PATHS = ("/", "/bin", "/dev", "/etc", "/lib", "/proc", "/sbin", "/sys", "/usr", "/var")


def claim_name(value: str, field: str = "claim") -> str:
    """A claim's name: a DNS-1123 label (it also names the pod volume that mounts it)."""
    return dns_label(value, field)


def capacity_problem(deployment_type: str, capacity_gib: int) -> str | None:
    """Why FSx for Lustre cannot be `capacity_gib` GiB of `deployment_type`, or None."""
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    if capacity_gib in (1200, 2400) or (capacity_gib > 0 and capacity_gib % step == 0):
        return None
    return f"use 1200, 2400 or a multiple of {step} GiB for {deployment_type}"


ClaimName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        description="the PersistentVolumeClaim's name in namespace default (a DNS-1123 label)",
        examples=["datasets"],
    ),
]


class S3Storage(Spec):
    """An S3 bucket as a Mountpoint for S3 volume: an existing bucket, or a new one."""

    kind: Literal["s3"] = Field(description="s3: a bucket through Mountpoint for S3")
    claim: ClaimName
    bucket: str = Field(description="the bucket's name (3-63 lowercase letters, digits, '-')")
    create: bool = Field(
        False,
        description="true: create the bucket (deleted again with the claim); false: attach an"
        " existing bucket, which Hyperpilot never deletes",
    )

    _claim = field_validator("claim")(lambda v: claim_name(v))

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str) -> str:
        if problem := bucket_name_problem(bucket):
            raise RuleViolation(
                f"bucket name {problem}", "use 3-63 lowercase letters, digits and hyphens"
            )
        return bucket


class FsxStorage(Spec):
    """FSx for Lustre as a volume: an existing file system by id, or a new one."""

    kind: Literal["fsx"] = Field(description="fsx: an FSx for Lustre file system")
    claim: ClaimName
    file_system_id: str | None = Field(
        None,
        pattern=FILE_SYSTEM_ID_PATTERN,
        description="attach this existing file system (its MountName and DNSName are read"
        " from DescribeFileSystems); Hyperpilot never deletes it",
        examples=["fs-0123456789abcdef0"],
    )
    storage_capacity_gib: int | None = Field(
        None,
        ge=1200,
        le=2_400_000,
        description="a new file system of this size: 1200, 2400 or a multiple of 2400 GiB"
        " (3600 for SCRATCH_1)",
    )
    deployment_type: DeploymentType | None = Field(
        None, description="a new file system's deployment type; PERSISTENT_2 if omitted"
    )
    per_unit_storage_throughput: int | None = Field(
        None,
        description="a new PERSISTENT file system's MB/s per TiB: PERSISTENT_1 50, 100, 200;"
        " PERSISTENT_2 125, 250, 500, 1000 (default 200 and 250)",
    )

    _claim = field_validator("claim")(lambda v: claim_name(v))

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        new = (self.storage_capacity_gib, self.deployment_type, self.per_unit_storage_throughput)
        if self.file_system_id is not None:
            if any(v is not None for v in new):
                raise RuleViolation(
                    f"storage {self.claim}: file_system_id attaches an existing file system;"
                    " storage_capacity_gib, deployment_type and per_unit_storage_throughput"
                    " describe a new one",
                    "send file_system_id alone, or drop it to create a file system",
                )
            return self
        if self.storage_capacity_gib is None:
            raise RuleViolation(
                f"storage {self.claim}: an fsx storage needs file_system_id or"
                " storage_capacity_gib",
                "name an existing file system (fs-...), or the size of a new one, e.g. 1200",
            )
        kind = self.new_deployment_type()
        if problem := capacity_problem(kind, self.storage_capacity_gib):
            raise RuleViolation(
                f"storage_capacity_gib: FSx for Lustre cannot be {self.storage_capacity_gib} GiB",
                problem,
            )
        allowed = THROUGHPUTS.get(kind)
        throughput = self.per_unit_storage_throughput
        if allowed is None and throughput is not None:
            raise RuleViolation(
                f"per_unit_storage_throughput: {kind} file systems take none",
                "drop per_unit_storage_throughput, or use PERSISTENT_1 or PERSISTENT_2",
            )
        if allowed is not None and throughput is not None and throughput not in allowed:
            raise RuleViolation(
                f"per_unit_storage_throughput: {kind} cannot provide {throughput} MB/s/TiB",
                f"use one of {', '.join(str(t) for t in allowed)}",
            )
        return self

    def new_deployment_type(self) -> str:
        return self.deployment_type or "PERSISTENT_2"

    def new_throughput(self) -> int | None:
        kind = self.new_deployment_type()
        if kind not in THROUGHPUTS:
            return None
        return self.per_unit_storage_throughput or DEFAULT_THROUGHPUT[kind]


StorageAdd = Annotated[S3Storage | FsxStorage, Field(discriminator="kind")]


class VolumeMount(Spec):
    """A storage claim of the cluster mounted into a workload's pods."""

    claim: ClaimName
    mount_path: str = Field(
        min_length=2,
        max_length=255,
        description="an absolute path in the containers, e.g. /data (not /s3, where the"
        " default claim is)",
        examples=["/data"],
    )
    read_only: bool = Field(False, description="mount the volume read-only")

    _claim = field_validator("claim")(lambda v: claim_name(v, "volumes.claim"))

    @field_validator("mount_path")
    @classmethod
    def _path(cls, path: str) -> str:
        if not path.startswith("/"):
            raise RuleViolation(
                f"volumes.mount_path {path!r} is not absolute", "use a path like /data"
            )
        normal = posixpath.normpath(path)
        if normal != path.rstrip("/") or "//" in path:
            raise RuleViolation(
                f"volumes.mount_path {path!r} is not in normal form",
                f"write it as {normal}",
            )
        for reserved in RESERVED_PATHS:
            if normal == reserved or (reserved != "/" and normal.startswith(reserved + "/")):
                raise RuleViolation(
                    f"volumes.mount_path {path!r} covers the container's {reserved}",
                    "mount under a directory of your own, e.g. /data or /mnt/fsx",
                )
        return normal


def check_volumes(volumes: Sequence[VolumeMount], *, default_mounted: bool = True) -> None:
    """No claim or path twice, no path inside another, and (where every pod mounts the default
    claim at /s3: jobs and downloads) nothing over /s3 nor the default claim again."""
    claims = [v.claim for v in volumes]
    if repeated := sorted({c for c in claims if claims.count(c) > 1}):
        raise RuleViolation(
            f"volumes: claim {', '.join(repeated)} is mounted twice", "mount each claim once"
        )
    if default_mounted and DEFAULT_CLAIM in claims:
        raise RuleViolation(
            f"volumes: {DEFAULT_CLAIM} is already mounted at {DEFAULT_MOUNT} in every pod",
            f"drop {DEFAULT_CLAIM} from volumes",
        )
    paths = [DEFAULT_MOUNT] if default_mounted else []
    paths += [v.mount_path for v in volumes]
    for i, a in enumerate(paths):
        for b in paths[i + 1 :]:
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                raise RuleViolation(
                    f"volumes: mount paths {a} and {b} overlap"
                    + (
                        f" ({DEFAULT_MOUNT} holds {DEFAULT_CLAIM})"
                        if DEFAULT_MOUNT in (a, b)
                        else ""
                    ),
                    "give each volume its own directory, none inside another",
                )


Volumes = Annotated[
    list[VolumeMount],
    Field(
        max_length=MAX_VOLUMES,
        description="storage claims of the cluster to mount (GET"
        " /api/v1/clusters/{name}/storage lists them): claim and mount_path",
    ),
]


class StorageClaim(Spec):
    """One claim of a cluster as recorded: what it mounts and whether Hyperpilot made it."""

    claim: str
    kind: Literal["s3", "fsx"]
    source: Literal["default", "existing", "created"] = Field(
        description="default: the cluster's own bucket; existing: attached, never deleted by"
        " Hyperpilot; created: made for this claim, deleted with it"
    )
    status: str = "available"
    bucket: str | None = None
    file_system_id: str | None = None
    volume: str | None = None  # the PersistentVolume's name
    details: dict[str, Any] = Field(default_factory=dict)  # mount name, DNS name, size...


class StorageTarget(Spec):
    """Where a claim goes: resolved by the gateway from the cluster record."""

    eks_cluster: str
    subnet_id: str | None = None  # a new file system's subnet (the compute subnet)
    security_group_id: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class AddStorage(Command):
    domain = "cluster"
    verb = "add_storage"

    cluster: str
    region: str
    target: StorageTarget
    storage: StorageAdd
    existing: list[str] = Field(default_factory=list)  # the cluster's claims when accepted


class RemoveStorage(Command):
    domain = "cluster"
    verb = "remove_storage"

    cluster: str
    region: str
    target: StorageTarget
    claim: StorageClaim


class StorageAdded(Event):
    what = "storage_added"
    cluster: str
    claim: str
    kind: str
    source: str
    bucket: str | None = None
    file_system_id: str | None = None


class StorageRemoved(Event):
    what = "storage_removed"
    cluster: str
    claim: str
    deleted: list[str] = Field(default_factory=list)  # what Hyperpilot deleted with it
