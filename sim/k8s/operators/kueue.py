"""Kueue (v0.12, as the HyperPod task-governance add-on runs it): job admission by quota.

A batch Job, HyperPodPyTorchJob or RayJob labelled `kueue.x-k8s.io/queue-name` is suspended
when it is created (Kueue's job webhook) and gets a Workload (`<kind>-<name>-<hash>`, owned by the job)
with one pod set per pod template. Kueue's scheduler then admits pending workloads, highest
priority first and oldest first within a priority (BestEffortFIFO), by the rules of
https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ and .../concepts/preemption/:

- a workload's LocalQueue names its ClusterQueue; the ClusterQueue's flavors (in order) are
  tried for each pod set: a flavor whose node labels the pod template's nodeSelector excludes
  is skipped; the first flavor that fits is taken (whenCanBorrow: Borrow), else one where
  preemption makes room (whenCanPreempt: TryNextFlavor);
- a flavor fits when each requested resource (pod requests x count) is within what is left:
  the ClusterQueue's own unused quota (nominalQuota - lendingLimit stays its own), plus what
  the cohort's members lend and do not use, up to nominalQuota + borrowingLimit;
- preemption: withinClusterQueue LowerPriority evicts lower-priority workloads of the same
  ClusterQueue; reclaimWithinCohort Any evicts workloads of other ClusterQueues that borrow,
  when the preemptor fits in its own nominal quota (reclaiming what it lent); candidates are
  taken other-queue first, lowest priority first, newest first, and the set is kept minimal.

What a reader sees, with Kueue's words (pkg/workload, pkg/scheduler, pkg/scheduler/preemption):
Workload conditions QuotaReserved, Admitted, Evicted, Preempted, Requeued, Finished; events
Pending, QuotaReserved, Admitted, Preempted, EvictedDueToPreempted on the Workload and
CreatedWorkload, Started, Stopped on the job; ClusterQueue and LocalQueue status counts and
flavor usage. Resources outside cpu, memory, nvidia.com/gpu and aws.amazon.com/neuron (EFA,
hugepages) are not counted, as the add-on's Kueue configuration leaves them out of quota.
Admission is immediate and an evicted job is stopped at once (its pods are deleted by its
controller), so a preemptor is admitted in the next cycle. MIG partitions
(`nvidia.com/mig-<profile>`) are counted like whole GPUs.

Pods and Deployments (the `pod` and `deployment` integrations, enabled in the manager
configuration; https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/ and .../run/deployment/):
the Deployment webhook copies the Deployment's queue-name and priority-class labels into its pod
template, so each of its pods is one plain Pod workload; the Pod webhook gives a pod labelled
with a queue, outside kube-system and kueue-system and not owned by a kind Kueue manages itself,
the scheduling gate `kueue.x-k8s.io/admission` and the label `kueue.x-k8s.io/managed: "true"`
(the API server then reports PodScheduled False, SchedulingGated). Its Workload
(`pod-<name>-<hash>`, owned by the pod) has one pod set `main` of count 1. Admitted, the gate is
removed and the flavor's node labels are added to its nodeSelector; evicted, the pod is marked
DisruptionTarget and deleted, and its ReplicaSet makes a new, gated one. A pod that ends
(Succeeded or Failed) finishes its Workload; a deleted pod's Workload goes with it (its owner).
Kueue's finalizer on managed pods (`kueue.x-k8s.io/managed`) is not reproduced.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from sim.k8s.controllers.base import Controller, Rule, condition, owner_ref, set_condition
from sim.k8s.quantity import parse, pod_requests
from sim.k8s.registry import ResourceType
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso, parse_iso

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

GROUP = "kueue.x-k8s.io"
WORKLOADS = "workloads.kueue.x-k8s.io"
CLUSTER_QUEUES = "clusterqueues.kueue.x-k8s.io"
LOCAL_QUEUES = "localqueues.kueue.x-k8s.io"
FLAVORS = "resourceflavors.kueue.x-k8s.io"
PRIORITY_CLASSES = "workloadpriorityclasses.kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID = "kueue.x-k8s.io/job-uid"
COUNTED = ("cpu", "memory", "nvidia.com/gpu", "aws.amazon.com/neuron")
MIG_PREFIX = "nvidia.com/mig-"
POD_GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
SYSTEM_NAMESPACES = frozenset({"kube-system", "kueue-system"})
# owners whose pods Kueue manages through the owner (plain_pods.md: "Pods that belong to other
# API resources managed by Kueue are excluded from being queued by pod integration")
MANAGED_OWNERS = frozenset(
    {"Job", "HyperPodPyTorchJob", "RayJob", "RayCluster", "JobSet", "PyTorchJob", "MPIJob"}
)
SOURCE_ADMISSION = "kueue-admission"
SOURCE_JOB = "kueue-job-controller"
# pkg/scheduler/preemption HumanReadablePreemptionReasons
REASONS = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
}


# ---- the job kinds Kueue manages ------------------------------------------------------------


@dataclass(frozen=True)
class JobKind:
    key: str
    api_version: str
    kind: str
    suspended: Callable[[Obj], bool]
    set_suspended: Callable[[Obj, bool], None]
    templates: Callable[[Obj], list[tuple[str, int, Obj]]]  # (pod set, count, pod template)
    finished: Callable[[Obj], tuple[bool, bool, str]]  # (finished, succeeded, message)


def _cond_true(obj: Obj, ctype: str) -> Obj | None:
    c = condition(obj, ctype)
    return c if c is not None and c.get("status") == "True" else None


def _batch_templates(job: Obj) -> list[tuple[str, int, Obj]]:
    spec = job["spec"]
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    count = min(parallelism, int(completions)) if completions is not None else parallelism
    return [("main", count, spec["template"])]


def _batch_finished(job: Obj) -> tuple[bool, bool, str]:
    if _cond_true(job, "Complete"):
        return True, True, "Job finished successfully"
    failed = _cond_true(job, "Failed")
    if failed:
        return True, False, str(failed.get("message") or "Job failed")
    return False, False, ""


def _set_batch_suspend(job: Obj, value: bool) -> None:
    job["spec"]["suspend"] = value


def _hp_templates(job: Obj) -> list[tuple[str, int, Obj]]:
    return [
        (str(s["name"]).lower(), int(s.get("replicas", 0)), s.get("template") or {})
        for s in job["spec"].get("replicaSpecs") or []
    ]


def _hp_finished(job: Obj) -> tuple[bool, bool, str]:
    if _cond_true(job, "Completed"):
        return True, True, "Job finished successfully"
    failed = _cond_true(job, "Failed")
    if failed:
        return True, False, str(failed.get("message") or "Job failed")
    return False, False, ""


def _set_hp_suspend(job: Obj, value: bool) -> None:
    job["spec"].setdefault("runPolicy", {})["suspend"] = value


def _ray_templates(job: Obj) -> list[tuple[str, int, Obj]]:
    """Kueue's RayJob pod sets: `head` (1) and one per worker group (its replicas)."""
    spec = job["spec"].get("rayClusterSpec") or {}
    sets = [("head", 1, (spec.get("headGroupSpec") or {}).get("template") or {})]
    for group in spec.get("workerGroupSpecs") or []:
        count = int(group.get("replicas", group.get("minReplicas", 0)) or 0)
        count *= int(group.get("numOfHosts") or 1)
        sets.append((str(group["groupName"]).lower(), count, group.get("template") or {}))
    return sets


def _ray_finished(job: Obj) -> tuple[bool, bool, str]:
    status = job.get("status") or {}
    deployment = status.get("jobDeploymentStatus")
    if deployment == "Complete":
        return (
            True,
            status.get("jobStatus") == "SUCCEEDED",
            str(status.get("message") or "Job finished successfully"),
        )
    if deployment == "Failed":
        return True, False, str(status.get("message") or "Job failed")
    return False, False, ""


def _set_ray_suspend(job: Obj, value: bool) -> None:
    job["spec"]["suspend"] = value


JOB_KINDS = (
    JobKind(
        "jobs.batch",
        "batch/v1",
        "Job",
        lambda j: bool(j["spec"].get("suspend")),
        _set_batch_suspend,
        _batch_templates,
        _batch_finished,
    ),
    JobKind(
        "hyperpodpytorchjobs.sagemaker.amazonaws.com",
        "sagemaker.amazonaws.com/v1",
        "HyperPodPyTorchJob",
        lambda j: bool((j["spec"].get("runPolicy") or {}).get("suspend")),
        _set_hp_suspend,
        _hp_templates,
        _hp_finished,
    ),
    JobKind(
        "rayjobs.ray.io",
        "ray.io/v1",
        "RayJob",
        lambda j: bool(j["spec"].get("suspend")),
        _set_ray_suspend,
        _ray_templates,
        _ray_finished,
    ),
)
BY_KEY = {k.key: k for k in JOB_KINDS}


def _pod_templates(job: Obj, kind: JobKind) -> list[Obj]:
    if kind.kind == "Job":
        return [job["spec"]["template"]]
    if kind.kind == "RayJob":
        spec = job["spec"].setdefault("rayClusterSpec", {})
        head = spec.setdefault("headGroupSpec", {}).setdefault("template", {})
        return [head] + [g.setdefault("template", {}) for g in spec.get("workerGroupSpecs") or []]
    return [s.setdefault("template", {}) for s in job["spec"].get("replicaSpecs") or []]


def workload_name(kind: str, name: str, uid: str) -> str:
    """Kueue's GetWorkloadNameForOwnerWithGVK: `<kind>-<owner name>-<5 hex of a hash>`."""
    digest = hashlib.sha1(f"{kind.lower()}/{name}/{uid}".encode()).hexdigest()[:5]
    prefix = f"{kind.lower()}-{name}"[: 253 - 6]
    return f"{prefix}-{digest}"


def fmt(resource: str, value: float) -> str | int:
    """A quantity as Kueue's status shows it."""
    if resource == "cpu":
        return int(value) if value == int(value) else f"{math.ceil(value * 1000)}m"
    if resource == "memory":
        for unit, size in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if value and value % size == 0:
                return f"{int(value // size)}{unit}"
        return str(int(value))
    return int(value) if value == int(value) else str(value)


def counted(resource: str) -> bool:
    """Whether Kueue's quota counts a resource (MIG partitions are GPUs too)."""
    return resource in COUNTED or resource.startswith(MIG_PREFIX)


def manager_config(server: ApiServer) -> dict[str, Any]:
    """Kueue's manager configuration (`kueue-system/kueue-manager-config`), {} without one."""
    cm = server.store.get("configmaps", "kueue-system", "kueue-manager-config")
    text = ((cm or {}).get("data") or {}).get("controller_manager_config.yaml") or ""
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    return config if isinstance(config, dict) else {}


def frameworks(server: ApiServer) -> set[str]:
    """The integrations Kueue's manager configuration enables (its default without one)."""
    listed = (manager_config(server).get("integrations") or {}).get("frameworks")
    if not isinstance(listed, list):
        return {"batch/job"}
    return {str(f) for f in listed}


def _pod_managed(server: ApiServer, pod: Obj) -> bool:
    meta = pod["metadata"]
    if not (meta.get("labels") or {}).get(QUEUE_LABEL):
        return False
    if (meta.get("namespace") or "default") in SYSTEM_NAMESPACES:
        return False
    if any(r.get("kind") in MANAGED_OWNERS for r in meta.get("ownerReferences") or []):
        return False
    return "pod" in frameworks(server)


def admission_webhook(server: ApiServer) -> object:
    """Kueue's webhooks: a managed job labelled with a queue starts suspended; a Deployment's
    queue and priority labels go to its pod template; a managed pod starts gated."""

    def admit(rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if not server.api.registry.has_crd(GROUP, "workloads"):
            return
        labels = obj["metadata"].get("labels") or {}
        kind = BY_KEY.get(rt.key)
        if kind is not None:
            if old is None and labels.get(QUEUE_LABEL):
                kind.set_suspended(obj, True)
            return
        if rt.key == "deployments.apps":
            if labels.get(QUEUE_LABEL) and "deployment" in frameworks(server):
                template = obj.setdefault("spec", {}).setdefault("template", {})
                meta = template.setdefault("metadata", {})
                tlabels = meta.setdefault("labels", {})
                tlabels[QUEUE_LABEL] = labels[QUEUE_LABEL]
                if labels.get(PRIORITY_LABEL):
                    tlabels[PRIORITY_LABEL] = labels[PRIORITY_LABEL]
            return
        if rt.key != "pods" or old is not None or not _pod_managed(server, obj):
            return
        obj["metadata"].setdefault("labels", {})[MANAGED_LABEL] = "true"
        gates = obj.setdefault("spec", {}).setdefault("schedulingGates", [])
        if not any(g.get("name") == POD_GATE for g in gates):
            gates.append({"name": POD_GATE})
        # the pod strategy's PrepareForCreate: a gated pod is reported as such
        status = obj.setdefault("status", {})
        set_condition(
            status,
            "PodScheduled",
            "False",
            "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates",
        )

    return admit


# ---- quota arithmetic -----------------------------------------------------------------------


@dataclass
class Quota:
    nominal: float
    borrowing: float | None  # None: no limit
    lending: float | None  # None: all of nominal may be lent

    @property
    def guaranteed(self) -> float:
        return self.nominal - self.lending if self.lending is not None else 0.0

    @property
    def lendable(self) -> float:
        return self.lending if self.lending is not None else self.nominal


@dataclass
class Queue:
    name: str
    obj: Obj
    cohort: str | None
    flavors: list[str]
    quotas: dict[tuple[str, str], Quota]  # (flavor, resource) -> quota
    covered: set[str]
    stopped: bool
    within: str
    reclaim: str
    usage: dict[tuple[str, str], float] = field(default_factory=dict)


def _parse_queue(cq: Obj) -> Queue:
    spec = cq.get("spec") or {}
    quotas: dict[tuple[str, str], Quota] = {}
    flavors: list[str] = []
    covered: set[str] = set()
    for group in spec.get("resourceGroups") or []:
        covered.update(group.get("coveredResources") or [])
        for flavor in group.get("flavors") or []:
            flavors.append(flavor["name"])
            for res in flavor.get("resources") or []:
                quotas[(flavor["name"], res["name"])] = Quota(
                    parse(res.get("nominalQuota", 0)),
                    parse(res["borrowingLimit"]) if res.get("borrowingLimit") is not None else None,
                    parse(res["lendingLimit"]) if res.get("lendingLimit") is not None else None,
                )
    preemption = spec.get("preemption") or {}
    return Queue(
        name=cq["metadata"]["name"],
        obj=cq,
        cohort=spec.get("cohort") or None,
        flavors=flavors,
        quotas=quotas,
        covered=covered,
        stopped=(spec.get("stopPolicy") or "None") != "None",
        within=preemption.get("withinClusterQueue") or "Never",
        reclaim=preemption.get("reclaimWithinCohort") or "Never",
    )


class Snapshot:
    """The ClusterQueues and their reserved usage during one scheduling cycle."""

    def __init__(self, queues: dict[str, Queue]) -> None:
        self.queues = queues

    def members(self, queue: Queue) -> list[Queue]:
        if queue.cohort is None:
            return [queue]
        return [q for q in self.queues.values() if q.cohort == queue.cohort]

    def add(self, queue: Queue, usage: dict[tuple[str, str], float], sign: float = 1.0) -> None:
        for key, value in usage.items():
            queue.usage[key] = queue.usage.get(key, 0.0) + sign * value

    def available(self, queue: Queue, flavor: str, resource: str) -> float:
        quota = queue.quotas.get((flavor, resource))
        if quota is None:
            return 0.0
        used = queue.usage.get((flavor, resource), 0.0)
        if queue.cohort is None:
            return quota.nominal - used
        pool = 0.0
        pool_used = 0.0
        for member in self.members(queue):
            q = member.quotas.get((flavor, resource))
            if q is None:
                continue
            pool += q.lendable
            pool_used += max(0.0, member.usage.get((flavor, resource), 0.0) - q.guaranteed)
        left = max(0.0, quota.guaranteed - used) + max(0.0, pool - pool_used)
        if quota.borrowing is not None:
            left = min(left, quota.nominal + quota.borrowing - used)
        return left

    def maximum(self, queue: Queue, flavor: str, resource: str) -> float:
        quota = queue.quotas.get((flavor, resource))
        if quota is None:
            return 0.0
        if quota.borrowing is not None or queue.cohort is None:
            return quota.nominal + (quota.borrowing or 0.0)
        others = sum(
            (m.quotas.get((flavor, resource)) or Quota(0, None, None)).lendable
            for m in self.members(queue)
            if m is not queue
        )
        return quota.nominal + others

    def share(self, queue: Queue, extra: dict[tuple[str, str], float]) -> float:
        """Kueue's dominant resource share of `queue` with `extra` usage added: per resource,
        what it borrows over what its cohort lends, the largest, x1000 / its fair-sharing
        weight (https://kueue.sigs.k8s.io/docs/concepts/preemption/#fair-sharing)."""
        weight = parse(((queue.obj.get("spec") or {}).get("fairSharing") or {}).get("weight", 1))
        borrowed: dict[str, float] = {}
        lendable: dict[str, float] = {}
        for (flavor, res), quota in queue.quotas.items():
            used = queue.usage.get((flavor, res), 0.0) + extra.get((flavor, res), 0.0)
            borrowed[res] = borrowed.get(res, 0.0) + max(0.0, used - quota.nominal)
            for member in self.members(queue):
                q = member.quotas.get((flavor, res))
                if q is not None and member is not queue:
                    lendable[res] = lendable.get(res, 0.0) + q.lendable
        ratios = [borrowed[r] / lendable[r] for r in borrowed if borrowed[r] and lendable.get(r)]
        if not ratios:
            return 0.0
        return math.inf if weight == 0 else max(ratios) * 1000 / weight

    def borrowing(self, queue: Queue, flavor: str, resource: str) -> float:
        quota = queue.quotas.get((flavor, resource))
        used = queue.usage.get((flavor, resource), 0.0)
        return max(0.0, used - (quota.nominal if quota else 0.0))


# ---- the controller -------------------------------------------------------------------------


@dataclass
class Assignment:
    flavors: dict[str, str]  # pod set -> flavor
    usage: dict[tuple[str, str], float]  # (flavor, resource) -> amount
    per_set: dict[str, dict[str, float]]  # pod set -> resource -> amount


class KueueController(Controller):
    name = "kueue-controller-manager"

    def __init__(self, server: ApiServer) -> None:
        super().__init__(server)
        self._cycle_pending = False
        # workload uid -> the order of its quota reservations: ties of reservation time (the
        # API keeps seconds) go to the more recently admitted, as Kueue's in-memory times do
        self.reserved_seq: dict[str, int] = {}
        self._seq = 0

    def active(self) -> bool:
        return self.api.registry.has_crd(GROUP, "workloads")

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                f"workload-of-{kind.kind}",
                kind.key,
                lambda j: (
                    bool((j["metadata"].get("labels") or {}).get(QUEUE_LABEL))
                    and not j["metadata"].get("deletionTimestamp")
                ),
                self.reconcile_job,
            )
            for kind in JOB_KINDS
        ] + [
            Rule(
                "workload-of-Pod",
                "pods",
                lambda p: (
                    (p["metadata"].get("labels") or {}).get(MANAGED_LABEL) == "true"
                    and not p["metadata"].get("deletionTimestamp")
                ),
                self.reconcile_pod,
            )
        ]

    def watched(self) -> set[str]:
        return {k.key for k in JOB_KINDS} | {
            "pods",
            WORKLOADS,
            CLUSTER_QUEUES,
            LOCAL_QUEUES,
            PRIORITY_CLASSES,
            FLAVORS,
        }

    def on_event(self, event: WatchEvent) -> None:
        super().on_event(event)
        if (
            event.key == "pods"
            and (event.obj["metadata"].get("labels") or {}).get(MANAGED_LABEL) != "true"
        ):
            return  # other pods change nothing Kueue admits
        if self.active() and not self.server.stopping:
            self._soon()

    def resync(self) -> None:
        self.cycle()

    def _soon(self) -> None:
        if self._cycle_pending:
            return
        self._cycle_pending = True

        def run() -> None:
            self._cycle_pending = False
            if not self.server.stopping and self.active():
                self.cycle()

        asyncio.get_running_loop().call_soon(run)

    # -- jobs and their workloads ----------------------------------------------------------

    def _workload_of(self, job: Obj) -> Obj | None:
        ns = job["metadata"].get("namespace") or ""
        uid = job["metadata"]["uid"]
        for wl in self.store.items(WORKLOADS, ns):
            if any(r.get("uid") == uid for r in wl["metadata"].get("ownerReferences") or []):
                return wl
        return None

    def reconcile_job(self, job: Obj) -> None:
        if not self.active():
            return
        kind = BY_KEY[self._key_of(job)]
        wl = self._workload_of(job)
        done, succeeded, message = kind.finished(job)
        if wl is None:
            if done:
                return
            wl = self._create_workload(job, kind)
            if wl is None:
                return
        if done:
            if not _cond_true(wl, "Finished"):
                status = clone(wl.get("status") or {})
                set_condition(
                    status, "Finished", "True", "Succeeded" if succeeded else "Failed", message
                )
                wl["status"] = status
                self.update_status(WORKLOADS, wl)
            return
        admitted = _cond_true(wl, "Admitted") is not None
        if admitted and kind.suspended(job):
            self._start(job, kind, wl)
        elif not admitted and not kind.suspended(job):
            self._stop(job, kind, wl)

    def _key_of(self, job: Obj) -> str:
        for kind in JOB_KINDS:
            if job.get("kind") == kind.kind:
                return kind.key
        raise KeyError(job.get("kind"))

    def _create_workload(self, job: Obj, kind: JobKind) -> Obj | None:
        return self._new_workload(
            job,
            [
                {"name": name, "count": count, "template": clone(template)}
                for name, count, template in kind.templates(job)
            ],
        )

    def _new_workload(self, job: Obj, pod_sets: list[Obj]) -> Obj | None:
        meta = job["metadata"]
        labels = meta.get("labels") or {}
        priority = 0
        spec: dict[str, Any] = {
            "active": True,
            "queueName": labels[QUEUE_LABEL],
            "podSets": pod_sets,
        }
        class_name = labels.get(PRIORITY_LABEL)
        if class_name:
            wpc = self.store.get(PRIORITY_CLASSES, "", class_name)
            if wpc is None:
                # jobframework: the workload cannot be composed without its priority class
                self.server.events.record(
                    job,
                    "ErrWorkloadCompose",
                    f'workloadpriorityclasses.{GROUP} "{class_name}" not found',
                    "Warning",
                    SOURCE_JOB,
                )
                return None
            priority = int(wpc.get("value", 0))
            spec.update(
                priorityClassName=class_name,
                priorityClassSource=f"{GROUP}/workloadpriorityclass",
            )
        spec["priority"] = priority
        name = workload_name(job["kind"], meta["name"], meta["uid"])
        wl = {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {JOB_UID: meta["uid"]},
                "ownerReferences": [owner_ref(job)],
            },
            "spec": spec,
        }
        created = self.create(WORKLOADS, wl)
        self.server.events.record(
            job,
            "CreatedWorkload",
            f"Created Workload: {meta['namespace']}/{name}",
            "Normal",
            SOURCE_JOB,
        )
        return created

    # -- plain pods (and so a Deployment's pods) ---------------------------------------------

    def reconcile_pod(self, pod: Obj) -> None:
        if not self.active():
            return
        wl = self._workload_of(pod)
        phase = (pod.get("status") or {}).get("phase")
        done = phase in ("Succeeded", "Failed")
        if wl is None:
            if done:
                return
            spec = clone(pod["spec"])
            for key in ("schedulingGates", "nodeName"):
                spec.pop(key, None)
            template = {"metadata": {"labels": dict(pod["metadata"].get("labels") or {})}}
            wl = self._new_workload(
                pod, [{"name": "main", "count": 1, "template": {**template, "spec": spec}}]
            )
            if wl is None:
                return
        if done:
            if not _cond_true(wl, "Finished"):
                status = clone(wl.get("status") or {})
                message = str((pod.get("status") or {}).get("message") or "")
                set_condition(
                    status,
                    "Finished",
                    "True",
                    "Succeeded" if phase == "Succeeded" else "Failed",
                    message or ("Pod succeeded" if phase == "Succeeded" else "Pod failed"),
                )
                wl["status"] = status
                self.update_status(WORKLOADS, wl)
            return
        admitted = _cond_true(wl, "Admitted") is not None
        gated = any(g.get("name") == POD_GATE for g in pod["spec"].get("schedulingGates") or [])
        if admitted and gated:
            self._ungate(pod, wl)
        elif not admitted and not gated:
            self._stop_pod(pod, wl)

    def _ungate(self, pod: Obj, wl: Obj) -> None:
        admission = (wl.get("status") or {}).get("admission") or {}
        assignment: Obj = next(iter(admission.get("podSetAssignments") or []), {})
        flavor = next(iter((assignment.get("flavors") or {}).values()), None)
        spec = pod["spec"]
        gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != POD_GATE]
        if gates:
            spec["schedulingGates"] = gates
        else:
            spec.pop("schedulingGates", None)
        if flavor:
            spec["nodeSelector"] = {
                **(spec.get("nodeSelector") or {}),
                **self._flavor_labels(flavor),
            }
        self.update("pods", pod)
        self.server.events.record(
            pod,
            "Started",
            f"Admitted by clusterQueue {admission.get('clusterQueue')}",
            "Normal",
            SOURCE_JOB,
        )

    def _stop_pod(self, pod: Obj, wl: Obj) -> None:
        """Kueue stops a plain pod by deleting it, marked DisruptionTarget with the reason."""
        evicted = _cond_true(wl, "Evicted")
        message = str(evicted.get("message")) if evicted else "Not admitted by cluster queue"
        status = clone(pod.get("status") or {})
        set_condition(
            status,
            "DisruptionTarget",
            "True",
            "EvictedDueTo" + str((evicted or {}).get("reason") or "Preempted"),
            message,
        )
        pod["status"] = status
        self.update_status("pods", pod)
        self.server.events.record(pod, "Stopped", message, "Normal", SOURCE_JOB)
        current = self.store.get("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
        if current is not None:
            self.delete("pods", current)

    def _flavor_labels(self, flavor: str) -> dict[str, str]:
        rf = self.store.get(FLAVORS, "", flavor)
        return dict(((rf or {}).get("spec") or {}).get("nodeLabels") or {})

    def _start(self, job: Obj, kind: JobKind, wl: Obj) -> None:
        admission = (wl.get("status") or {}).get("admission") or {}
        flavors = {
            a["name"]: next(iter((a.get("flavors") or {}).values()), None)
            for a in admission.get("podSetAssignments") or []
        }
        names = [name for name, _, _ in kind.templates(job)]
        for name, template in zip(names, _pod_templates(job, kind), strict=False):
            flavor = flavors.get(name)
            if flavor:
                spec = template.setdefault("spec", {})
                spec["nodeSelector"] = {
                    **(spec.get("nodeSelector") or {}),
                    **self._flavor_labels(flavor),
                }
        kind.set_suspended(job, False)
        self.update(kind.key, job)
        self.server.events.record(
            job,
            "Started",
            f"Admitted by clusterQueue {admission.get('clusterQueue')}",
            "Normal",
            SOURCE_JOB,
        )

    def _stop(self, job: Obj, kind: JobKind, wl: Obj) -> None:
        originals = {p["name"]: p.get("template") or {} for p in wl["spec"].get("podSets") or []}
        names = [name for name, _, _ in kind.templates(job)]
        for name, template in zip(names, _pod_templates(job, kind), strict=False):
            original = ((originals.get(name) or {}).get("spec") or {}).get("nodeSelector")
            spec = template.setdefault("spec", {})
            if original:
                spec["nodeSelector"] = dict(original)
            else:
                spec.pop("nodeSelector", None)
        kind.set_suspended(job, True)
        self.update(kind.key, job)
        evicted = _cond_true(wl, "Evicted")
        message = str(evicted.get("message")) if evicted else "Not admitted by cluster queue"
        self.server.events.record(job, "Stopped", message, "Normal", SOURCE_JOB)

    # -- the scheduler -----------------------------------------------------------------------

    def cycle(self) -> None:
        queues = {
            cq["metadata"]["name"]: _parse_queue(cq) for cq in self.store.items(CLUSTER_QUEUES)
        }
        snap = Snapshot(queues)
        local = {
            (lq["metadata"]["namespace"], lq["metadata"]["name"]): lq
            for lq in self.store.items(LOCAL_QUEUES)
        }
        workloads = [
            w for w in self.store.items(WORKLOADS) if not w["metadata"].get("deletionTimestamp")
        ]
        pending: list[Obj] = []
        for wl in workloads:
            if _cond_true(wl, "Finished"):
                continue
            admission = (wl.get("status") or {}).get("admission")
            if admission:
                queue = queues.get(admission.get("clusterQueue"))
                if queue is not None:
                    snap.add(queue, _usage_of(admission))
            elif wl["spec"].get("active", True):
                pending.append(wl)
        # pkg/scheduler entryOrdering: workloads that fit in their queue's own quota go before
        # those that would borrow; with fair sharing, borrowers by the dominant resource share
        # their queue would have (lower first, weighted); then higher priority, then older
        fair = self._fair_sharing()
        borrows = {w["metadata"]["uid"]: self._would_borrow(w, snap, local, fair) for w in pending}
        pending.sort(
            key=lambda w: (
                *borrows[w["metadata"]["uid"]],
                -int(w["spec"].get("priority") or 0),
                w["metadata"]["creationTimestamp"],
                w["metadata"]["name"],
            )
        )
        for wl in pending:
            self._try_admit(wl, snap, local, workloads)
        self._queue_status(snap, local)

    def _fair_sharing(self) -> bool:
        return bool((manager_config(self.server).get("fairSharing") or {}).get("enable"))

    def _would_borrow(
        self, wl: Obj, snap: Snapshot, local: dict[tuple[str, str], Obj], fair: bool
    ) -> tuple[bool, float]:
        """(would it borrow, its queue's dominant resource share after it when fair sharing)."""
        lq = local.get((wl["metadata"]["namespace"], wl["spec"].get("queueName") or ""))
        queue = snap.queues.get(((lq or {}).get("spec") or {}).get("clusterQueue") or "")
        if queue is None:
            return False, 0.0
        assignment, _, target = self._assign(wl, queue, snap)
        if assignment is not None:
            usage = assignment.usage
        elif target is not None:
            usage = {(target[1], res): amount for res, amount in target[2].items()}
        else:
            return False, 0.0
        borrows = any(
            queue.usage.get(key, 0.0) + amount
            > (queue.quotas.get(key) or Quota(0, None, None)).nominal
            for key, amount in usage.items()
        )
        if not borrows or not fair:
            return borrows, 0.0
        return True, snap.share(queue, usage)

    def _set_pending(self, wl: Obj, reason: str, message: str) -> None:
        status = clone(wl.get("status") or {})
        before = condition({"status": status}, "QuotaReserved")
        set_condition(status, "QuotaReserved", "False", reason, message)
        if status == (wl.get("status") or {}):
            return
        wl["status"] = status
        self.update_status(WORKLOADS, wl)
        if before is None or before.get("message") != message:
            self.server.events.record(wl, "Pending", message, "Normal", SOURCE_ADMISSION)

    def _try_admit(
        self, wl: Obj, snap: Snapshot, local: dict[tuple[str, str], Obj], workloads: list[Obj]
    ) -> None:
        ns = wl["metadata"]["namespace"]
        lq_name = wl["spec"].get("queueName") or ""
        lq = local.get((ns, lq_name))
        if lq is None:
            self._set_pending(wl, "Inadmissible", f"LocalQueue {lq_name} doesn't exist")
            return
        cq_name = (lq.get("spec") or {}).get("clusterQueue") or ""
        queue = snap.queues.get(cq_name)
        if queue is None:
            self._set_pending(wl, "Inadmissible", f"ClusterQueue {cq_name} doesn't exist")
            return
        if queue.stopped:
            self._set_pending(wl, "Inadmissible", f"ClusterQueue {cq_name} is inactive")
            return
        assignment, message, flavor_for_preemption = self._assign(wl, queue, snap)
        if assignment is not None:
            self._admit(wl, queue, assignment, snap)
            return
        victims: list[tuple[Obj, str]] = []
        if flavor_for_preemption is not None:
            victims = self._victims(wl, queue, snap, workloads, flavor_for_preemption)
        if victims and flavor_for_preemption is not None:
            preemptor_uid = wl["metadata"]["uid"]
            job_uid = (wl["metadata"].get("labels") or {}).get(JOB_UID, "UNKNOWN")
            for victim, reason in victims:
                text = (
                    f"Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: "
                    f"{job_uid}) due to {REASONS[reason]}"
                )
                self._evict(victim, reason, text)
            # hold the room for the preemptor until the next cycle admits it
            _, flavor, request = flavor_for_preemption
            snap.add(queue, {(flavor, res): amount for res, amount in request.items()})
            message += f". Pending the preemption of {len(victims)} workload(s)"
            self._set_pending(wl, "Pending", message)
            self._soon()
            return
        self._set_pending(wl, "Pending", message)

    def _requests(self, wl: Obj) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for ps in wl["spec"].get("podSets") or []:
            per_pod = pod_requests((ps.get("template") or {}).get("spec") or {})
            count = int(ps.get("count", 1))
            out[ps["name"]] = {r: v * count for r, v in per_pod.items() if counted(r) and v > 0}
        return out

    def _assign(
        self, wl: Obj, queue: Queue, snap: Snapshot
    ) -> tuple[Assignment | None, str, tuple[str, str, dict[str, float]] | None]:
        """A flavor per pod set, or why not and the (pod set, flavor, request) that preemption
        could make room for."""
        flavors: dict[str, str] = {}
        usage: dict[tuple[str, str], float] = {}
        per_set: dict[str, dict[str, float]] = {}
        templates = {p["name"]: p.get("template") or {} for p in wl["spec"].get("podSets") or []}
        for ps_name, request in self._requests(wl).items():
            selector = ((templates.get(ps_name) or {}).get("spec") or {}).get("nodeSelector") or {}
            missing = sorted(r for r in request if r not in queue.covered)
            if missing:
                return (
                    None,
                    f"couldn't assign flavors to pod set {ps_name}: resource {missing[0]} "
                    "unavailable in ClusterQueue",
                    None,
                )
            reasons: list[str] = []
            chosen: str | None = None
            preemptible: str | None = None
            for flavor in queue.flavors:
                labels = self._flavor_labels(flavor)
                if any(k in labels and labels[k] != v for k, v in selector.items()):
                    reasons.append(f"flavor {flavor} doesn't match node affinity")
                    continue
                problem = None
                for res, amount in sorted(request.items()):
                    need = amount + usage.get((flavor, res), 0.0)
                    most = snap.maximum(queue, flavor, res)
                    if need > most:
                        problem = (
                            f"insufficient quota for {res} in flavor {flavor}, request > "
                            f"maximum capacity ({fmt(res, need)} > {fmt(res, most)})"
                        )
                        break
                    left = snap.available(queue, flavor, res)
                    if need > left:
                        quota = queue.quotas.get((flavor, res))
                        used = queue.usage.get((flavor, res), 0.0)
                        if (
                            quota is not None
                            and quota.borrowing is not None
                            and used + need > quota.nominal + quota.borrowing
                        ):
                            problem = f"borrowing limit for {res} in flavor {flavor} exceeded"
                        else:
                            problem = (
                                f"insufficient unused quota for {res} in flavor {flavor}, "
                                f"{fmt(res, need - left)} more needed"
                            )
                        if preemptible is None:
                            preemptible = flavor
                        break
                if problem is None:
                    chosen = flavor
                    break
                reasons.append(problem)
            if chosen is None:
                message = f"couldn't assign flavors to pod set {ps_name}: " + ", ".join(
                    reasons or ["no flavors"]
                )
                target = (ps_name, preemptible, request) if preemptible else None
                return None, message, target
            flavors[ps_name] = chosen
            per_set[ps_name] = request
            for res, amount in request.items():
                usage[(chosen, res)] = usage.get((chosen, res), 0.0) + amount
        return Assignment(flavors, usage, per_set), "", None

    def _fits(self, queue: Queue, snap: Snapshot, flavor: str, request: dict[str, float]) -> bool:
        return all(amount <= snap.available(queue, flavor, res) for res, amount in request.items())

    def _victims(
        self,
        wl: Obj,
        queue: Queue,
        snap: Snapshot,
        workloads: list[Obj],
        target: tuple[str, str, dict[str, float]],
    ) -> list[tuple[Obj, str]]:
        _, flavor, request = target
        priority = int(wl["spec"].get("priority") or 0)
        within_nominal = all(
            queue.usage.get((flavor, res), 0.0) + amount
            <= (queue.quotas.get((flavor, res)) or Quota(0, None, None)).nominal
            for res, amount in request.items()
        )
        candidates: list[tuple[tuple[int, int, float, int], Obj, str, Queue]] = []
        for other in workloads:
            admission = (other.get("status") or {}).get("admission")
            if not admission or _cond_true(other, "Finished") or other is wl:
                continue
            usage = _usage_of(admission)
            if not any(f == flavor and res in request for f, res in usage):
                continue
            owner = snap.queues.get(admission.get("clusterQueue"))
            if owner is None:
                continue
            other_priority = int(other["spec"].get("priority") or 0)
            admitted_at = (
                parse_iso(
                    (condition(other, "QuotaReserved") or {}).get("lastTransitionTime") or now_iso()
                ).timestamp(),
                self.reserved_seq.get(other["metadata"]["uid"], 0),
            )
            if owner is queue:
                if queue.within == "LowerPriority" and other_priority < priority:
                    candidates.append(
                        (
                            (1, other_priority, -admitted_at[0], -admitted_at[1]),
                            other,
                            "InClusterQueue",
                            owner,
                        )
                    )
            elif (
                queue.cohort is not None
                and owner.cohort == queue.cohort
                and queue.reclaim in ("Any", "LowerPriority")
                and within_nominal
                and any(snap.borrowing(owner, flavor, res) > 0 for res in request)
                and (queue.reclaim == "Any" or other_priority < priority)
            ):
                candidates.append(
                    (
                        (0, other_priority, -admitted_at[0], -admitted_at[1]),
                        other,
                        "InCohortReclamation",
                        owner,
                    )
                )
        candidates.sort(key=lambda c: c[0])
        chosen: list[tuple[Obj, str, Queue, dict[tuple[str, str], float]]] = []
        for _, other, reason, owner in candidates:
            usage = _usage_of((other.get("status") or {})["admission"])
            snap.add(owner, usage, -1.0)
            chosen.append((other, reason, owner, usage))
            if self._fits(queue, snap, flavor, request):
                break
        else:
            for _, _, owner, usage in chosen:
                snap.add(owner, usage)
            return []
        # keep the set minimal: give back every victim the preemptor can do without
        for item in list(reversed(chosen[:-1])):
            _, _, owner, usage = item
            snap.add(owner, usage)
            if self._fits(queue, snap, flavor, request):
                chosen.remove(item)
            else:
                snap.add(owner, usage, -1.0)
        return [(other, reason) for other, reason, _, _ in chosen]

    def _admit(self, wl: Obj, queue: Queue, assignment: Assignment, snap: Snapshot) -> None:
        snap.add(queue, assignment.usage)
        self._seq += 1
        self.reserved_seq[wl["metadata"]["uid"]] = self._seq
        counts = {p["name"]: int(p.get("count", 1)) for p in wl["spec"].get("podSets") or []}
        status = clone(wl.get("status") or {})
        status["admission"] = {
            "clusterQueue": queue.name,
            "podSetAssignments": [
                {
                    "name": ps,
                    "flavors": {res: flavor for res in assignment.per_set[ps]} or {},
                    "resourceUsage": {
                        res: fmt(res, amount) for res, amount in assignment.per_set[ps].items()
                    },
                    "count": counts.get(ps, 1),
                }
                for ps, flavor in assignment.flavors.items()
            ],
        }
        message = f"Quota reserved in ClusterQueue {queue.name}"
        set_condition(status, "QuotaReserved", "True", "QuotaReserved", message)
        set_condition(status, "Admitted", "True", "Admitted", "The workload is admitted")
        for ctype in ("Evicted", "Preempted"):
            previous = condition({"status": status}, ctype)
            if previous is not None and previous.get("status") == "True":
                set_condition(
                    status,
                    ctype,
                    "False",
                    "QuotaReserved",
                    f"Previously: {previous.get('message')}",
                )
        queued = parse_iso(wl["metadata"]["creationTimestamp"]).timestamp()
        waited = max(0.0, parse_iso(now_iso()).timestamp() - queued)
        wl["status"] = status
        self.update_status(WORKLOADS, wl)
        self.server.events.record(
            wl,
            "QuotaReserved",
            f"{message}, wait time since queued was {waited:.0f}s",
            "Normal",
            SOURCE_ADMISSION,
        )
        self.server.events.record(
            wl,
            "Admitted",
            f"Admitted by ClusterQueue {queue.name}, wait time since reservation was 0s",
            "Normal",
            SOURCE_ADMISSION,
        )
        self._sync_owner(wl)

    def _evict(self, wl: Obj, reason: str, message: str) -> None:
        status = clone(wl.get("status") or {})
        status.pop("admission", None)  # its usage left the snapshot when it was chosen
        set_condition(status, "Evicted", "True", "Preempted", message)
        set_condition(status, "Preempted", "True", reason, message)
        set_condition(status, "QuotaReserved", "False", "Pending", message)
        set_condition(
            status, "Admitted", "False", "NoReservation", "The workload has no reservation"
        )
        set_condition(status, "Requeued", "True", "Preempted", message)
        wl["status"] = status
        self.update_status(WORKLOADS, wl)
        self.server.events.record(wl, "Preempted", message, "Normal", SOURCE_ADMISSION)
        self.server.events.record(wl, "EvictedDueToPreempted", message, "Normal", SOURCE_ADMISSION)
        self._sync_owner(wl)

    def _sync_owner(self, wl: Obj) -> None:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Pod":
                self.poke("pods", wl["metadata"]["namespace"], ref["name"])
            for kind in JOB_KINDS:
                if ref.get("kind") == kind.kind:
                    self.poke(kind.key, wl["metadata"]["namespace"], ref["name"])

    # -- queue status ------------------------------------------------------------------------

    def _queue_status(self, snap: Snapshot, local: dict[tuple[str, str], Obj]) -> None:
        counts: dict[str, dict[str, int]] = {}
        lq_counts: dict[tuple[str, str], dict[str, int]] = {}
        lq_usage: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
        for wl in self.store.items(WORKLOADS):
            if _cond_true(wl, "Finished"):
                continue
            key = (wl["metadata"]["namespace"], wl["spec"].get("queueName") or "")
            lq = local.get(key)
            cq = (lq.get("spec") or {}).get("clusterQueue") if lq else None
            admission = (wl.get("status") or {}).get("admission")
            kind = "reservingWorkloads" if admission else "pendingWorkloads"
            bucket = lq_counts.setdefault(key, {})
            bucket[kind] = bucket.get(kind, 0) + 1
            if admission:
                cq = admission.get("clusterQueue")
                for k, v in _usage_of(admission).items():
                    lq_usage.setdefault(key, {})[k] = lq_usage.setdefault(key, {}).get(k, 0.0) + v
                if _cond_true(wl, "Admitted"):
                    bucket["admittedWorkloads"] = bucket.get("admittedWorkloads", 0) + 1
            if cq:
                cq_bucket = counts.setdefault(cq, {})
                cq_bucket[kind] = cq_bucket.get(kind, 0) + 1
                if admission and _cond_true(wl, "Admitted"):
                    cq_bucket["admittedWorkloads"] = cq_bucket.get("admittedWorkloads", 0) + 1
        for queue in snap.queues.values():
            usage = [
                {
                    "name": flavor,
                    "resources": [
                        {
                            "name": res,
                            "total": fmt(res, queue.usage.get((flavor, res), 0.0)),
                            "borrowed": fmt(res, snap.borrowing(queue, flavor, res)),
                        }
                        for res in sorted(queue.covered)
                    ],
                }
                for flavor in queue.flavors
            ]
            c = counts.get(queue.name, {})
            status = clone(queue.obj.get("status") or {})
            status.update(
                pendingWorkloads=c.get("pendingWorkloads", 0),
                reservingWorkloads=c.get("reservingWorkloads", 0),
                admittedWorkloads=c.get("admittedWorkloads", 0),
                flavorsReservation=usage,
                flavorsUsage=usage,
            )
            if queue.stopped:
                set_condition(status, "Active", "False", "Stopped", "The ClusterQueue is stopped")
            else:
                set_condition(status, "Active", "True", "Ready", "Can admit new workloads")
            self._write_status(CLUSTER_QUEUES, queue.obj, status)
        for key, lq in local.items():
            cq_name = (lq.get("spec") or {}).get("clusterQueue") or ""
            c = lq_counts.get(key, {})
            flavor_usage: dict[str, list[dict[str, Any]]] = {}
            for (flavor, res), value in sorted((lq_usage.get(key) or {}).items()):
                flavor_usage.setdefault(flavor, []).append({"name": res, "total": fmt(res, value)})
            status = clone(lq.get("status") or {})
            status.update(
                pendingWorkloads=c.get("pendingWorkloads", 0),
                reservingWorkloads=c.get("reservingWorkloads", 0),
                admittedWorkloads=c.get("admittedWorkloads", 0),
                flavorUsage=[{"name": f, "resources": r} for f, r in flavor_usage.items()],
                flavorsReservation=[{"name": f, "resources": r} for f, r in flavor_usage.items()],
            )
            if cq_name in snap.queues:
                set_condition(
                    status, "Active", "True", "Ready", "Can submit new workloads to localQueue"
                )
            else:
                set_condition(
                    status,
                    "Active",
                    "False",
                    "ClusterQueueDoesNotExist",
                    "Can't submit new workloads to clusterQueue",
                )
            self._write_status(LOCAL_QUEUES, lq, status)

    def _write_status(self, key: str, obj: Obj, status: Obj) -> None:
        if status == (obj.get("status") or {}):
            return
        current = self.store.get(
            key, obj["metadata"].get("namespace") or "", obj["metadata"]["name"]
        )
        if current is None:
            return
        updated = clone(current)
        updated["status"] = status
        self.update_status(key, updated)


def _usage_of(admission: Obj) -> dict[tuple[str, str], float]:
    usage: dict[tuple[str, str], float] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for res, qty in (assignment.get("resourceUsage") or {}).items():
            flavor = flavors.get(res)
            if flavor is None:
                continue
            usage[(flavor, res)] = usage.get((flavor, res), 0.0) + parse(qty)
    return usage
