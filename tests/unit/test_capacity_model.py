"""The watched capacity model (cluster_svc.domain.capacity_model) answers what
`cluster_capacity` answers from a full list of the same Nodes and Pods, after every kind of
change, with hundreds of pods; its pages cover the nodes once, in order."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from cluster_svc.domain import capacity
from cluster_svc.domain.capacity_model import CapacityModel, pod_key
from tests.unit.test_capacity import HEALTH_LABEL, PRICES, node, pod

NOW = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)


def _running(name: str, on: str, gpus: int, ns: str, job: str | None) -> dict[str, Any]:
    made = pod(name, on=on, gpus=gpus, memory="8Gi")
    made["metadata"]["namespace"] = ns
    if job:
        made["metadata"]["labels"] = {capacity.JOB_LABEL: job}
    made["status"]["startTime"] = (NOW - timedelta(minutes=len(name) * 7)).isoformat()
    return made


class World:
    """Nodes and Pods as the API would list them, and the model fed every change."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.model = CapacityModel()

    def put_node(self, obj: dict[str, Any]) -> None:
        self.nodes[obj["metadata"]["name"]] = obj
        self.model.node_event("MODIFIED", copy.deepcopy(obj))

    def drop_node(self, name: str) -> None:
        self.model.node_event("DELETED", self.nodes.pop(name))

    def put_pod(self, obj: dict[str, Any]) -> None:
        self.pods[pod_key(obj)] = obj
        self.model.pod_event("ADDED", copy.deepcopy(obj))

    def drop_pod(self, key: tuple[str, str]) -> None:
        self.model.pod_event("DELETED", self.pods.pop(key))

    def check(self) -> None:
        whole = capacity.cluster_capacity(
            "c1", self.nodes.values(), self.pods.values(), PRICES, NOW
        )
        mine, more = self.model.capacity("c1", PRICES, NOW)
        assert not more
        assert mine == whole
        assert self.model.summary("c1", PRICES) == capacity.summarize(whole)
        # pages of 7 cover every node once, in the same order
        paged: list[Any] = []
        after = None
        while True:
            page, more = self.model.page(after, 7)
            paged += page
            if not more:
                break
            after = (page[-1].instance_group or "", page[-1].name)
        assert paged == whole.nodes
        for ns in ("team-a", "hyperpod-ns-team-b"):
            assert self.model.pending(ns) == [p for p in whole.pending if p.namespace == ns]


def test_the_model_equals_a_full_list_after_every_kind_of_change() -> None:
    rng = random.Random(25)
    world = World()
    for i in range(30):
        world.put_node(node(f"n{i:02d}", group=f"g{i % 4}"))
    names = list(world.nodes)
    for i in range(400):
        on = rng.choice(names)
        ns = rng.choice(["team-a", "hyperpod-ns-team-b", "default"])
        world.put_pod(
            _running(f"p{i:03d}", on, rng.choice([0, 1, 2]), ns, rng.choice([None, "j1"]))
        )
    for i in range(60):
        world.put_pod(pod(f"q{i:03d}", gpus=rng.choice([1, 8])))
    world.check()

    for step in range(300):
        roll = rng.random()
        pods = sorted(world.pods)
        if roll < 0.2:  # a pod finishes or fails
            key = rng.choice(pods)
            done = copy.deepcopy(world.pods[key])
            done["status"]["phase"] = rng.choice(["Succeeded", "Failed"])
            if rng.random() < 0.7:  # when it ended: its cost so far is kept
                ended = {"terminated": {"finishedAt": NOW.isoformat()}}
                done["status"]["containerStatuses"] = [{"state": ended}]
            world.put_pod(done)
        elif roll < 0.35:  # a pod is deleted
            world.drop_pod(rng.choice(pods))
        elif roll < 0.5:  # a pending pod is bound and starts
            waiting = [k for k in pods if not world.pods[k]["spec"].get("nodeName")]
            if waiting:
                bound = copy.deepcopy(world.pods[rng.choice(waiting)])
                bound["spec"]["nodeName"] = rng.choice(sorted(world.nodes))
                bound["status"] = {"phase": "Running", "startTime": NOW.isoformat()}
                world.put_pod(bound)
        elif roll < 0.6:  # a node is cordoned or uncordoned
            name = rng.choice(sorted(world.nodes))
            changed = copy.deepcopy(world.nodes[name])
            changed["spec"]["unschedulable"] = not changed["spec"].get("unschedulable")
            world.put_node(changed)
        elif roll < 0.65:  # HyperPod marks a node unhealthy
            name = rng.choice(sorted(world.nodes))
            changed = copy.deepcopy(world.nodes[name])
            changed["metadata"]["labels"][HEALTH_LABEL] = "UnschedulablePendingReboot"
            world.put_node(changed)
        elif roll < 0.7:  # a node leaves (its pods stay bound to a name no longer listed)
            if len(world.nodes) > 5:
                world.drop_node(rng.choice(sorted(world.nodes)))
        elif roll < 0.75:  # a node joins, maybe in a new group
            world.put_node(node(f"m{step:03d}", group=rng.choice(["g0", "g9"]), gpus=4))
        else:  # a new pod, bound or pending
            ns = rng.choice(["team-a", "hyperpod-ns-team-b"])
            if rng.random() < 0.5:
                world.put_pod(
                    _running(f"r{step:03d}", rng.choice(sorted(world.nodes)), 1, ns, "j2")
                )
            else:
                new = pod(f"w{step:03d}", gpus=2)
                new["metadata"]["namespace"] = ns
                world.put_pod(new)
        if step % 25 == 0:
            world.check()
    world.check()


def _six_nodes_fifty_pods() -> World:
    world = World()
    for i in range(6):
        world.put_node(node(f"n{i}", group="g0"))
    for i in range(50):
        world.put_pod(_running(f"p{i:02d}", f"n{i % 6}", 1, "team-a", "j"))
    return world


def test_a_relist_replaces_what_the_model_held() -> None:
    world = _six_nodes_fifty_pods()
    world.check()
    # while the watch was away: two nodes and half the pods went, others came
    for name in ("n0", "n1"):
        del world.nodes[name]
    world.nodes["n9"] = node("n9", group="g1")
    for i in range(0, 50, 2):
        del world.pods[("team-a", f"p{i:02d}")]
    extra = pod("late", gpus=4)
    world.pods[pod_key(extra)] = extra
    world.model.replace_nodes(copy.deepcopy(list(world.nodes.values())))
    world.model.replace_pods(copy.deepcopy(list(world.pods.values())))
    world.check()


def test_a_relist_read_in_pages_replaces_what_the_model_held() -> None:
    """As a watch lists: each page put as it comes, then what the list did not name dropped."""
    world = _six_nodes_fifty_pods()
    del world.nodes["n0"]
    world.nodes["n9"] = node("n9", group="g1")
    for i in range(0, 50, 3):
        del world.pods[("team-a", f"p{i:02d}")]
    world.pods[("team-a", "p01")]["spec"]["nodeName"] = "n9"
    nodes, pods = list(world.nodes.values()), list(world.pods.values())
    names = {n for i in range(0, len(nodes), 4) for n in world.model.put_nodes(nodes[i : i + 4])}
    world.model.retain_nodes(names)
    keys = {k for i in range(0, len(pods), 7) for k in world.model.put_pods(pods[i : i + 7])}
    world.model.retain_pods(keys)
    world.check()


def test_a_page_past_the_last_node_is_empty_and_the_answer_counts_every_node() -> None:
    world = World()
    for i in range(3):
        world.put_node(node(f"n{i}"))
    page, more = world.model.page(("gpu", "n2"), 10)
    assert page == [] and not more
    answer, more = world.model.capacity("c1", PRICES, limit=2)
    assert [n.name for n in answer.nodes] == ["n0", "n1"] and more
    assert answer.groups[0].nodes == 3 and world.model.node_count == 3


def _as_listed(obj: dict[str, Any], *, is_node: bool = False) -> dict[str, Any]:
    """`obj` with what an API server's list adds and the model does not read."""
    full = copy.deepcopy(obj)
    meta = full["metadata"]
    meta["uid"] = f"uid-{meta['name']}"
    meta["resourceVersion"] = "42"
    meta["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 900}
    meta["managedFields"] = [
        {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {"x": {}}}}
    ]
    if is_node:
        full["status"]["images"] = [{"names": [f"img-{i}"], "sizeBytes": i} for i in range(50)]
        full["status"]["nodeInfo"] = {"kubeletVersion": "v1.33"}
    else:
        for container in full["spec"].get("containers") or []:
            container["env"] = [{"name": "A", "value": "b" * 200}]
            container["image"] = "registry/img:tag"
        full["spec"]["volumes"] = [{"name": "token", "projected": {"sources": [{}] * 3}}]
        full["status"]["containerStatuses"] = [
            {"name": "main", "imageID": "sha256:" + "0" * 64, "state": {"running": {}}}
        ]
    return full


def test_the_model_keeps_only_what_it_reads_and_answers_the_same() -> None:
    nodes = [_as_listed(node(f"n{i}", group="g", gpus=8), is_node=True) for i in range(4)]
    pods = [_as_listed(_running(f"p{i}", f"n{i % 4}", 2, "team-a", "job1")) for i in range(8)]
    model = CapacityModel()
    model.replace_nodes(copy.deepcopy(nodes))
    model.replace_pods(copy.deepcopy(pods))
    whole = capacity.cluster_capacity("c1", nodes, pods, PRICES, NOW)
    assert model.capacity("c1", PRICES, NOW) == (whole, False)
    held = model.pods_in("team-a")
    assert len(held) == 8
    for kept in held:
        assert set(kept["metadata"]) == {"name", "namespace", "uid", "labels"}
        assert kept["metadata"]["labels"] == {capacity.JOB_LABEL: "job1"}
        assert "volumes" not in kept["spec"]
        assert all(set(c) <= {"name", "resources"} for c in kept["spec"]["containers"])
        assert kept["status"]["containerStatuses"] == [{"name": "main", "state": {"running": {}}}]
    assert all("images" in n["status"] for n in nodes)
    for name in model._nodes:
        kept_node = model._nodes[name]
        assert "images" not in kept_node["status"] and "nodeInfo" not in kept_node["status"]
        assert "managedFields" not in kept_node["metadata"]


def test_a_pod_whose_cost_is_not_counted_is_held_compact_and_read_back_the_same() -> None:
    """A daemon pod (no job, no team namespace) is held as compact JSON, a job's pod parsed
    (every capacity read reads it); `pods_in` gives both back as they were kept."""
    from cluster_svc.domain.capacity_model import kept_pod

    daemon = _as_listed(_running("proxy-1", "n0", 0, "kube-system", None))
    job = _as_listed(_running("p0", "n0", 2, "team-a", "job1"))
    model = CapacityModel()
    model.replace_nodes([node("n0", group="g", gpus=8)])
    model.replace_pods([daemon, job])
    held = {k: p.held for k, p in model._pods.items()}
    assert isinstance(held[pod_key(daemon)], bytes) and isinstance(held[pod_key(job)], dict)
    assert len(held[pod_key(daemon)]) < 600
    assert model.pods_in("kube-system") == [kept_pod(daemon)]
    assert model.pods_in("team-a") == [kept_pod(job)]
    whole = capacity.cluster_capacity(
        "c1", [node("n0", group="g", gpus=8)], [daemon, job], PRICES, NOW
    )
    assert model.capacity("c1", PRICES, NOW) == (whole, False)
