"""Fractional GPUs in the emulator: MIG partitions (HyperPod's nvidia.com/mig.config label, the
device plugin's nvidia.com/mig-<profile>) and HAMi virtual GPUs (nvidia.com/gpumem,
nvidia.com/gpucores), scheduled with whole-GPU pods, checked against each node's allocations."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from kubernetes import client

from sim.interfaces import SimNode
from sim.k8s import ApiServer
from tests.sim_k8s.conftest import eventually

MIG = "nvidia.com/mig.config"


def node(n: int, group: str, itype: str, labels: dict[str, str] | None = None) -> SimNode:
    return SimNode(
        f"i-0{n:016x}", group, itype, "Running", "us-east-1a", "hp-cluster", labels=labels or {}
    )


def name_of(n: int) -> str:
    return f"hyperpod-i-0{n:016x}"


def gpu_pod(name: str, group: str, limits: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"sagemaker.amazonaws.com/instance-group-name": group},
            "containers": [{"name": "main", "image": "pytorch:2", "resources": {"limits": limits}}],
        },
    }


def pending_reason(core: client.CoreV1Api, name: str) -> str:
    conds = core.read_namespaced_pod(name, "default").status.conditions or []
    return next(
        (c.message for c in conds if c.type == "PodScheduled" and c.reason == "Unschedulable"), ""
    )


def requested_by_node(core: client.CoreV1Api) -> dict[str, dict[str, int]]:
    """What the bound pods request on each node, summed from the pods themselves."""
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in core.list_namespaced_pod("default").items:
        if not p.spec.node_name or p.status.phase in ("Succeeded", "Failed"):
            continue
        for c in p.spec.containers:
            for key, value in ((c.resources and c.resources.limits) or {}).items():
                if key.startswith("nvidia.com/"):
                    used[p.spec.node_name][key] += int(value)
    return used


def test_mig_partitions_and_whole_gpus(cluster: ApiServer, core: client.CoreV1Api) -> None:
    cluster.sync_nodes(
        [
            node(1, "mig", "ml.p5.48xlarge", {MIG: "all-1g.10gb"}),
            node(2, "whole", "ml.p5.48xlarge"),
            node(3, "a10g", "ml.g5.xlarge", {MIG: "all-1g.10gb"}),  # A10G has no MIG
            node(4, "a100", "ml.p4d.24xlarge", {MIG: "all-3g.20gb"}),
        ]
    )
    mig = core.read_node(name_of(1))
    assert mig.metadata.labels["nvidia.com/mig.config.state"] == "success"
    # H100 80GB: seven 1g.10gb partitions per GPU, eight GPUs, no whole GPU left
    assert mig.status.allocatable["nvidia.com/mig-1g.10gb"] == "56"
    assert mig.status.allocatable["nvidia.com/gpu"] == "0"
    a100 = core.read_node(name_of(4)).status.allocatable
    assert a100["nvidia.com/mig-3g.20gb"] == "16" and a100["nvidia.com/gpu"] == "0"
    a10g = core.read_node(name_of(3))
    assert a10g.metadata.labels["nvidia.com/mig.config.state"] == "failed"
    assert a10g.status.allocatable["nvidia.com/gpu"] == "1"
    assert "nvidia.com/mig-1g.10gb" not in a10g.status.allocatable
    assert core.read_node(name_of(2)).status.allocatable["nvidia.com/gpu"] == "8"

    # mixed requests: 7 pods of 8 partitions fill the MIG node; whole GPUs go elsewhere
    for i in range(7):
        core.create_namespaced_pod(
            "default", gpu_pod(f"part-{i}", "mig", {"nvidia.com/mig-1g.10gb": "8"})
        )
    core.create_namespaced_pod("default", gpu_pod("whole-6", "whole", {"nvidia.com/gpu": "6"}))
    core.create_namespaced_pod("default", gpu_pod("whole-2", "whole", {"nvidia.com/gpu": "2"}))
    core.create_namespaced_pod(
        "default", gpu_pod("a100-part", "a100", {"nvidia.com/mig-3g.20gb": "3"})
    )
    running = ["whole-6", "whole-2", "a100-part", *(f"part-{i}" for i in range(7))]
    eventually(
        lambda: all(
            core.read_namespaced_pod(n, "default").status.phase == "Running" for n in running
        )
    )
    # the MIG node has 0 of 56 partitions left; a whole GPU asked of it does not fit
    core.create_namespaced_pod(
        "default", gpu_pod("one-more", "mig", {"nvidia.com/mig-1g.10gb": "1"})
    )
    core.create_namespaced_pod("default", gpu_pod("gpu-on-mig", "mig", {"nvidia.com/gpu": "1"}))
    assert "Insufficient nvidia.com/mig-1g.10gb" in eventually(
        lambda: pending_reason(core, "one-more")
    )
    assert "Insufficient nvidia.com/gpu" in eventually(lambda: pending_reason(core, "gpu-on-mig"))
    # a partition of a profile the node is not split into is not there either
    core.create_namespaced_pod(
        "default", gpu_pod("wrong-profile", "mig", {"nvidia.com/mig-2g.20gb": "1"})
    )
    assert "Insufficient nvidia.com/mig-2g.20gb" in eventually(
        lambda: pending_reason(core, "wrong-profile")
    )

    used = requested_by_node(core)
    for n in (1, 2, 4):
        alloc = core.read_node(name_of(n)).status.allocatable
        for key, amount in used[name_of(n)].items():
            assert amount <= int(alloc.get(key, "0")), (n, key, amount, alloc)
    assert used[name_of(1)] == {"nvidia.com/mig-1g.10gb": 56}
    assert used[name_of(2)] == {"nvidia.com/gpu": 8}
    assert used[name_of(4)] == {"nvidia.com/mig-3g.20gb": 3}

    # the group's MIG config changes to all-disabled: the node's GPUs are whole again
    cluster.sync_nodes(
        [
            node(1, "mig", "ml.p5.48xlarge", {MIG: "all-disabled"}),
            node(2, "whole", "ml.p5.48xlarge"),
            node(3, "a10g", "ml.g5.xlarge", {MIG: "all-1g.10gb"}),
            node(4, "a100", "ml.p4d.24xlarge", {MIG: "all-3g.20gb"}),
        ]
    )
    eventually(lambda: core.read_node(name_of(1)).status.allocatable["nvidia.com/gpu"] == "8")
    assert "nvidia.com/mig-1g.10gb" not in core.read_node(name_of(1)).status.allocatable
    for name in ("one-more", "gpu-on-mig", "wrong-profile", *(f"part-{i}" for i in range(7))):
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def _shares(core: client.CoreV1Api, name: str) -> list[dict[str, Any]]:
    notes = core.read_namespaced_pod(name, "default").metadata.annotations or {}
    raw = notes.get("hami.io/vgpu-devices-allocated")
    return list(json.loads(raw)) if raw else []


def test_hami_shares_with_whole_gpus(
    cluster: ApiServer, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    nodes = [node(11, "shared", "ml.p4de.24xlarge", {"gpu": "on"})]
    cluster.sync_nodes(nodes)
    # before HAMi runs, the node advertises its eight whole GPUs only
    before = core.read_node(name_of(11))
    assert before.status.allocatable["nvidia.com/gpu"] == "8"
    assert "hami.io/node-nvidia-register" not in (before.metadata.annotations or {})
    apps.create_namespaced_daemon_set(
        "kube-system",
        {
            "metadata": {"name": "hami-device-plugin"},
            "spec": {
                "selector": {"matchLabels": {"app": "hami-device-plugin"}},
                "template": {
                    "metadata": {"labels": {"app": "hami-device-plugin"}},
                    "spec": {
                        "nodeSelector": {"gpu": "on"},
                        "containers": [{"name": "plugin", "image": "projecthami/hami:v2.5.0"}],
                    },
                },
            },
        },
    )
    registered = eventually(
        lambda: (core.read_node(name_of(11)).metadata.annotations or {}).get(
            "hami.io/node-nvidia-register"
        )
    )
    devices = json.loads(registered)
    assert len(devices) == 8 and {d["devmem"] for d in devices} == {81920}
    assert core.read_node(name_of(11)).status.allocatable["nvidia.com/gpu"] == "80"

    def share(name: str, gpus: int, mem: int | None = None, cores: int | None = None) -> None:
        limits = {"nvidia.com/gpu": str(gpus)}
        if mem is not None:
            limits["nvidia.com/gpumem"] = str(mem)
        if cores is not None:
            limits["nvidia.com/gpucores"] = str(cores)
        core.create_namespaced_pod("default", gpu_pod(name, "shared", limits))
        eventually(
            lambda: (
                core.read_namespaced_pod(name, "default").spec.node_name is not None
                or pending_reason(core, name)
            )
        )

    share("half-a", 1, 40000, 50)
    share("half-b", 1, 40000, 50)  # binpacked onto half-a's device
    share("pair", 2, 20000)  # two distinct devices
    share("whole", 5)  # no gpumem: five whole devices
    share("too-big", 1, 70000)  # no device has 70000 MiB free now
    share("small", 1, 1000, 10)  # not on the device whose cores are all given

    a, b = _shares(core, "half-a"), _shares(core, "half-b")
    assert len(a) == len(b) == 1 and a[0]["id"] == b[0]["id"]
    pair = _shares(core, "pair")
    assert len(pair) == 2 and len({d["id"] for d in pair}) == 2
    whole = _shares(core, "whole")
    assert len(whole) == 5 and all(d["mem"] == 81920 for d in whole)
    assert "gpumem or nvidia.com/gpucores" in pending_reason(core, "too-big")
    small = _shares(core, "small")
    assert len(small) == 1 and small[0]["id"] != a[0]["id"]
    assert small[0]["id"] in {d["id"] for d in pair}

    # every device's memory, cores and slots, summed from the pods, within what HAMi registered
    per_device: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in core.list_namespaced_pod("default").items:
        if pod.spec.node_name != name_of(11):
            continue
        for d in _shares(core, pod.metadata.name):
            per_device[d["id"]]["mem"] += d["mem"]
            per_device[d["id"]]["cores"] += d["cores"]
            per_device[d["id"]]["count"] += 1
    assert len(per_device) == 8  # every device holds something
    for d in devices:
        used = per_device[d["id"]]
        assert used["mem"] <= d["devmem"] and used["cores"] <= 100 and used["count"] <= 10
    # a freed share makes room: too-big fits once pair's devices... stay; whole's go
    core.delete_namespaced_pod("whole", "default", grace_period_seconds=0)
    eventually(lambda: core.read_namespaced_pod("too-big", "default").spec.node_name is not None)
    placed = _shares(core, "too-big")
    assert placed[0]["id"] in {d["id"] for d in whole}
