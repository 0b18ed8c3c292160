"""cluster-svc's watched capacity (adapters/capacity_watch.py) against the emulated API server,
changed through the official Kubernetes client: after creates, deletes, a cordon and pods
running and finishing, with hundreds of pods, the model equals `cluster_capacity` of a full
list; a watch from a resourceVersion the server compacted away gets 410 and lists again."""

from __future__ import annotations

import os
import time
from collections import deque
from datetime import date
from typing import Any

import orjson
import pytest
from kubernetes import client

from cluster_svc.adapters.capacity_watch import ClusterCapacityWatch, Gone, ListWatch
from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR
from cluster_svc.adapters.k8s import KubeClient
from cluster_svc.domain.capacity import cluster_capacity
from cluster_svc.domain.capacity_model import kept_pod, pod_key
from cluster_svc.domain.prices import PriceTable
from shared.adapters import eks_kube
from shared.contracts.capacity import ClusterCapacity, PriceSource
from sim.interfaces import SimNode
from sim.k8s import ApiServer

PRICES = PriceTable(
    PriceSource(source="a table of the test", as_of=date(2026, 12, 1), region="us-east-1"),
    {"ml.g5.8xlarge": 3.06},
)
NS = "default"


def _pod(name: str, node: str | None, gpus: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "python:3.12",
                "command": ["sleep", "infinity"],
                "resources": {
                    "requests": {"memory": "1Gi", "nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
        "restartPolicy": "Never",
    }
    if node:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": "ml.p4d.24xlarge"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _full(core: Any) -> ClusterCapacity:
    nodes = orjson.loads(
        core.list_node(label_selector=HYPERPOD_NODE_SELECTOR, _preload_content=False).data
    )["items"]
    pods = orjson.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
    return cluster_capacity("c", nodes, pods, PRICES)


def _agrees(watch: ClusterCapacityWatch, core: Any, timeout: float = 60.0) -> ClusterCapacity:
    deadline = time.monotonic() + timeout
    while True:
        whole = _full(core)
        mine = watch.read(lambda m: m.capacity("c", PRICES)[0])
        if mine == whole:
            return whole
        assert time.monotonic() < deadline, (mine.resources, whole.resources)
        time.sleep(0.3)


def _pod_list_watch(
    pods: eks_kube.ApiPath, seen: list[list[Any]], retained: list[set[Any]]
) -> ListWatch[Any]:
    """A list and watch of Pods that records each page it puts and what the list retains."""

    def put(items: list[Any]) -> list[Any]:
        seen.append(items)
        return [pod_key(p) for p in items]

    return ListWatch("pods", pods, put, retained.append, lambda k, o: None, keep=kept_pod)


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """The path and query of every GET an `ApiPath` sends from now on."""
    asked: list[tuple[str, dict[str, Any]]] = []
    real = eks_kube.ApiPath.get

    def get(self: eks_kube.ApiPath, timeout: Any = None, **more: Any) -> Any:
        asked.append((self.path, {**self.query, **more}))
        return real(self, timeout, **more)

    monkeypatch.setattr(eks_kube.ApiPath, "get", get)
    return asked


@pytest.fixture(scope="module")
def nodes(cluster: ApiServer, core: client.CoreV1Api) -> list[str]:
    cluster.sync_nodes(
        [
            SimNode(f"i-0c{n:015x}", f"g{n % 2}", "ml.g5.8xlarge", "Running", "us-east-1a", "c")
            for n in range(8)
        ]
    )
    deadline = time.monotonic() + 30
    while True:
        listed = core.list_node(label_selector=HYPERPOD_NODE_SELECTOR).items
        if len(listed) == 8:
            return sorted(n.metadata.name for n in listed)
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_the_watched_model_equals_a_full_list_through_changes(
    cluster: ApiServer,
    api_client: client.ApiClient,
    core: client.CoreV1Api,
    nodes: list[str],
    tmp_path: Any,
) -> None:
    watch = ClusterCapacityWatch(KubeClient(api_client))
    try:
        assert watch.wait_ready(30)
        for i in range(240):
            gpus = 1 if i < len(nodes) else 0  # one GPU pod per node (a g5.8xlarge has 1)
            core.create_namespaced_pod(NS, _pod(f"cw-{i:03d}", nodes[i % len(nodes)], gpus))
        for i in range(12):
            core.create_namespaced_pod(NS, _pod(f"cw-wait-{i:02d}", None, 4))
        whole = _agrees(watch, core)
        assert sum(n.pods for n in whole.nodes) >= 240  # and the daemon pods
        assert whole.resources.gpus.allocated == len(nodes)
        assert len([p for p in whole.pending if p.name.startswith("cw-wait")]) == 12

        # a cordon, deletes, and pods finishing
        core.patch_node(nodes[0], {"spec": {"unschedulable": True}})
        for i in range(0, 240, 3):
            core.delete_namespaced_pod(f"cw-{i:03d}", NS, grace_period_seconds=0)
        for i in range(6):
            core.delete_namespaced_pod(f"cw-wait-{i:02d}", NS, grace_period_seconds=0)
        for i in range(1, 40, 3):
            core.patch_namespaced_pod_status(f"cw-{i:03d}", NS, {"status": {"phase": "Succeeded"}})
        whole = _agrees(watch, core)
        assert not next(n for n in whole.nodes if n.name == nodes[0]).schedulable
        assert watch.error is None
    finally:
        watch.stop()


def test_a_compacted_resource_version_gets_410_and_the_watch_lists_again(
    cluster: ApiServer, api_client: client.ApiClient, core: client.CoreV1Api, nodes: list[str]
) -> None:
    pods = eks_kube.ApiPath(api_client, ("api", "v1", "pods"))
    lw = _pod_list_watch(pods, [], [])
    version = lw._list()
    # a history of 20 changes: the 60 that follow push the listed version out of it
    ring = cluster.store.history["pods"]
    cluster.store.history["pods"] = deque(ring, maxlen=20)
    try:
        for i in range(30):
            core.create_namespaced_pod(NS, _pod(f"gone-{i:02d}", nodes[1], 0))
            core.delete_namespaced_pod(f"gone-{i:02d}", NS, grace_period_seconds=0)
        with pytest.raises(Gone):
            lw._watch(version)
        # a loop whose first list's version is that old one: its watch gets 410, it lists again
        again = _pod_list_watch(pods, [], [])
        listed = again._list

        def stale_first() -> str:
            fresh = listed()
            return version if again.lists == 1 else fresh

        again._list = stale_first  # type: ignore[method-assign]
        again.start()
        deadline = time.monotonic() + 20
        while again.lists < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        again.stop()
        assert again.lists == 2 and again.error is None
    finally:
        lw.stop()
        cluster.store.history["pods"] = deque(cluster.store.history["pods"], maxlen=ring.maxlen)


def test_a_list_is_read_in_pages_each_kept_as_it_comes(
    monkeypatch: pytest.MonkeyPatch,
    api_client: client.ApiClient,
    core: client.CoreV1Api,
    nodes: list[str],
) -> None:
    for i in range(20):
        core.create_namespaced_pod(NS, _pod(f"paged-{i:02d}", nodes[i % len(nodes)], 0))
    monkeypatch.setattr(eks_kube, "LIST_PAGE", 7)
    asked = _asked(monkeypatch)
    pods = eks_kube.ApiPath(api_client, ("api", "v1", "pods"))
    seen: list[list[Any]] = []
    retained: list[set[Any]] = []
    try:
        version = _pod_list_watch(pods, seen, retained)._list()
        whole = orjson.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
        listed = whole["items"]
        assert len(listed) >= 20
        assert len(asked) == -(-len(listed) // 7) >= 3  # pages of 7, the last one shorter
        assert all(a["limit"] == 7 and path == "/api/v1/pods" for path, a in asked)
        assert asked[0][1]["continue"] is None and all(a["continue"] for _, a in asked[1:])
        # every pod once, in order (the emulator's controllers may change a pod's status
        # between the two lists, so the pods are compared by name), each in its kept form
        # each page handed over as it came, in its kept form; the list's end keeps them all
        assert [len(page) for page in seen] == [len(p) for p in _chunks(listed, 7)]
        kept = [p for page in seen for p in page]
        assert [pod_key(p) for p in kept] == [pod_key(p) for p in listed]
        assert all(p == kept_pod(p) for p in kept)
        assert "managedFields" not in kept[0]["metadata"]
        assert retained == [{pod_key(p) for p in listed}]
        assert int(version) <= int(whole["metadata"]["resourceVersion"])
    finally:
        for i in range(20):
            core.delete_namespaced_pod(f"paged-{i:02d}", NS, grace_period_seconds=0)


def test_the_adapter_s_node_and_pod_lists_keep_each_page_s_items_as_they_come(
    monkeypatch: pytest.MonkeyPatch,
    api_client: client.ApiClient,
    core: client.CoreV1Api,
    nodes: list[str],
    tmp_path: Any,
) -> None:
    """`nodes(selector, keep)` and `all_pods(keep)` of the Kubernetes adapter read in pages
    and give back only what `keep` made of each item (the node watcher's KubeNodes of a
    1,000-Node list, the capacity's kept Pods), the same items as one whole list."""
    import asyncio

    from cluster_svc.adapters.hyperpod_nodes import kube_node

    for i in range(9):
        core.create_namespaced_pod(NS, _pod(f"kept-{i}", nodes[i % len(nodes)], 0))
    monkeypatch.setattr(eks_kube, "LIST_PAGE", 2)
    kube = KubeClient(api_client)
    asked = _asked(monkeypatch)
    try:
        kept = asyncio.run(kube.nodes(HYPERPOD_NODE_SELECTOR, kube_node))
        listed_nodes = orjson.loads(
            core.list_node(label_selector=HYPERPOD_NODE_SELECTOR, _preload_content=False).data
        )["items"]
        assert kept == [kube_node(n) for n in listed_nodes] and len(kept) == len(nodes)
        assert len(asked) == -(-len(nodes) // 2) >= 2
        assert all(path == "/api/v1/nodes" and a["limit"] == 2 for path, a in asked)
        assert all(a["labelSelector"] == HYPERPOD_NODE_SELECTOR for _, a in asked)
        pods = asyncio.run(kube.all_pods(kept_pod))
        listed = orjson.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
        assert [pod_key(p) for p in pods] == [pod_key(p) for p in listed["items"]]
        assert all(p == kept_pod(p) and "managedFields" not in p["metadata"] for p in pods)
    finally:
        for i in range(9):
            core.delete_namespaced_pod(f"kept-{i}", NS, grace_period_seconds=0)


READS_WITHOUT_TYPED_APIS = """
import asyncio, json, os, sys, tempfile
from pathlib import Path
from kubernetes import config
import shared.slim
from cluster_svc.bootstrap import SERVICE
from cluster_svc.adapters.capacity_watch import ClusterCapacityWatch
from cluster_svc.adapters.governance import kueue_objects, namespace_events
from cluster_svc.adapters.hyperpod_nodes import HYPERPOD_NODE_SELECTOR, kube_node
from cluster_svc.adapters.k8s import KubeClient
from cluster_svc.domain.capacity_model import kept_pod

api = config.new_client_from_config_dict(json.loads(os.environ["KUBECONFIG_JSON"]))
kube = KubeClient(api)
async def reads():
    return (
        await kube.nodes(HYPERPOD_NODE_SELECTOR, kube_node),
        await kube.all_pods(kept_pod),
        await kube.pods("kube-system", ""),
        await namespace_events(kube, "default"),
        await kueue_objects(kube, "clusterqueues"),
    )
nodes, pods, system, events, queues = asyncio.run(reads())
watch = ClusterCapacityWatch(kube)
assert watch.wait_ready(30), watch.error
watch.stop()
typed = sorted(m for m in sys.modules if m.startswith("kubernetes.client.api."))
print(json.dumps({"nodes": len(nodes), "pods": len(pods), "typed": typed}))
"""


def test_cluster_svc_reads_and_watches_without_importing_the_typed_apis(
    cluster: ApiServer, nodes: list[str]
) -> None:
    """The node, pod, event and Kueue reads and the capacity watch go through `ApiPath`,
    not the official client's typed API classes: importing `CoreV1Api` builds a validator for
    each of its methods and imports their models, 29 MB of cluster-svc's RSS at its first
    cluster (docs/performance.md). In a process of its own, as the service imports itself."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", READS_WITHOUT_TYPED_APIS],
        env={**os.environ, "KUBECONFIG_JSON": json.dumps(cluster.kubeconfig())},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["nodes"] == len(nodes) and answer["pods"] > 0
    assert answer["typed"] == []
