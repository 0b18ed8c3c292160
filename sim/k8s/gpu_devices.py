"""GPU devices of simulated nodes: whole GPUs, MIG partitions and HAMi virtual GPUs.

MIG (SageMaker HyperPod, "Using GPU partitions in Amazon SageMaker HyperPod" and its "Node
Lifecycle and Labels" page): a node labelled `nvidia.com/mig.config: all-<profile>` on a type
that supports MIG is partitioned by the GPU operator's MIG manager, which reports
`nvidia.com/mig.config.state` (success, or failed for a profile the GPUs do not have); the NVIDIA
device plugin in its mixed strategy then advertises `nvidia.com/mig-<profile>` (partitions per
GPU x GPUs) and no whole `nvidia.com/gpu`. Profiles per type: the HyperPod CLI's
INSTANCE_TYPE_MIG_PROFILES; partitions per GPU: the NVIDIA MIG User Guide's profile table.

HAMi (Project-HAMi/HAMi docs: "Enable HAMi on NVIDIA GPUs", "Specify device memory/core
usage"): once its device plugin DaemonSet runs, a node labelled `gpu=on` advertises
`nvidia.com/gpu` as GPUs x deviceSplitCount (10) virtual GPUs and registers each device (id,
split count, memory MiB, cores 100) in the annotation `hami.io/node-nvidia-register`. A pod's
`nvidia.com/gpu: N` is N virtual GPUs on N distinct devices of one node, each with
`nvidia.com/gpumem` MiB (the whole device when unset) and `nvidia.com/gpucores` percent (0 when
unset) free on that device; the scheduler records its choice in the pod annotation
`hami.io/vgpu-devices-allocated`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

Obj = dict[str, Any]

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
GPU = "nvidia.com/gpu"
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
HAMI_REGISTER = "hami.io/node-nvidia-register"
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
HAMI_PLUGIN = ("kube-system", "hami-device-plugin")  # the chart's device plugin DaemonSet
HAMI_SPLIT = 10  # HAMi's default devicePlugin.deviceSplitCount

_A100_40 = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
_80GB = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
_H200 = ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")
MIG_PROFILES = {
    "p4d.24xlarge": _A100_40,
    "p4de.24xlarge": _80GB,
    "p5.48xlarge": _80GB,
    "p5e.48xlarge": _H200,
    "p5en.48xlarge": _H200,
}
_PER_GPU = (7, 4, 3, 2, 1, 1)  # in the order of the profiles above

# device memory one GPU reports (nvidia-smi's MiB, rounded): A100 40/80 GB, H100, H200, A10G,
# L4, L40S, B200
GPU_MEMORY_MIB = {
    "p4d": 40960,
    "p4de": 81920,
    "p5": 81920,
    "p5e": 143360,
    "p5en": 143360,
    "g5": 23028,
    "g6": 23034,
    "g6e": 46068,
    "p6-b200": 183296,
}
_MODEL = {
    "p4d": "NVIDIA-A100-SXM4-40GB",
    "p4de": "NVIDIA-A100-SXM4-80GB",
    "p5": "NVIDIA-H100-80GB-HBM3",
    "p5e": "NVIDIA-H200",
    "p5en": "NVIDIA-H200",
    "g5": "NVIDIA-A10G",
    "g6": "NVIDIA-L4",
    "g6e": "NVIDIA-L40S",
    "p6-b200": "NVIDIA-B200",
}


def partitions_per_gpu(instance_type: str, profile: str) -> int:
    """How many partitions of `profile` (1g.10gb) one GPU of the type holds (0: not its profile)."""
    profiles = MIG_PROFILES.get(instance_type.removeprefix("ml."), ())
    return _PER_GPU[profiles.index(profile)] if profile in profiles else 0


def _family(instance_type: str) -> str:
    return instance_type.removeprefix("ml.").split(".", 1)[0]


def gpu_state(
    instance_type: str, gpus: int, labels: dict[str, str], hami: bool, node_name: str
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """A node's GPU resources, the labels the GPU operator adds and HAMi's annotation: what
    its device plugins advertise given its labels (MIG config) and whether HAMi runs."""
    if not gpus:
        return {}, {}, {}
    base = instance_type.removeprefix("ml.")
    config = labels.get(MIG_CONFIG)
    if config is not None:
        if config == "all-disabled":
            return {GPU: str(gpus)}, {MIG_STATE: "success"}, {}
        profile = config.removeprefix("all-")
        profiles = MIG_PROFILES.get(base, ())
        if not config.startswith("all-") or profile not in profiles:
            # the MIG manager cannot apply it: the GPUs stay whole, the state says so
            return {GPU: str(gpus)}, {MIG_STATE: "failed"}, {}
        count = _PER_GPU[profiles.index(profile)] * gpus
        return {GPU: "0", f"nvidia.com/mig-{profile}": str(count)}, {MIG_STATE: "success"}, {}
    if hami and labels.get("gpu") == "on":
        family = _family(instance_type)
        memory = GPU_MEMORY_MIB.get(family, 16384)
        devices = [
            {
                "id": f"GPU-{node_name}-{i}",
                "count": HAMI_SPLIT,
                "devmem": memory,
                "devcore": 100,
                "type": _MODEL.get(family, "NVIDIA"),
                "health": True,
            }
            for i in range(gpus)
        ]
        return {GPU: str(gpus * HAMI_SPLIT)}, {}, {HAMI_REGISTER: json.dumps(devices)}
    return {GPU: str(gpus)}, {}, {}


def devices(node: Obj) -> list[Obj] | None:
    """The devices HAMi registered on a node (None: not a HAMi node)."""
    raw = (node["metadata"].get("annotations") or {}).get(HAMI_REGISTER)
    if not raw:
        return None
    found: list[Obj] = json.loads(raw)
    return found


def allocation(pod: Obj) -> list[Obj]:
    raw = (pod["metadata"].get("annotations") or {}).get(HAMI_ALLOCATED)
    return list(json.loads(raw)) if raw else []


def charge(counter: defaultdict[str, float], allocated: list[Obj]) -> None:
    """Count a pod's virtual GPUs against their devices in a node's usage counter."""
    for share in allocated:
        uuid = share["id"]
        counter[f"hami.io/{uuid}/count"] += 1
        counter[f"hami.io/{uuid}/mem"] += share["mem"]
        counter[f"hami.io/{uuid}/cores"] += share["cores"]


def hami_place(
    node: Obj, requests: dict[str, float], load: defaultdict[str, float]
) -> tuple[str | None, list[Obj]]:
    """HAMi's device fit: the devices a pod's virtual GPUs go to on `node`, or why none fit
    (binpack within the node: the most used device that still fits first)."""
    registered = devices(node)
    assert registered is not None
    want = int(requests.get(GPU, 0))
    if want <= 0:
        return None, []
    chosen: list[Obj] = []
    candidates = []
    for device in registered:
        uuid = device["id"]
        mem = requests.get(HAMI_MEMORY) or device["devmem"]
        cores = requests.get(HAMI_CORES, 0)
        free_mem = device["devmem"] - load[f"hami.io/{uuid}/mem"]
        free_cores = device["devcore"] - load[f"hami.io/{uuid}/cores"]
        free_slots = device["count"] - load[f"hami.io/{uuid}/count"]
        if not device.get("health", True) or free_slots < 1:
            continue
        # a device already given 100% of its cores is exclusive (HAMi: gpucores 100)
        if load[f"hami.io/{uuid}/cores"] >= 100:
            continue
        if free_mem + 1e-9 < mem or free_cores + 1e-9 < cores:
            continue
        candidates.append((free_mem, uuid, int(mem), int(cores)))
    if len(candidates) < want:
        if requests.get(HAMI_MEMORY) or requests.get(HAMI_CORES):
            return "Insufficient nvidia.com/gpumem or nvidia.com/gpucores on distinct devices", []
        return f"Insufficient {GPU}", []
    candidates.sort()
    for _, uuid, mem, cores in candidates[:want]:
        chosen.append({"id": uuid, "mem": mem, "cores": cores})
    return None, chosen
