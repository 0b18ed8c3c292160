"""Fractional GPUs: MIG partition profiles and HAMi shares, as the contracts name them.

MIG, as SageMaker HyperPod does it ("Using GPU partitions in Amazon SageMaker HyperPod",
docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-gpu-partitioning.html): an
instance group carries the label `nvidia.com/mig.config: all-<profile>` in its
KubernetesConfig; the GPU operator's MIG manager partitions every GPU of its nodes, and the
NVIDIA device plugin (mixed strategy) advertises `nvidia.com/mig-<profile>` per node. Pods
request `nvidia.com/mig-<profile>: N`. Only the instance types that page lists support it (A100:
ml.p4d/p4de, H100: ml.p5, H200: ml.p5e/p5en); the profiles of each are the HyperPod CLI's
(`INSTANCE_TYPE_MIG_PROFILES` in sagemaker-hyperpod-cli src/sagemaker/hyperpod/training/
constants.py), and a profile's partitions per GPU are the NVIDIA MIG User Guide's
("Supported MIG Profiles": 1g.<small> x7, 1g.<double> x4, 2g x3, 3g x2, 4g x1, 7g x1).

HAMi (Project-HAMi/HAMi, "Specify device memory usage" / "Specify device core usage"): a pod
asks for `nvidia.com/gpu: N` virtual GPUs, each with `nvidia.com/gpumem` MiB of device memory
and `nvidia.com/gpucores` percent of one GPU's cores; HAMi's scheduler places each virtual GPU
on a distinct physical GPU of one node with that much memory and that many cores free.
"""

from __future__ import annotations

import json
from typing import Any

from shared.validation import RuleViolation

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
MIG_PROFILE_PATTERN = r"^mig-[1-7]g\.[0-9]{1,3}gb$"
MIG_DISABLED = "all-disabled"

_A100_40 = ("mig-1g.5gb", "mig-1g.10gb", "mig-2g.10gb", "mig-3g.20gb", "mig-4g.20gb", "mig-7g.40gb")
_80GB = ("mig-1g.10gb", "mig-1g.20gb", "mig-2g.20gb", "mig-3g.40gb", "mig-4g.40gb", "mig-7g.80gb")
_H200 = ("mig-1g.18gb", "mig-1g.35gb", "mig-2g.35gb", "mig-3g.71gb", "mig-4g.71gb", "mig-7g.141gb")

# instance type -> the MIG profiles its GPUs can be partitioned into (smallest first)
MIG_PROFILES: dict[str, tuple[str, ...]] = {
    "ml.p4d.24xlarge": _A100_40,
    "ml.p4de.24xlarge": _80GB,
    "ml.p5.48xlarge": _80GB,
    "ml.p5e.48xlarge": _H200,
    "ml.p5en.48xlarge": _H200,
}

# HAMi's resource names (its chart's defaults: resourceName, resourceMem, resourceCores)
HAMI_GPU = "nvidia.com/gpu"
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
# HAMi's device plugin runs on nodes labelled gpu=on (its install guide)
HAMI_NODE_LABEL = "gpu"
HAMI_NODE_VALUE = "on"
HAMI_SCHEDULER = "hami-scheduler"


def mig_resource(profile: str) -> str:
    """The extended resource the device plugin advertises for a profile: nvidia.com/mig-1g.10gb."""
    return f"nvidia.com/{profile}"


def mig_config(profile: str | None) -> str:
    """The value of the nvidia.com/mig.config label for a profile (all-disabled for none)."""
    return f"all-{profile.removeprefix('mig-')}" if profile else MIG_DISABLED


def profile_of_config(config: str) -> str | None:
    """The profile an `all-<profile>` MIG config partitions into (None for all-disabled)."""
    if config == MIG_DISABLED:
        return None
    return "mig-" + config.removeprefix("all-")


# partitions per GPU of the profiles in MIG_PROFILES' order (NVIDIA MIG User Guide: the small
# 1g x7, the double-memory 1g x4, 2g x3, 3g x2, 4g x1, 7g x1)
_PER_GPU = (7, 4, 3, 2, 1, 1)


def partitions_per_gpu(instance_type: str, profile: str) -> int:
    """How many partitions of `profile` one GPU of `instance_type` holds (0: not a profile of it)."""
    profiles = MIG_PROFILES.get(instance_type, ())
    return _PER_GPU[profiles.index(profile)] if profile in profiles else 0


def check_mig_profile(instance_type: str, profile: str, where: str) -> None:
    """Refuse a profile the instance type's GPUs cannot be partitioned into."""
    profiles = MIG_PROFILES.get(instance_type)
    if profiles is None:
        supported = ", ".join(MIG_PROFILES)
        raise RuleViolation(
            f"{where}: {instance_type} does not support MIG partitions (HyperPod supports GPU "
            f"partitioning on {supported})",
            "drop the MIG profile, or use one of those instance types",
        )
    if profile not in profiles:
        raise RuleViolation(
            f"{where}: {profile} is not a MIG profile of {instance_type}'s GPUs",
            f"use one of {', '.join(profiles)}",
        )


MAX_GPU_MEMORY_MIB = 200_000  # more than any one GPU HyperPod offers (B200: 180 GB)


def check_share(
    gpus: int,
    mig_profile: str | None,
    gpu_memory_mib: int | None,
    gpu_cores: int | None,
    prefix: str,
) -> None:
    """The rules of one pod's GPU request: whole GPUs, MIG partitions (`gpus` counts partitions
    of `mig_profile`) or HAMi shares (`gpus` virtual GPUs, each with the memory and cores given)."""
    shares = [f for f, v in (("gpu_memory_mib", gpu_memory_mib), ("gpu_cores", gpu_cores)) if v]
    if mig_profile is not None and shares:
        raise RuleViolation(
            f"{prefix}mig_profile and {prefix}{shares[0]} ask for two kinds of fractional GPU",
            "use a MIG partition (mig_profile) or a HAMi share (gpu_memory_mib, gpu_cores), not both",
        )
    if (mig_profile is not None or shares) and gpus < 1:
        what = "MIG partitions" if mig_profile else "HAMi virtual GPUs"
        raise RuleViolation(
            f"{prefix}gpus is {gpus}, but it counts the {what} of each pod",
            f"set {prefix}gpus to at least 1",
        )


def accelerator_amounts(
    gpus: int, mig_profile: str | None, gpu_memory_mib: int | None, gpu_cores: int | None
) -> dict[str, str]:
    """The extended resources a pod's container requests (and limits: they cannot overcommit)."""
    if gpus < 1:
        return {}
    if mig_profile is not None:
        return {mig_resource(mig_profile): str(gpus)}
    amounts = {HAMI_GPU: str(gpus)}
    if gpu_memory_mib:
        amounts[HAMI_MEMORY] = str(gpu_memory_mib)
    if gpu_cores:
        amounts[HAMI_CORES] = str(gpu_cores)
    return amounts


HAMI_REGISTER = "hami.io/node-nvidia-register"


def _count(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def node_fractions(nodes: list[dict[str, Any]]) -> tuple[dict[str, int], int, int]:
    """What a set of nodes (one group's, or one instance type's) offers each pod at most: the
    MIG partitions by resource (the fewest over the nodes), HAMi's devices per node and the
    smallest device's memory in MiB (0, 0 when a node has no HAMi device)."""
    partitions: dict[str, int] | None = None
    devices: list[int] = []
    memory: list[int] = []
    for node in nodes:
        alloc = (node.get("status") or {}).get("allocatable") or {}
        found = {
            k: _count(v) for k, v in alloc.items() if k.startswith("nvidia.com/mig-") and _count(v)
        }
        partitions = (
            found
            if partitions is None
            else {k: min(v, found[k]) for k, v in partitions.items() if k in found}
        )
        raw = ((node.get("metadata") or {}).get("annotations") or {}).get(HAMI_REGISTER)
        try:
            registered = json.loads(raw) if raw else []
        except ValueError:
            registered = []
        devices.append(len(registered))
        memory.extend(int(d.get("devmem", 0)) for d in registered if isinstance(d, dict))
    hami = min(devices) if devices else 0
    return partitions or {}, hami, (min(memory) if hami and memory else 0)
