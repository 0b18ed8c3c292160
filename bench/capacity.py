"""Issue 25: the capacity and pending reads on a 500-node, 5,000-pod cluster against the same
reads on a 10-node, 100-pod one (goal: p95 <= 3x).

The Kubernetes emulator, in a process of its own, with the task-governance add-on (Kueue) and
one team, HyperPod nodes of ml.p5.48xlarge, pods bound to them (as many per node on both sizes)
and a few pending ones, and one governed Job waiting on its team's quota. Each read is the
route cluster-svc answers GET /clusters/{name}/capacity (its default page of 100 nodes) and
GET /clusters/{name}/jobs/{job}/pending with (`cluster_svc.areas.capacity` and `.governance`,
built as bootstrap builds them, through the official Kubernetes client): from the cluster's
watched model (adapters/capacity_watch.py), started by a first read that is timed apart
(`first_read_ms`: its lists of every Node and Pod). The pending read adds the job, the Kueue
Workloads, ClusterQueues, priority classes and the namespace's events. Its AWS reads
(DescribeCluster, cached by cluster-svc, and the compute quotas) are the same on both sizes and
answered without AWS. The floor is the same reads of the 10-node cluster in the same run.

    .venv/bin/python -m bench.capacity [--runs 15]

Writes bench/results/capacity.json.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import multiprocessing as mp
import time
import uuid
from datetime import date
from types import SimpleNamespace
from typing import Any

import orjson
from kubernetes import config

from bench.common import percentile, record
from cluster_svc.adapters.capacity_watch import CapacityWatches
from cluster_svc.adapters.k8s import EksKubeFactory, KubeClient
from cluster_svc.areas import capacity as capacity_area
from cluster_svc.areas import governance as governance_area
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.governance.actual import GovernanceActual
from cluster_svc.domain.prices import PriceTable
from shared.contracts.capacity import PriceSource
from sim.governance import QuotaResource, SchedulerPolicy, TeamQuota
from sim.interfaces import SimNode
from sim.k8s import KubeWorld
from sim.profile import get_profile

TYPE = "ml.p5.48xlarge"
SELECTOR = "sagemaker.amazonaws.com/compute-type=hyperpod"
PODS_PER_NODE = 10
PENDING = 5
NS = "hyperpod-ns-bench"
PAGE = 100  # the REST route's default page of nodes
STILL_MS = 25.0
STILL_TIMEOUT = 300.0


def _pod(name: str, node: str | None, gpus: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "python:3.12",
                "command": ["sleep", "infinity"],
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ]
    }
    if node:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": "ml.p4d.24xlarge"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def build(world: KubeWorld, name: str, nodes: int) -> Any:
    world.start_cluster(name)
    server = world.api_server(name)
    server.sync_nodes(
        [SimNode(f"i-0f{n:015x}", "gpu", TYPE, "Running", "us-east-1a", name) for n in range(nodes)]
    )
    world.install(name, "amazon-sagemaker-hyperpod-taskgovernance")
    world.sync_task_governance(
        name,
        SchedulerPolicy("cfgbench0001", (("training", 50),)),
        [
            TeamQuota(
                "qbench000001",
                "bench-quota",
                "bench",
                (QuotaResource(TYPE, accelerators=1),),
                "DontLend",
                0,
            )
        ],
    )
    names = [n["metadata"]["name"] for n in server.store.items("nodes")]
    rt = server.resource("v1", "Pod")
    # one pod of each shape through the API (its defaults and validation), the others copies
    # of it put in the store: the reads, not 5,000 creates, are what is measured
    shapes = {
        gpus: server.api.create(rt, "default", _pod(f"p-0-{gpus}", names[0], gpus), internal=True)
        for gpus in (0, 1)
    }
    for i, node in enumerate(names):
        for k in range(PODS_PER_NODE):
            if i == 0 and k in shapes:
                continue
            pod = copy.deepcopy(shapes[k % 2])
            pod["metadata"].update(name=f"p-{i}-{k}", uid=str(uuid.uuid4()))
            pod["spec"]["nodeName"] = node
            server.store.put("pods", pod, "ADDED")
    for k in range(PENDING):
        server.api.create(rt, "default", _pod(f"pending-{k}", None, 8), internal=True)
    # the kubelet starts them: measured once the cluster is still
    expected = len(names) * PODS_PER_NODE
    deadline = time.monotonic() + 900
    while (
        sum(
            1
            for p in server.store.items("pods", "default")
            if (p.get("status") or {}).get("phase") == "Running"
        )
        < expected
    ):
        assert time.monotonic() < deadline, "the pods did not start"
        time.sleep(1.0)
    print(f"{name}: {expected} pods running", flush=True)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "big",
            "labels": {
                "kueue.x-k8s.io/queue-name": f"{NS}-localqueue",
                "kueue.x-k8s.io/priority-class": "training-priority",
            },
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": _pod("x", None, 8)["spec"]["containers"],
                    "restartPolicy": "Never",
                }
            }
        },
    }
    server.api.create(server.resource("batch/v1", "Job"), NS, job, internal=True)
    deadline = time.monotonic() + 120
    while not any(
        c.get("type") == "QuotaReserved"
        for w in server.store.items("workloads.kueue.x-k8s.io", NS)
        for c in (w.get("status") or {}).get("conditions") or []
    ):
        assert time.monotonic() < deadline, "Kueue did not answer the job"
        time.sleep(0.2)
    return server


class _Prices:
    """The price list cluster-svc caches (prices are not what is measured)."""

    def __init__(self) -> None:
        source = PriceSource(
            source="none (prices are not what is measured)", as_of=date.today(), region="us-east-1"
        )
        self._table = PriceTable(source=source)

    async def table(self) -> PriceTable:
        return self._table


def _areas(kubeconfig: dict[str, Any], name: str) -> tuple[Any, Any, KubeClient, CapacityWatches]:
    """cluster-svc's capacity and governance areas as bootstrap builds them (one watch per
    cluster, shared), with their AWS reads answered: DescribeCluster's access (cached by
    cluster-svc anyway) and the team quotas (the same on both sizes)."""
    kube = KubeClient(
        config.new_client_from_config_dict(kubeconfig),  # type: ignore[no-untyped-call]
    )

    class Factory(EksKubeFactory):
        def __call__(self, access: ClusterAccess) -> KubeClient:
            return kube

    class Nodes:
        def __init__(self, *args: Any) -> None:
            pass

        async def eks_access(self, eks_cluster: str) -> ClusterAccess:
            return ClusterAccess(name=eks_cluster, endpoint="", ca_data="")

    class Governance:
        def __init__(self, *args: Any) -> None:
            pass

        async def client(self, eks_cluster: str) -> KubeClient:
            return kube

        async def observe(self, target: Any) -> Any:
            return GovernanceActual(name, name, name)

    vars(capacity_area)["HyperPodNodes"] = Nodes  # the areas build these by name
    vars(governance_area)["LiveGovernance"] = Governance
    aws: Any = SimpleNamespace(region="us-east-1")
    ports: Any = SimpleNamespace(kube=Factory("us-east-1"))
    prices: Any = _Prices()
    watches = CapacityWatches()
    cap = capacity_area.build(aws, ports, prices, watches).read_routes
    gov = governance_area.build(aws, ports, prices, watches).read_routes
    return cap[capacity_area.CAPACITY], gov[governance_area.PENDING], kube, watches


def measure(kubeconfig: dict[str, Any], name: str, runs: int) -> dict[str, Any]:
    capacity_route, pending_route, kube, watches = _areas(kubeconfig, name)
    target = {"cluster": name, "eks_cluster": name, "hyperpod_cluster": name, "region": "us-east-1"}
    job = {"name": "big", "namespace": NS, "kind": "Job", "api_version": "batch/v1"}

    async def capacity_read(limit: int = PAGE) -> Any:
        return await capacity_route({"cluster": name, "eks_cluster": name, "limit": limit})

    async def page_of_10() -> Any:
        return await capacity_read(10)

    async def pending_read() -> Any:
        return await pending_route({"target": target, "job": job})

    async def still() -> float:
        """Seconds until the emulator answers a GET of the job within STILL_MS five times in a
        row: once it has written the last pod statuses and Kueue's answer, as a real cluster
        with 5,000 settled pods would be (its controllers busy, every request waits)."""
        began = time.perf_counter()
        quick = 0
        while quick < 5 and time.perf_counter() - began < STILL_TIMEOUT:
            t0 = time.perf_counter()
            await kube.get("batch/v1", "Job", "big", NS)
            quick = quick + 1 if (time.perf_counter() - t0) * 1000 < STILL_MS else 0
            await asyncio.sleep(0.2)
        return round(time.perf_counter() - began, 1)

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        t0 = time.perf_counter()
        await capacity_read()  # starts the watch: its first lists
        out["first_read_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        out["still_after_s"] = await still()
        reads = (
            ("capacity", capacity_read),
            ("capacity_10", page_of_10),
            ("pending", pending_read),
        )
        for label, read in reads:
            await read()  # warm
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                result = await read()
                times.append((time.perf_counter() - t0) * 1000)
            out[label] = {
                "p50_ms": round(percentile(times, 50), 2),
                "p95_ms": round(percentile(times, 95), 2),
            }
            if label == "capacity":
                out["nodes"] = result["node_total"]
                out["nodes_in_page"] = len(result["nodes"])
                out["gpus_allocated"] = result["resources"]["gpus"]["allocated"]
                out["pending_pods"] = len(result["pending"])
                watch = await watches.of(name, kube)
                assert watch is not None
                out["pods_counted"] = watch.read(lambda m: m.pod_count)
            elif label == "pending":
                out["pending_reason"] = result["reason"]
        return out

    try:
        return asyncio.run(run())
    finally:
        watches.close()
        kube.close()


def serve(conn: Any, name: str, nodes: int) -> None:
    """Child process: the emulated cluster, until told to stop (the reads' client runs in the
    parent, as cluster-svc runs apart from the API server: no shared heap, no shared GIL)."""
    world = KubeWorld(get_profile("fast"))
    server = build(world, name, nodes)
    conn.send(server.kubeconfig())
    conn.recv()
    world.stop_cluster(name)


def measured(name: str, nodes: int, runs: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(child, name, nodes), daemon=True)
    proc.start()
    try:
        kubeconfig = parent.recv()
        return measure(kubeconfig, name, runs)
    finally:
        parent.send("stop")
        proc.join(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    small = measured("bench-cap-10", 10, args.runs)
    large = measured("bench-cap-500", 500, args.runs)
    result = {
        "small": small,
        "large": large,
        "capacity_p95_ratio": round(large["capacity"]["p95_ms"] / small["capacity"]["p95_ms"], 2),
        "capacity_10_p95_ratio": round(
            large["capacity_10"]["p95_ms"] / small["capacity_10"]["p95_ms"], 2
        ),
        "pending_p95_ratio": round(large["pending"]["p95_ms"] / small["pending"]["p95_ms"], 2),
        "goal_ratio": 3.0,
        "runs": args.runs,
    }
    path = record("capacity", result)
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    print(f"written {path}")


if __name__ == "__main__":
    main()
