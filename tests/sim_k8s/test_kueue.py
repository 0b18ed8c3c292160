"""Kueue in the emulator, as the HyperPod task-governance add-on sets it up: two teams on one
cluster of two ml.g5.12xlarge nodes (4 GPUs each, one node's worth per team). A job beyond its
team's quota waits with Kueue's reason; when the other team lends, it runs on borrowed quota;
the lender reclaims it by preemption; a higher-priority job preempts a lower one of its team.
Everything is read through the official Kubernetes client, as the product reads it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from sim.governance import QuotaResource, SchedulerPolicy, TeamQuota
from sim.interfaces import SimNode
from sim.k8s import ApiServer, KubeWorld
from tests.sim_k8s.conftest import eventually

KUEUE = ("kueue.x-k8s.io", "v1beta1")
TYPE = "ml.g5.12xlarge"
POLICY = SchedulerPolicy("cfg000000001", (("inference", 100), ("training", 50)))


def team(name: str, strategy: str, quota_id: str) -> TeamQuota:
    return TeamQuota(
        quota_id=quota_id,
        name=f"{name}-quota",
        team=name,
        resources=(QuotaResource(TYPE, count=1),),
        strategy=strategy,
        borrow_limit_percent=100,
    )


def job(name: str, team_name: str, gpus: int = 4, priority: str | None = "training") -> Any:
    labels = {"kueue.x-k8s.io/queue-name": f"hyperpod-ns-{team_name}-localqueue"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = f"{priority}-priority"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "python:3.12",
                            "command": ["sleep", "3600"],
                            "resources": {
                                "requests": {"cpu": "4", "nvidia.com/gpu": str(gpus)},
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                }
            },
        },
    }


@pytest.fixture(scope="module")
def governed(world: KubeWorld, cluster: ApiServer) -> ApiServer:
    cluster.sync_nodes(
        [SimNode(f"i-0b{n:015x}", "gpu", TYPE, "Running", "us-east-1a", "hp") for n in (1, 2)]
    )
    world.install(cluster.cluster, "amazon-sagemaker-hyperpod-taskgovernance")
    world.sync_task_governance(
        cluster.cluster,
        POLICY,
        [
            team("team-a", "LendAndBorrow", "qa0000000001"),
            team("team-b", "DontLend", "qb0000000001"),
        ],
    )
    return cluster


def workload(custom: Any, ns: str, job_name: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")[
        "items"
    ]
    mine = [w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job_name]
    assert len(mine) == 1, [w["metadata"]["name"] for w in items]
    return mine[0]


def cond(wl: dict[str, Any], ctype: str) -> dict[str, str] | None:
    for c in (wl.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return {k: c[k] for k in ("status", "reason", "message")}
    return None


def admitted(custom: Any, ns: str, name: str) -> dict[str, Any] | None:
    wl = workload(custom, ns, name)
    return wl if (cond(wl, "Admitted") or {}).get("status") == "True" else None


def pending_with(custom: Any, ns: str, name: str, text: str) -> Any:
    wl = workload(custom, ns, name)
    reserved = cond(wl, "QuotaReserved") or {}
    return wl if reserved.get("status") == "False" and text in reserved["message"] else None


def running_pods(core: Any, ns: str, job_name: str) -> list[Any]:
    pods = core.list_namespaced_pod(ns, label_selector=f"job-name={job_name}").items
    return [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]


def test_the_add_on_renders_teams_as_kueue_objects(
    governed: ApiServer, core: Any, custom: Any
) -> None:
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"hyperpod-ns-team-a", "hyperpod-ns-team-b", "kueue-system"} <= names
    lq = custom.get_namespaced_custom_object(
        *KUEUE, "hyperpod-ns-team-a", "localqueues", "hyperpod-ns-team-a-localqueue"
    )
    assert lq["spec"]["clusterQueue"] == "hyperpod-ns-team-a-clusterqueue"
    cq = custom.get_cluster_custom_object(
        *KUEUE, "clusterqueues", "hyperpod-ns-team-a-clusterqueue"
    )
    assert cq["spec"]["cohort"] == "hyperpod-cohort"
    assert cq["spec"]["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": {"policy": "Never"},
    }
    (group,) = cq["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    assert flavor["name"] == TYPE
    quotas = {r["name"]: r for r in flavor["resources"]}
    assert quotas["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 4,
        "borrowingLimit": 4,
    }
    assert quotas["cpu"]["nominalQuota"] == 48 and quotas["memory"]["nominalQuota"] == "192Gi"
    b = custom.get_cluster_custom_object(*KUEUE, "clusterqueues", "hyperpod-ns-team-b-clusterqueue")
    gpu_b = next(
        r
        for r in b["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        if r["name"] == "nvidia.com/gpu"
    )
    assert gpu_b == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 4,
        "borrowingLimit": 0,
        "lendingLimit": 0,
    }
    rf = custom.get_cluster_custom_object(*KUEUE, "resourceflavors", TYPE)
    assert rf["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type": TYPE}
    values = {
        p["metadata"]["name"]: p["value"]
        for p in custom.list_cluster_custom_object(*KUEUE, "workloadpriorityclasses")["items"]
    }
    assert values == {"inference-priority": 100, "training-priority": 50}


def test_a_job_beyond_its_quota_waits_then_runs_on_lent_quota(
    world: KubeWorld,
    governed: ApiServer,
    core: Any,
    custom: Any,
    kubectl: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    batch: Any = client.BatchV1Api(core.api_client)
    ns = "hyperpod-ns-team-a"
    batch.create_namespaced_job(ns, job("a1", "team-a"))
    wl = eventually(lambda: admitted(custom, ns, "a1"))
    assert cond(wl, "QuotaReserved") == {
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue hyperpod-ns-team-a-clusterqueue",
    }
    assert cond(wl, "Admitted") == {
        "status": "True",
        "reason": "Admitted",
        "message": "The workload is admitted",
    }
    assert wl["spec"]["priority"] == 50
    assert wl["spec"]["priorityClassName"] == "training-priority"
    (assignment,) = wl["status"]["admission"]["podSetAssignments"]
    assert assignment["flavors"]["nvidia.com/gpu"] == TYPE
    assert assignment["resourceUsage"]["nvidia.com/gpu"] == 4
    eventually(lambda: running_pods(core, ns, "a1"))
    started = batch.read_namespaced_job("a1", ns)
    assert started.spec.suspend is False
    assert started.spec.template.spec.node_selector == {"node.kubernetes.io/instance-type": TYPE}

    # team-a's quota is used; team-b does not lend: a2 waits, and says why
    batch.create_namespaced_job(ns, job("a2", "team-a"))
    wl = eventually(lambda: pending_with(custom, ns, "a2", "insufficient"))
    assert cond(wl, "QuotaReserved") == {
        "status": "False",
        "reason": "Pending",
        "message": "couldn't assign flavors to pod set main: insufficient unused quota for "
        f"nvidia.com/gpu in flavor {TYPE}, 4 more needed",
    }
    assert cond(wl, "Admitted") is None
    assert batch.read_namespaced_job("a2", ns).spec.suspend is True
    assert not core.list_namespaced_pod(ns, label_selector="job-name=a2").items
    events = core.list_namespaced_event(
        ns, field_selector=f"involvedObject.name={wl['metadata']['name']}"
    ).items
    assert any(e.reason == "Pending" and "4 more needed" in e.message for e in events)
    cq = custom.get_cluster_custom_object(
        *KUEUE, "clusterqueues", "hyperpod-ns-team-a-clusterqueue"
    )
    assert (cq["status"]["pendingWorkloads"], cq["status"]["admittedWorkloads"]) == (1, 1)

    # team-b starts lending its idle quota: a2 runs on it, and team-a is seen borrowing
    world.sync_task_governance(
        governed.cluster,
        POLICY,
        [team("team-a", "LendAndBorrow", "qa0000000001"), team("team-b", "Lend", "qb0000000001")],
    )
    eventually(lambda: admitted(custom, ns, "a2"))
    eventually(lambda: running_pods(core, ns, "a2"))

    def borrowed() -> Any:
        cq = custom.get_cluster_custom_object(
            *KUEUE, "clusterqueues", "hyperpod-ns-team-a-clusterqueue"
        )
        usage = cq["status"]["flavorsReservation"][0]["resources"]
        gpu = next(r for r in usage if r["name"] == "nvidia.com/gpu")
        return gpu if gpu == {"name": "nvidia.com/gpu", "total": 8, "borrowed": 4} else None

    eventually(borrowed)


def test_the_lender_reclaims_and_higher_priority_preempts(
    governed: ApiServer, core: Any, custom: Any
) -> None:
    batch: Any = client.BatchV1Api(core.api_client)
    a, b = "hyperpod-ns-team-a", "hyperpod-ns-team-b"
    # team-b wants its own quota back: a2, borrowed, is preempted
    batch.create_namespaced_job(b, job("b1", "team-b"))
    b1 = eventually(lambda: admitted(custom, b, "b1"))
    a2 = workload(custom, a, "a2")
    expected = (
        f"Preempted to accommodate a workload (UID: {b1['metadata']['uid']}, JobUID: "
        f"{b1['metadata']['labels']['kueue.x-k8s.io/job-uid']}) due to reclamation within the cohort"
    )
    assert cond(a2, "Evicted") == {"status": "True", "reason": "Preempted", "message": expected}
    assert cond(a2, "Preempted") == {
        "status": "True",
        "reason": "InCohortReclamation",
        "message": expected,
    }
    assert cond(a2, "Admitted") == {
        "status": "False",
        "reason": "NoReservation",
        "message": "The workload has no reservation",
    }
    assert "admission" not in a2["status"]
    eventually(lambda: batch.read_namespaced_job("a2", a).spec.suspend is True)
    eventually(lambda: not running_pods(core, a, "a2"))
    eventually(lambda: running_pods(core, b, "b1"))
    events = core.list_namespaced_event(
        a, field_selector=f"involvedObject.name={a2['metadata']['name']}"
    ).items
    assert {"Preempted", "EvictedDueToPreempted"} <= {e.reason for e in events}

    # inference outranks training in team-a (PreemptTeamTasks LowerPriority): a1 makes room
    batch.create_namespaced_job(a, job("a3", "team-a", priority="inference"))
    a3 = eventually(lambda: admitted(custom, a, "a3"))
    assert a3["spec"]["priority"] == 100
    a1 = workload(custom, a, "a1")
    assert cond(a1, "Preempted") == {
        "status": "True",
        "reason": "InClusterQueue",
        "message": f"Preempted to accommodate a workload (UID: {a3['metadata']['uid']}, JobUID: "
        f"{a3['metadata']['labels']['kueue.x-k8s.io/job-uid']}) due to prioritization in the "
        "ClusterQueue",
    }
    eventually(lambda: running_pods(core, a, "a3"))
    # a1 and a2 both wait now: team-a holds its quota with a3, team-b uses its own
    eventually(lambda: pending_with(custom, a, "a1", "insufficient unused quota"))
    assert (cond(workload(custom, a, "a2"), "Admitted") or {}).get("status") == "False"
    job_events = core.list_namespaced_event(a, field_selector="involvedObject.name=a1").items
    assert {"CreatedWorkload", "Started", "Stopped"} <= {e.reason for e in job_events}


def test_unknown_priority_class_and_queue_are_explained(
    governed: ApiServer, core: Any, custom: Any
) -> None:
    batch: Any = client.BatchV1Api(core.api_client)
    ns = "hyperpod-ns-team-b"
    batch.create_namespaced_job(ns, job("nopri", "team-b", priority="urgent"))

    def refused() -> Any:
        events = core.list_namespaced_event(ns, field_selector="involvedObject.name=nopri").items
        return [e for e in events if e.reason == "ErrWorkloadCompose"]

    (event,) = eventually(refused)
    assert event.type == "Warning"
    assert event.message == 'workloadpriorityclasses.kueue.x-k8s.io "urgent-priority" not found'
    assert batch.read_namespaced_job("nopri", ns).spec.suspend is True
    batch.create_namespaced_job(ns, job("noqueue", "team-c", priority=None))
    wl = eventually(lambda: pending_with(custom, ns, "noqueue", "LocalQueue"))
    assert cond(wl, "QuotaReserved") == {
        "status": "False",
        "reason": "Inadmissible",
        "message": "LocalQueue hyperpod-ns-team-c-localqueue doesn't exist",
    }
    with pytest.raises(ApiException):
        custom.get_namespaced_custom_object(
            *KUEUE, ns, "localqueues", "hyperpod-ns-team-c-localqueue"
        )


def hyperpod_job(name: str, team_name: str, run_seconds: str) -> dict[str, Any]:
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {
            "name": name,
            "labels": {
                "kueue.x-k8s.io/queue-name": f"hyperpod-ns-{team_name}-localqueue",
                "kueue.x-k8s.io/priority-class": "training-priority",
            },
        },
        "spec": {
            "nprocPerNode": "4",
            "replicaSpecs": [
                {
                    "name": "pod",
                    "replicas": 1,
                    "template": {
                        "metadata": {
                            "annotations": {"sim.hyperpilot.dev/run-seconds": run_seconds}
                        },
                        "spec": {
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
                                    "command": ["hyperpodrun", "--nproc-per-node=4", "train.py"],
                                    "resources": {"limits": {"nvidia.com/gpu": "4"}},
                                }
                            ]
                        },
                    },
                }
            ],
        },
    }


def test_freed_quota_is_admitted_again_and_hyperpod_jobs_queue_too(
    governed: ApiServer, core: Any, custom: Any
) -> None:
    batch: Any = client.BatchV1Api(core.api_client)
    a, b = "hyperpod-ns-team-a", "hyperpod-ns-team-b"
    # a3 goes: a1 (older, within team-a's own quota) is admitted again before a2 would borrow
    batch.delete_namespaced_job("a3", a, propagation_policy="Background")
    eventually(lambda: admitted(custom, a, "a1"))
    a1 = workload(custom, a, "a1")
    evicted = cond(a1, "Evicted") or {}
    assert (evicted["status"], evicted["reason"]) == ("False", "QuotaReserved")
    assert evicted["message"].startswith("Previously: Preempted to accommodate a workload (UID: ")
    assert evicted["message"].endswith("due to prioritization in the ClusterQueue")
    eventually(lambda: running_pods(core, a, "a1"))
    assert (cond(workload(custom, a, "a2"), "Admitted") or {}).get("status") == "False"
    # b1 goes: a2 borrows team-b's idle quota
    batch.delete_namespaced_job("b1", b, propagation_policy="Background")
    eventually(lambda: admitted(custom, a, "a2"))
    # a HyperPodPyTorchJob of team-b reclaims it, runs on the flavor's nodes, then finishes
    governed.install("hyperpod-training-operator")
    job_api = ("sagemaker.amazonaws.com", "v1", b, "hyperpodpytorchjobs")
    custom.create_namespaced_custom_object(*job_api, hyperpod_job("hp1", "team-b", "2"))
    hp1 = eventually(lambda: admitted(custom, b, "hp1"))
    assert hp1["metadata"]["name"].startswith("hyperpodpytorchjob-hp1-")
    assert [p["name"] for p in hp1["spec"]["podSets"]] == ["pod"]
    assert cond(workload(custom, a, "a2"), "Preempted")["reason"] == "InCohortReclamation"  # type: ignore[index]
    started = custom.get_namespaced_custom_object(*job_api, "hp1")
    assert started["spec"]["runPolicy"]["suspend"] is False
    template = started["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert template["nodeSelector"] == {"node.kubernetes.io/instance-type": TYPE}

    def finished() -> Any:
        done = cond(workload(custom, b, "hp1"), "Finished")
        return done if done and done["status"] == "True" else None

    assert eventually(finished, timeout=30) == {
        "status": "True",
        "reason": "Succeeded",
        "message": "Job finished successfully",
    }
    # its quota is free again: a2 borrows it once more
    eventually(lambda: admitted(custom, a, "a2"))
    cq = custom.get_cluster_custom_object(
        *KUEUE, "clusterqueues", "hyperpod-ns-team-b-clusterqueue"
    )
    assert cq["status"]["reservingWorkloads"] == 0


def test_ray_jobs_are_queued_suspended_and_get_their_cluster_when_admitted(
    governed: ApiServer, core: Any, custom: Any
) -> None:
    governed.install("kuberay-operator")
    b = "hyperpod-ns-team-b"
    ray_api = ("ray.io", "v1", b, "rayjobs")
    container = {"name": "ray", "image": "rayproject/ray:2.41.0"}
    worker = dict(container, resources={"limits": {"nvidia.com/gpu": "4"}})
    rayjob: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "ray1",
            "labels": {"kueue.x-k8s.io/queue-name": "hyperpod-ns-team-b-localqueue"},
        },
        "spec": {
            "entrypoint": "python train.py",
            "rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": {"containers": [container]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 1,
                        "template": {"spec": {"containers": [worker]}},
                    }
                ],
            },
        },
    }
    # team-a holds its own quota with a1 and borrows team-b's with a2: team-b reclaims it
    custom.create_namespaced_custom_object(*ray_api, rayjob)
    wl = eventually(lambda: admitted(custom, b, "ray1"))
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("head", 1), ("gpu", 1)]
    assert cond(workload(custom, "hyperpod-ns-team-a", "a2"), "Preempted")["reason"] == (  # type: ignore[index]
        "InCohortReclamation"
    )
    running = eventually(
        lambda: (
            j
            if (j := custom.get_namespaced_custom_object(*ray_api, "ray1"))
            .get("status", {})
            .get("rayClusterName")
            else None
        )
    )
    assert running["spec"]["suspend"] is False
    workers = running["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert workers["nodeSelector"] == {"node.kubernetes.io/instance-type": TYPE}
    # a second one would have to borrow, which team-b (Lend) may not: suspended, no
    # RayCluster, and Kueue says why
    second = dict(rayjob, metadata=dict(rayjob["metadata"], name="ray2"))
    custom.create_namespaced_custom_object(*ray_api, second)
    wl2 = eventually(lambda: pending_with(custom, b, "ray2", "borrowing limit"))
    assert cond(wl2, "QuotaReserved")["message"] == (  # type: ignore[index]
        f"couldn't assign flavors to pod set gpu: borrowing limit for nvidia.com/gpu in flavor "
        f"{TYPE} exceeded"
    )
    waiting = eventually(
        lambda: (
            j
            if (j := custom.get_namespaced_custom_object(*ray_api, "ray2")).get("status")
            else None
        )
    )
    assert waiting["spec"]["suspend"] is True
    assert waiting["status"] == {"jobDeploymentStatus": "Suspended"}
    clusters = custom.list_namespaced_custom_object("ray.io", "v1", b, "rayclusters")["items"]
    assert [c["metadata"]["labels"]["ray.io/originated-from-cr-name"] for c in clusters] == ["ray1"]


def test_a_disabled_team_admits_nothing_new(
    world: KubeWorld, governed: ApiServer, core: Any, custom: Any
) -> None:
    batch: Any = client.BatchV1Api(core.api_client)
    b = "hyperpod-ns-team-b"
    disabled = TeamQuota(
        quota_id="qb0000000001",
        name="team-b-quota",
        team="team-b",
        resources=(QuotaResource(TYPE, count=1),),
        strategy="Lend",
        borrow_limit_percent=100,
        active=False,
    )
    world.sync_task_governance(
        governed.cluster, POLICY, [team("team-a", "LendAndBorrow", "qa0000000001"), disabled]
    )
    batch.create_namespaced_job(b, job("late", "team-b", gpus=0))
    wl = eventually(lambda: pending_with(custom, b, "late", "inactive"))
    assert cond(wl, "QuotaReserved") == {
        "status": "False",
        "reason": "Inadmissible",
        "message": "ClusterQueue hyperpod-ns-team-b-clusterqueue is inactive",
    }
    cq = custom.get_cluster_custom_object(
        *KUEUE, "clusterqueues", "hyperpod-ns-team-b-clusterqueue"
    )
    assert cond(cq, "Active") == {
        "status": "False",
        "reason": "Stopped",
        "message": "The ClusterQueue is stopped",
    }
    # what it already runs keeps running (stopPolicy Hold, not HoldAndDrain)
    assert admitted(custom, b, "ray1") is not None


def test_fair_share_weights_decide_who_borrows_first(world: KubeWorld) -> None:
    """Teams x (weight 1) and y (weight 10) both wait to borrow what team l lends; x asked
    first, but with FairShare Enabled the freed quota goes to y, whose weighted share stays
    lower (API_SchedulerConfig.html FairShare; Kueue fair sharing)."""
    name = "t-kueue-fair"
    world.start_cluster(name)
    server = world.api_server(name)
    try:
        server.sync_nodes(
            [
                SimNode(f"i-0c{n:015x}", "gpu", TYPE, "Running", "us-east-1a", "hp")
                for n in (1, 2, 3, 4)
            ]
        )
        world.install(name, "amazon-sagemaker-hyperpod-taskgovernance")

        def quota(team_name: str, count: int, strategy: str, weight: int) -> TeamQuota:
            return TeamQuota(
                quota_id=f"q{team_name}00000000000"[:12],
                name=f"{team_name}-quota",
                team=team_name,
                resources=(QuotaResource(TYPE, count=count),),
                strategy=strategy,
                borrow_limit_percent=200,
                fair_share_weight=weight,
            )

        world.sync_task_governance(
            name,
            POLICY,
            [
                quota("l", 2, "Lend", 1),
                quota("x", 1, "LendAndBorrow", 1),
                quota("y", 1, "LendAndBorrow", 10),
            ],
        )
        api = config.new_client_from_config_dict(server.kubeconfig())  # type: ignore[no-untyped-call]
        batch: Any = client.BatchV1Api(api)
        custom: Any = client.CustomObjectsApi(api)
        for team_name, jobs in (("l", ("l1", "l2")), ("x", ("x1",)), ("y", ("y1",))):
            for job_name in jobs:
                batch.create_namespaced_job(f"hyperpod-ns-{team_name}", job(job_name, team_name))
                eventually(partial(admitted, custom, f"hyperpod-ns-{team_name}", job_name))
        batch.create_namespaced_job("hyperpod-ns-x", job("x2", "x"))
        eventually(lambda: pending_with(custom, "hyperpod-ns-x", "x2", "insufficient unused"))
        batch.create_namespaced_job("hyperpod-ns-y", job("y2", "y"))
        eventually(lambda: pending_with(custom, "hyperpod-ns-y", "y2", "insufficient unused"))
        batch.delete_namespaced_job("l2", "hyperpod-ns-l", propagation_policy="Background")
        eventually(lambda: admitted(custom, "hyperpod-ns-y", "y2"))
        x2 = workload(custom, "hyperpod-ns-x", "x2")
        assert (cond(x2, "QuotaReserved") or {})["status"] == "False"
        api.close()
    finally:
        world.stop_cluster(name)
