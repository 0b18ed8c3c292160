"""Development spaces: JupyterLab or Code Editor on a cluster, through HyperPod's own mechanism
(the SageMaker Spaces add-on, whose jupyter-k8s operator serves `workspace.jupyter.org/v1alpha1`
Workspace objects, as `hyp create hyp-space` writes them).

A space belongs to the principal that created it (`workspace.jupyter.org/created-by`) and is
OwnerOnly: only its owner opens it (through the gateway) or changes it; an admin may stop or
delete anyone's. Its volumes are the cluster's storage claims, mounted read-write.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from shared.contracts.commands import Command
from shared.contracts.spec import Spec
from shared.validation import RuleViolation

SPACE_NAME_PATTERN = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"
CLAIM_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"
SPACE_NAMESPACE = "default"  # where the jobs and the cluster's claims are
APP_IMAGES = {
    "jupyterlab": "public.ecr.aws/sagemaker/sagemaker-distribution:3.2.0-cpu",
    "code-editor": "public.ecr.aws/sagemaker/sagemaker-distribution:3.2.0-cpu",
}
GPU_IMAGE = "public.ecr.aws/sagemaker/sagemaker-distribution:3.2.0-gpu"
SPACE_PORT = 8888
RESERVED_MOUNTS = ("/", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin")


class SpaceVolume(Spec):
    """A storage claim of the cluster, mounted in the space."""

    claim: str = Field(
        min_length=1,
        max_length=253,
        pattern=CLAIM_PATTERN,
        description="A storage claim of the cluster (the default bucket's is s3-claim)",
    )
    mount_path: str | None = Field(
        None, max_length=200, description="Absolute path in the space; default /mnt/<claim>"
    )

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        normal = posixpath.normpath(value)
        if not value.startswith("/") or normal != value.rstrip("/") or ".." in value.split("/"):
            raise RuleViolation(
                f"mount_path {value!r} is not a plain absolute path",
                "give an absolute path such as /data, without '..' or doubled slashes",
            )
        if normal in RESERVED_MOUNTS or any(
            normal.startswith(r + "/") for r in RESERVED_MOUNTS[1:]
        ):
            raise RuleViolation(
                f"mount_path {value!r} would hide a system directory",
                "mount under /mnt, /data or /home",
            )
        return normal

    def path(self) -> str:
        return self.mount_path or f"/mnt/{self.claim}"


class IdleShutdown(Spec):
    enabled: bool = Field(True, description="Stop the space when idle")
    timeout_minutes: int = Field(
        60, ge=5, le=1440, description="Minutes without a request before it stops"
    )


def _quantity(name: str, value: str | None) -> str | None:
    if value is not None and not re.match(QUANTITY_PATTERN, value):
        raise RuleViolation(
            f"{name} {value!r} is not a Kubernetes quantity",
            f"write {name} like " + ("'2' or '500m'" if name == "cpu" else "'8Gi' or '512Mi'"),
        )
    return value


class _Quantities(Spec):
    """cpu and memory are Kubernetes quantities."""

    cpu: str | None = None
    memory: str | None = None

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: str | None) -> str | None:
        return _quantity("cpu", value)

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        return _quantity("memory", value)


class SpaceSpec(_Quantities):
    """A new space: what it runs, on what resources, with which claims mounted."""

    name: str = Field(
        min_length=1, max_length=40, pattern=SPACE_NAME_PATTERN, description="the space's name"
    )
    display_name: str | None = Field(
        None, min_length=1, max_length=100, description="shown in the UI; default: name"
    )
    app_type: Literal["jupyterlab", "code-editor"] = Field(
        "jupyterlab", description="the IDE the space runs"
    )
    image: str | None = Field(
        None, min_length=1, max_length=500, description="Container image; default per app"
    )
    cpu: str | None = Field("2", max_length=20, description="CPU request, e.g. '2' or '500m'")
    memory: str | None = Field("8Gi", max_length=20, description="Memory, e.g. '8Gi'")
    gpu: int | None = Field(None, ge=0, le=8, description="Whole NVIDIA GPUs; default 0")
    volumes: list[SpaceVolume] = Field(
        default_factory=list, max_length=8, description="storage claims to mount"
    )
    idle_shutdown: IdleShutdown | None = Field(None, description="default: none set")
    template: str | None = Field(
        None,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="A WorkspaceTemplate: its defaults fill what is not sent, its bounds apply",
    )

    @model_validator(mode="before")
    @classmethod
    def _template_defaults(cls, data: Any) -> Any:
        """With a template, what is not sent is the template's (cpu and memory stay unset)."""
        if isinstance(data, dict) and data.get("template"):
            return {"cpu": None, "memory": None, **data}
        if isinstance(data, dict) and data.get("gpu") is None:
            return {**data, "gpu": 0}
        return data

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        check_volumes(self.volumes)
        return self


def check_volumes(volumes: list[SpaceVolume]) -> None:
    claims = [v.claim for v in volumes]
    if len(set(claims)) != len(claims):
        raise RuleViolation("volumes name a claim twice", "mount each claim once")
    paths = [v.path() for v in volumes]
    if len(set(paths)) != len(paths):
        raise RuleViolation("two volumes share a mount_path", "give each volume its own path")


class SpaceChange(_Quantities):
    """Only what changes; a running space restarts on the new settings."""

    image: str | None = Field(None, min_length=1, max_length=500, description="container image")
    cpu: str | None = Field(None, max_length=20, description="CPU request, e.g. '2' or '500m'")
    memory: str | None = Field(None, max_length=20, description="memory, e.g. '8Gi'")
    gpu: int | None = Field(None, ge=0, le=8, description="whole NVIDIA GPUs")
    volumes: list[SpaceVolume] | None = Field(
        None, max_length=8, description="the claims mounted (the whole list)"
    )
    idle_shutdown: IdleShutdown | None = Field(None, description="idle stop settings")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_dump(exclude_none=True):
            raise RuleViolation(
                "the change names nothing",
                "send at least one of image, cpu, memory, gpu, volumes, idle_shutdown",
            )
        if self.volumes is not None:
            check_volumes(self.volumes)
        return self

    def requested(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class CreateSpace(Command):
    domain = "workload"
    verb = "create_space"

    cluster: str
    owner: str  # the principal that creates it
    spec: SpaceSpec


class UpdateSpace(Command):
    domain = "workload"
    verb = "update_space"

    cluster: str
    name: str
    change: SpaceChange


class SetSpaceStatus(Command):
    """Start (Running) or stop (Stopped) a space."""

    domain = "workload"
    verb = "set_space_status"

    cluster: str
    name: str
    desired: Literal["Running", "Stopped"]


class DeleteSpace(Command):
    domain = "workload"
    verb = "delete_space"

    cluster: str
    name: str
