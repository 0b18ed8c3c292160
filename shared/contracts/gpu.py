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
