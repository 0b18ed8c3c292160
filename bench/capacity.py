"""Issue 25: the capacity and pending reads on a 500-node, 5,000-pod cluster against the same
reads on a 10-node, 100-pod one (goal: p95 <= 3x).

The Kubernetes emulator, in a process of its own, with the task-governance add-on (Kueue) and
one team, HyperPod nodes of ml.p5.48xlarge, pods bound to them (as many per node on both sizes) and a few
pending ones, and one governed Job waiting on its team's quota. Each read is what cluster-svc
does for GET /clusters/{name}/capacity and GET /clusters/{name}/jobs/{job}/pending, through the
official Kubernetes client: the HyperPod Nodes (the client's models, as shared/adapters/eks_kube
reads them), every Pod (the JSON as is, as areas/capacity reads it), then the pure join
(`cluster_capacity`); the pending read adds the Kueue Workloads, ClusterQueues, priority classes
and the namespace's events and runs the explainer. The AWS reads the pending read also makes
(the compute quotas) are the same on both sizes and left out.

    .venv/bin/python -m bench.capacity [--runs 15]

Writes bench/results/capacity.json.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import multiprocessing as mp
import time
import uuid
from datetime import date
from typing import Any

import orjson
from kubernetes import client, config

from bench.common import percentile, record
from cluster_svc.domain import capacity as capacity_domain
from cluster_svc.domain.governance.pending import JobRef, PendingFacts, explain
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


def _capacity(name: str, nodes: list[Any], pods: list[Any]) -> Any:
    """`cluster_capacity` with the price table when its signature takes one."""
    fn: Any = capacity_domain.cluster_capacity
    if "prices" in inspect.signature(fn).parameters:
        from cluster_svc.domain.prices import PriceTable

        source = PriceSource(
            source="none (prices are not what is measured)", as_of=date.today(), region="us-east-1"
        )
        return fn(name, nodes, pods, PriceTable(source=source))
    return fn(name, nodes, pods)


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


def measure(kubeconfig: dict[str, Any], name: str, runs: int) -> dict[str, Any]:
    api = config.new_client_from_config_dict(kubeconfig)  # type: ignore[no-untyped-call]
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    batch: Any = client.BatchV1Api(api)

    def nodes() -> list[Any]:
        found = core.list_node(label_selector=SELECTOR)
        return [api.sanitize_for_serialization(n) for n in found.items]

    def pods() -> list[Any]:
        raw = core.list_pod_for_all_namespaces(_preload_content=False)
        items: list[Any] = orjson.loads(raw.data).get("items") or []
        return items

    def kueue(plural: str) -> list[Any]:
        found: list[Any] = custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", plural)[
            "items"
        ]
        return found

    def capacity_read() -> Any:
        return _capacity(name, nodes(), pods())

    def pending_read() -> Any:
        job = api.sanitize_for_serialization(batch.read_namespaced_job("big", NS))
        events = orjson.loads(core.list_namespaced_event(NS, _preload_content=False).data)
        classes = kueue("workloadpriorityclasses")
        facts = PendingFacts(
            job=job,
            workloads=kueue("workloads"),
            cluster_queues=kueue("clusterqueues"),
            priority_classes={c["metadata"]["name"]: int(c.get("value") or 0) for c in classes},
            quotas={},
            capacity=capacity_read(),
            events=events.get("items") or [],
        )
        return explain(JobRef(name, "big", NS, "Job", "batch/v1"), facts)

    out: dict[str, Any] = {}
    for label, read in (("capacity", capacity_read), ("pending", pending_read)):
        read()  # warm
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = read()
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = {
            "p50_ms": round(percentile(times, 50), 2),
            "p95_ms": round(percentile(times, 95), 2),
        }
        if label == "capacity":
            out["nodes"] = len(result.nodes)
            out["pods_counted"] = sum(n.pods for n in result.nodes) + len(result.pending)
        else:
            out["pending_reason"] = result.reason
    api.close()
    return out


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
        "pending_p95_ratio": round(large["pending"]["p95_ms"] / small["pending"]["p95_ms"], 2),
        "goal_ratio": 3.0,
        "runs": args.runs,
    }
    path = record("capacity", result)
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    print(f"written {path}")


if __name__ == "__main__":
    main()
