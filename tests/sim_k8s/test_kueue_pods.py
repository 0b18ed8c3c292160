"""Kueue's pod and Deployment integrations and MIG quotas in the emulator, as the HyperPod
task-governance add-on sets them up. A self-managed endpoint's Deployment labelled with its
team's queue runs each pod as a plain Pod workload: pods beyond the team's quota stay gated and
Pending with Kueue's reason; a higher-priority pod preempts a lower one (deleted, then replaced
by its ReplicaSet and queued again). A team's quota of MIG partitions admits pods asking for
that partition up to its count. Read through the official Kubernetes client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from sim.governance import QuotaResource, SchedulerPolicy, TeamQuota
from sim.interfaces import SimNode
from sim.k8s import ApiServer, KubeWorld
from tests.sim_k8s.conftest import eventually

KUEUE = ("kueue.x-k8s.io", "v1beta1")
TYPE = "ml.g5.12xlarge"
MIG_TYPE = "ml.p5.48xlarge"
MIG = "nvidia.com/mig-1g.10gb"
POLICY = SchedulerPolicy("cfg000000002", (("inference", 100), ("training", 50)))
NS = "hyperpod-ns-serve"
GATE = "kueue.x-k8s.io/admission"


def deployment(name: str, replicas: int, resources: dict[str, str], priority: str) -> Any:
    labels = {
        "kueue.x-k8s.io/queue-name": "hyperpod-ns-serve-localqueue",
        "kueue.x-k8s.io/priority-class": f"{priority}-priority",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": "python:3.12",
                            "command": ["python", "-m", "http.server"],
                            "resources": {
                                "requests": {"cpu": "1", **resources},
                                "limits": resources,
                            },
                        }
                    ]
                },
            },
        },
    }


@pytest.fixture(scope="module")
def served(world: KubeWorld) -> Iterator[tuple[ApiServer, Any, Any, Any]]:
    name = "t-kueue-pods"
    world.start_cluster(name)
    server = world.api_server(name)
    server.sync_nodes(
        [SimNode(f"i-0d{n:015x}", "gpu", TYPE, "Running", "us-east-1a", "hp") for n in (1, 2)]
        + [
            SimNode(
                "i-0e000000000000001",
                "mig",
                MIG_TYPE,
                "Running",
                "us-east-1a",
                "hp",
                labels={"nvidia.com/mig.config": "all-1g.10gb"},
            )
        ]
    )
    world.install(name, "amazon-sagemaker-hyperpod-taskgovernance")
    world.sync_task_governance(
        name,
        POLICY,
        [
            TeamQuota(
                quota_id="qs0000000001",
                name="serve-quota",
                team="serve",
                resources=(
                    QuotaResource(TYPE, count=1),
                    QuotaResource(MIG_TYPE, mig_profile="mig-1g.10gb", mig_count=7),
                ),
                strategy="DontLend",
                borrow_limit_percent=0,
            )
        ],
    )
    api = config.new_client_from_config_dict(server.kubeconfig())  # type: ignore[no-untyped-call]
    try:
        yield server, client.AppsV1Api(api), client.CoreV1Api(api), client.CustomObjectsApi(api)
    finally:
        api.close()
        world.stop_cluster(name)


def pods_of(core: Any, app: str) -> list[Any]:
    items = core.list_namespaced_pod(NS, label_selector=f"app={app}").items
    return [p for p in items if not p.metadata.deletion_timestamp]


def workload_of(custom: Any, pod: str) -> dict[str, Any] | None:
    items = custom.list_namespaced_custom_object(*KUEUE, NS, "workloads")["items"]
    for wl in items:
        if any(r["kind"] == "Pod" and r["name"] == pod for r in wl["metadata"]["ownerReferences"]):
            return dict(wl)
    return None


def cond(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return {}


def split(core: Any, app: str, running: int, waiting: int) -> tuple[list[Any], list[Any]] | None:
    pods = pods_of(core, app)
    up = [p for p in pods if p.status.phase == "Running"]
    gated = [p for p in pods if p.spec.scheduling_gates and p.status.phase == "Pending"]
    return (up, gated) if len(up) == running and len(gated) == waiting else None


def test_a_deployment_beyond_its_team_quota_waits_gated(
    served: tuple[ApiServer, Any, Any, Any],
) -> None:
    _, apps, core, custom = served
    cq = custom.get_cluster_custom_object(*KUEUE, "clusterqueues", "hyperpod-ns-serve-clusterqueue")
    (group,) = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == [
        "cpu",
        "memory",
        "nvidia.com/gpu",
        "aws.amazon.com/neuron",
        MIG,
    ]
    by_flavor = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
    assert by_flavor[MIG_TYPE][MIG]["nominalQuota"] == 7
    assert by_flavor[MIG_TYPE]["nvidia.com/gpu"]["nominalQuota"] == 0
    assert by_flavor[MIG_TYPE]["cpu"]["nominalQuota"] == 24  # 7 of 56 partitions of 192 vCPUs
    assert by_flavor[TYPE][MIG]["nominalQuota"] == 0

    apps.create_namespaced_deployment(NS, deployment("web", 3, {"nvidia.com/gpu": "2"}, "training"))
    made = apps.read_namespaced_deployment("web", NS)
    assert made.spec.template.metadata.labels["kueue.x-k8s.io/queue-name"] == (
        "hyperpod-ns-serve-localqueue"
    )
    running, waiting = eventually(lambda: split(core, "web", 2, 1))
    for pod in running:
        assert pod.metadata.labels["kueue.x-k8s.io/managed"] == "true"
        assert pod.spec.node_selector == {"node.kubernetes.io/instance-type": TYPE}
        assert not pod.spec.scheduling_gates
    (gated,) = waiting
    assert [g.name for g in gated.spec.scheduling_gates] == [GATE]
    assert gated.spec.node_name is None
    scheduled = next(c for c in gated.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "SchedulingGated")
    wl = eventually(lambda: workload_of(custom, gated.metadata.name))
    assert wl["metadata"]["name"].startswith(f"pod-{gated.metadata.name}-")
    assert [p["name"] for p in wl["spec"]["podSets"]] == ["main"]
    assert wl["spec"]["priorityClassName"] == "training-priority"
    reserved = eventually(
        lambda: cond(workload_of(custom, gated.metadata.name) or {}, "QuotaReserved") or None
    )
    assert reserved["status"] == "False"
    # the pod names no instance type: both flavors are tried, in order (DontLend borrows 0)
    assert reserved["message"] == (
        "couldn't assign flavors to pod set main: borrowing limit for nvidia.com/gpu in flavor "
        f"{TYPE} exceeded, insufficient quota for nvidia.com/gpu in flavor {MIG_TYPE}, "
        "request > maximum capacity (2 > 0)"
    )


def test_a_higher_priority_pod_preempts_and_the_replacement_queues(
    served: tuple[ApiServer, Any, Any, Any],
) -> None:
    _, apps, core, custom = served
    before = {p.metadata.name for p in pods_of(core, "web")}
    apps.create_namespaced_deployment(
        NS, deployment("chat", 1, {"nvidia.com/gpu": "2"}, "inference")
    )
    (chat,), _ = eventually(lambda: split(core, "chat", 1, 0))
    # one web pod gave way: deleted, replaced by its ReplicaSet with a gated pod
    _, gated = eventually(lambda: split(core, "web", 1, 2))
    assert {p.metadata.name for p in gated} - before  # the replacement is a new pod
    events = core.list_namespaced_event(NS).items
    stopped = [e for e in events if e.reason == "Stopped" and e.involved_object.kind == "Pod"]
    assert any("due to prioritization in the ClusterQueue" in e.message for e in stopped)
    assert workload_of(custom, chat.metadata.name) is not None


def test_mig_partitions_are_admitted_up_to_the_team_quota(
    served: tuple[ApiServer, Any, Any, Any],
) -> None:
    _, apps, core, custom = served
    (node,) = [n for n in core.list_node().items if n.metadata.labels.get("nvidia.com/mig.config")]
    assert node.status.allocatable[MIG] == "56"
    apps.create_namespaced_deployment(NS, deployment("small", 2, {MIG: "4"}, "training"))
    (up,), (waiting,) = eventually(lambda: split(core, "small", 1, 1))
    assert up.spec.node_name == node.metadata.name
    assert up.spec.node_selector == {"node.kubernetes.io/instance-type": MIG_TYPE}
    message = eventually(
        lambda: cond(workload_of(custom, waiting.metadata.name) or {}, "QuotaReserved").get(
            "message"
        )
    )
    assert message == (
        f"couldn't assign flavors to pod set main: insufficient quota for {MIG} in flavor "
        f"{TYPE}, request > maximum capacity (4 > 0), borrowing limit for {MIG} in flavor "
        f"{MIG_TYPE} exceeded"
    )
    # scaled down to what the quota holds, the waiting pod and its Workload go
    apps.patch_namespaced_deployment_scale("small", NS, {"spec": {"replicas": 1}})
    eventually(lambda: split(core, "small", 1, 0))
    eventually(lambda: workload_of(custom, waiting.metadata.name) is None or None)
