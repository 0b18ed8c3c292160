"""The HyperPod training operator: runs HyperPodPyTorchJob pods, restarts them after faults
(pod-level first, then whole-job, per runPolicy), detects hangs from log patterns, and fails
the job with the reason once the retry budget is spent. Active only once its CRD exists.

Elastic jobs (`spec.elasticPolicy`): the job runs as many replicas as the nodes its pods may go
to can hold, among the sizes the policy allows (`minReplicas + N * replicaIncrementStep` up to
`maxReplicas`, or `replicaDiscreteValues`): it starts at the largest that fits (at
`minReplicas`, its pods waiting, when not even that fits), grows when nodes appear or free up
(once the room has lasted `scalingTimeoutInSeconds`), and shrinks, never below
`minReplicas`, when nodes go away, replacing the pods it lost rather than spending the retry
budget on them. Each scaling is recorded in `status.elasticScalingStatus` (`targetReplicas`
per replica spec, `lastScalingTime`, `isFaultyPodScaleDown`) and as an event; the pods that
keep running are told in their log (the elastic agent restarts their workers at the new world
size from the last checkpoint) and the new pods start with it."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from sim.k8s.controllers.base import Controller, Rule, condition, set_condition, template_pod
from sim.k8s.controllers.nodes import HP, is_ready
from sim.k8s.controllers.scheduler import room_for
from sim.k8s.controllers.workloads import pod_ready
from sim.k8s.quantity import pod_requests
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso, parse_iso

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

KEY = "hyperpodpytorchjobs.sagemaker.amazonaws.com"
JOB_LABEL = "HPJob"
MASTER_PORT = "23456"


def terminal(job: Obj) -> bool:
    return any(
        (c := condition(job, t)) is not None and c.get("status") == "True"
        for t in ("Completed", "Failed")
    )


def _spec_cap(spec: Obj) -> int:
    return int(spec.get("maxReplicas") or spec.get("replicas", 0))


def elastic_sizes(job: Obj) -> list[int]:
    """The replica counts an elastic job may run at, smallest first ([] when not elastic)."""
    policy = job["spec"].get("elasticPolicy")
    if not policy:
        return []
    specs = job["spec"].get("replicaSpecs") or []
    low = max(int(policy.get("minReplicas") or 1), 1)
    high = min(
        int(policy.get("maxReplicas") or sum(_spec_cap(s) for s in specs)),
        sum(_spec_cap(s) for s in specs),
    )
    discrete = sorted({int(v) for v in policy.get("replicaDiscreteValues") or []})
    if discrete:
        sizes = [v for v in discrete if low <= v <= high]
    else:
        step = max(int(policy.get("replicaIncrementStep") or 1), 1)
        sizes = list(range(low, high + 1, step))
    return sizes or [low]


def split(job: Obj, total: int) -> dict[str, int]:
    """`total` replicas over the replica specs in order, each up to its maxReplicas."""
    counts: dict[str, int] = {}
    specs = job["spec"].get("replicaSpecs") or []
    left = total
    for n, spec in enumerate(specs):
        take = left if n == len(specs) - 1 else min(left, _spec_cap(spec))
        counts[spec["name"]] = max(take, 0)
        left -= counts[spec["name"]]
    return counts


class HyperPodTrainingOperator(Controller):
    name = "hyperpod-training-operator"

    def __init__(self, server: ApiServer) -> None:
        super().__init__(server)
        self.expected: dict[str, set[str]] = {}  # job uid -> uids of pods it should still have
        self.pod_restarts: dict[str, list[float]] = {}  # job uid -> times of pod-level restarts
        self.hung: dict[str, str] = {}  # pod uid -> why the log monitor calls it hung
        self.room_since: dict[str, float] = {}  # elastic job uid -> since when it could grow

    def active(self) -> bool:
        return self.api.registry.has_crd("sagemaker.amazonaws.com", "hyperpodpytorchjobs")

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "reconcile",
                KEY,
                lambda j: not j["metadata"].get("deletionTimestamp"),
                self.reconcile,
            )
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods", "nodes")

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key == "nodes":  # capacity changed: elastic jobs may grow or shrink
            return [
                (KEY, j["metadata"]["namespace"], j["metadata"]["name"])
                for j in self.store.items(KEY)
                if j["spec"].get("elasticPolicy") and not terminal(j)
            ]
        return self.owner_of(event, KEY, "HyperPodPyTorchJob") if event.key == "pods" else []

    # -- pods --------------------------------------------------------------------------

    def _layout(self, job: Obj, total: int | None = None) -> list[tuple[Obj, int, int]]:
        """(replica spec, index within it, global rank) for every pod the job runs: its
        replicaSpecs' replicas, or an elastic job's target (`total`, else its status's)."""
        target = ((job.get("status") or {}).get("elasticScalingStatus") or {}).get("targetReplicas")
        if total is not None:
            counts = split(job, total)
        elif elastic_sizes(job) and target:
            counts = {k: int(v) for k, v in target.items()}
        else:
            counts = {
                s["name"]: int(s.get("replicas", 0)) for s in job["spec"].get("replicaSpecs") or []
            }
        out = []
        rank = 0
        for spec in job["spec"].get("replicaSpecs") or []:
            for index in range(counts.get(spec["name"], 0)):
                out.append((spec, index, rank))
                rank += 1
        return out

    def _nproc(self, job: Obj, spec: Obj) -> int:
        raw = job["spec"].get("nprocPerNode", "auto")
        if isinstance(raw, int) or str(raw).isdigit():
            return int(raw)
        gpus = pod_requests((spec.get("template") or {}).get("spec") or {}).get("nvidia.com/gpu", 0)
        return int(gpus) or 1

    def _pod(self, job: Obj, spec: Obj, index: int, rank: int, world: int) -> Obj:
        name = job["metadata"]["name"]
        pod_name = f"{name}-{spec['name']}-{index}"
        layout = self._layout(job)
        first = layout[0][0]["name"] if layout else spec["name"]
        labels = {
            JOB_LABEL: name,
            "sagemaker.amazonaws.com/replica-spec": spec["name"],
            "sagemaker.amazonaws.com/replica-index": str(index),
            "sagemaker.amazonaws.com/rank": str(rank),
        }
        pod = template_pod(job, spec.get("template") or {}, pod_name, labels)
        pod["spec"]["restartPolicy"] = "Never"  # the operator, not the kubelet, restarts training
        pod["spec"].setdefault("hostname", pod_name)
        nproc = self._nproc(job, spec)
        env = [
            {"name": "MASTER_ADDR", "value": f"{name}-{first}-0"},
            {"name": "MASTER_PORT", "value": MASTER_PORT},
            {"name": "WORLD_SIZE", "value": str(world * nproc)},
            {"name": "NNODES", "value": str(world)},
            {"name": "NODE_RANK", "value": str(rank)},
            {"name": "RANK", "value": str(rank)},
            {"name": "NPROC_PER_NODE", "value": str(nproc)},
            {"name": "JOB_NAME", "value": name},
        ]
        for container in pod["spec"].get("containers") or []:
            have = {e.get("name") for e in container.get("env") or []}
            container["env"] = (container.get("env") or []) + [
                e for e in env if e["name"] not in have
            ]
        return pod

    # -- reconcile ---------------------------------------------------------------------

    def reconcile(self, job: Obj) -> None:
        uid = job["metadata"]["uid"]
        status = clone(job.get("status") or {})
        if terminal(job):
            self._clean(job, status)
            return
        if not status.get("startTime"):
            status["startTime"] = now_iso()
            set_condition(status, "Created", "True", "JobCreated", "HyperPodPyTorchJob is created")
            self.event(job, "JobCreated", "HyperPodPyTorchJob is created")
        run = job["spec"].get("runPolicy") or {}
        deadline = run.get("activeDeadlineSeconds")
        if deadline is not None and time.time() - parse_iso(
            status["startTime"]
        ).timestamp() > float(deadline):
            self._fail(
                job,
                status,
                "DeadlineExceeded",
                f"job ran longer than activeDeadlineSeconds={deadline}",
                [],
            )
            job["status"] = status
            self.update_status(KEY, job)
            return
        if run.get("suspend"):
            for pod in self.children("pods", job):
                self.delete("pods", pod)
            self.expected[uid] = set()
            set_condition(status, "Running", "False", "JobSuspended", "job is suspended")
            set_condition(status, "Suspended", "True", "JobSuspended", "job is suspended")
            job["status"] = status
            if status != (
                self.store.get(KEY, job["metadata"]["namespace"], job["metadata"]["name"]) or {}
            ).get("status"):
                self.update_status(KEY, job)
            return
        if condition({"status": status}, "Suspended"):
            set_condition(status, "Suspended", "False", "JobResumed", "job is resumed")
        pods = {
            p["metadata"]["name"]: p
            for p in self.children("pods", job)
            if not p["metadata"].get("deletionTimestamp")
        }
        expected = self.expected.setdefault(uid, set())
        if elastic_sizes(job):
            self._scale(job, status, pods, expected)
            job["status"] = status
        layout = self._layout(job)
        present = {p["metadata"]["uid"] for p in pods.values()}
        faults: list[tuple[str, str]] = []
        for pod in pods.values():
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                faults.append((pod["metadata"]["name"], self._why(pod)))
            elif pod["metadata"]["uid"] in self.hung:
                faults.append((pod["metadata"]["name"], self.hung[pod["metadata"]["uid"]]))
        for lost in expected - present:
            faults.append((lost, "pod was deleted"))
        if faults:
            if not self._restart(job, status, pods, faults):
                job["status"] = status
                self.update_status(KEY, job)
                return
            pods = {
                p["metadata"]["name"]: p
                for p in self.children("pods", job)
                if not p["metadata"].get("deletionTimestamp")
            }
        world = len(layout)
        for spec, index, rank in layout:
            pod_name = f"{job['metadata']['name']}-{spec['name']}-{index}"
            if pod_name not in pods:
                created = self.create("pods", self._pod(job, spec, index, rank, world))
                pods[pod_name] = created
        self.expected[uid] = {p["metadata"]["uid"] for p in pods.values()}
        ordered = [
            pods[f"{job['metadata']['name']}-{s['name']}-{i}"]
            for s, i, _ in layout
            if f"{job['metadata']['name']}-{s['name']}-{i}" in pods
        ]
        status["jobPods"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": p["metadata"]["name"],
                "namespace": p["metadata"]["namespace"],
                "uid": p["metadata"]["uid"],
            }
            for p in ordered
        ]
        if ordered:
            status["masterAddr"] = ordered[0]["metadata"]["name"]
            status["masterPort"] = MASTER_PORT
        phases = [(p.get("status") or {}).get("phase") for p in ordered]
        if world and len(ordered) == world and all(ph == "Succeeded" for ph in phases):
            set_condition(status, "Running", "False", "JobCompleted", "all pods completed")
            set_condition(
                status,
                "Completed",
                "True",
                "JobCompleted",
                f"HyperPodPyTorchJob {job['metadata']['name']} completed successfully",
            )
            status["completionTime"] = now_iso()
            self.event(job, "JobCompleted", "all pods completed successfully")
        elif world and len(ordered) == world and all(pod_ready(p) for p in ordered):
            set_condition(status, "Running", "True", "PodsRunning", f"{world} pod(s) running")
            if condition({"status": status}, "Restarting"):
                set_condition(status, "Restarting", "False", "PodsRunning", "job resumed")
            scaling = status.get("elasticScalingStatus")
            if scaling is not None and not scaling.get("podsScaled"):
                scaling.update(podsScaled=True, lastUpdated=now_iso())
        job["status"] = status
        if status != (
            self.store.get(KEY, job["metadata"]["namespace"], job["metadata"]["name"]) or {}
        ).get("status"):
            self.update_status(KEY, job)

    # -- elastic scaling ---------------------------------------------------------------

    def _healthy(self, pod: Obj) -> bool:
        """Not failed, and not on a node that is gone, not Ready or being deleted."""
        if (pod.get("status") or {}).get("phase") == "Failed":
            return False
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            return True
        node = self.store.get("nodes", "", node_name)
        return node is not None and is_ready(node) and not node["metadata"].get("deletionTimestamp")

    def _scale(self, job: Obj, status: Obj, pods: dict[str, Obj], expected: set[str]) -> None:
        """Set the elastic job's target to the largest allowed size its nodes hold now; on a
        scale-down, remove the pods beyond it and the lost ones (they are replaced, not
        counted as faults). Mutates `status`, `pods` and `expected`."""
        sizes = elastic_sizes(job)
        policy = job["spec"]["elasticPolicy"]
        scaling = status.get("elasticScalingStatus")
        current = sum(int(v) for v in ((scaling or {}).get("targetReplicas") or {}).values())
        candidates = [
            self._pod(job, spec, index, rank, sizes[-1])
            for spec, index, rank in self._layout(job, sizes[-1])
        ]
        own = frozenset(p["metadata"]["uid"] for p in pods.values())
        room = room_for(self.store, candidates, own)
        fitting = [size for size in sizes if size <= room]
        wanted = fitting[-1] if fitting else sizes[0]
        now = now_iso()
        if scaling is None:
            status["elasticScalingStatus"] = {
                "targetReplicas": split(job, wanted),
                "lastUpdated": now,
                "podsScaled": False,
                "isFaultyPodScaleDown": False,
                "consecutiveScalingFailures": 0,
            }
            self.event(
                job,
                "ElasticJobStarted",
                f"starting with {wanted} replica(s) (elastic {sizes[0]}-{sizes[-1]};"
                f" room for {room} now)",
            )
            return
        uid = job["metadata"]["uid"]
        if wanted == current:
            self.room_since.pop(uid, None)
            return
        if wanted > current:
            # scalingTimeoutInSeconds: how long the room must last before the job grows
            seen = self.room_since.setdefault(uid, time.monotonic())
            if time.monotonic() - seen < float(policy.get("scalingTimeoutInSeconds") or 0):
                return  # the periodic resync comes back
        self.room_since.pop(uid, None)
        faulty = False
        if wanted < current:
            keep = {
                f"{job['metadata']['name']}-{s['name']}-{i}"
                for s, i, _ in self._layout(job, wanted)
            }
            for name, pod in list(pods.items()):
                if name in keep and self._healthy(pod):
                    continue
                faulty = faulty or not self._healthy(pod)
                self.hung.pop(pod["metadata"]["uid"], None)
                expected.discard(pod["metadata"]["uid"])
                self.delete("pods", pod)
                del pods[name]
        verb = "up" if wanted > current else "down"
        scaling.update(
            targetReplicas=split(job, wanted),
            lastUpdated=now,
            lastScalingTime=now,
            podsScaled=False,
            isFaultyPodScaleDown=faulty,
        )
        message = (
            f"scaled {verb} from {current} to {wanted} replica(s): room for {room} on the"
            f" nodes (elastic {sizes[0]}-{sizes[-1]})"
        )
        self.event(job, f"ElasticScale{verb.capitalize()}", message)
        for pod in pods.values():
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            for container in pod["spec"].get("containers") or []:
                self.server.logs.write(
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    container["name"],
                    f"[sim] elastic scaling event: world size {current} -> {wanted} replica(s);"
                    " checkpoint saved, workers restart at the new world size",
                )

    def _why(self, pod: Obj) -> str:
        status = pod.get("status") or {}
        for cs in status.get("containerStatuses") or []:
            term = (cs.get("state") or {}).get("terminated")
            if term:
                return f"container {cs['name']} exited with code {term.get('exitCode')} ({term.get('reason', 'Error')})"
        return status.get("message") or status.get("reason") or "pod failed"

    def _restart(
        self, job: Obj, status: Obj, pods: dict[str, Obj], faults: list[tuple[str, str]]
    ) -> bool:
        """Spend one retry on `faults`; False when the budget is spent (the job failed)."""
        uid = job["metadata"]["uid"]
        run = job["spec"].get("runPolicy") or {}
        count = int(status.get("restartCount", 0)) + 1
        budget = int(run.get("jobMaxRetryCount", 0))
        summary = "; ".join(f"{name}: {why}" for name, why in faults)
        faulty_pods = [name for name, _ in faults]
        instances = []
        for name in faulty_pods:
            node_name = ((pods.get(name) or {}).get("spec") or {}).get("nodeName")
            node = self.store.get("nodes", "", node_name) if node_name else None
            if node is not None:
                instances.append(
                    (node["metadata"].get("labels") or {}).get(f"{HP}/instance-id", node_name)
                )
        restart_policy = run.get("restartPolicy") or {}
        window = float(restart_policy.get("evalPeriodSeconds", 3600))
        now = time.monotonic()
        recent = [t for t in self.pod_restarts.get(uid, []) if now - t < window]
        pod_level = len(recent) < int(restart_policy.get("numRestartBeforeFullJobRestart", 0))
        restart_status = dict(
            status.get("restartStatus")
            or {"restartCount": 0, "fullJobRestartCount": 0, "currentEvalPeriod": 0}
        )
        if count > budget:
            message = f"job exceeded jobMaxRetryCount={budget} after {count - 1} restart(s); last fault: {summary}"
            self._fail(job, status, "JobMaxRetryCountExceeded", message, faulty_pods)
            return False
        if not pod_level:
            full = int(restart_status.get("fullJobRestartCount", 0)) + 1
            limit = restart_policy.get("maxFullJobRestarts")
            if limit is not None and full > int(limit):
                message = f"job exceeded maxFullJobRestarts={limit}; last fault: {summary}"
                self._fail(job, status, "MaxFullJobRestartsExceeded", message, faulty_pods)
                return False
            restart_status["fullJobRestartCount"] = full
            victims = list(pods.values())
            self.pod_restarts[uid] = []
        else:
            recent.append(now)
            self.pod_restarts[uid] = recent
            victims = [pods[name] for name in faulty_pods if name in pods]
        for pod in victims:
            self.hung.pop(pod["metadata"]["uid"], None)
            self.delete("pods", pod)
        restart_status["restartCount"] = count
        restart_status["currentEvalPeriod"] = int(window)
        status["restartCount"] = count
        status["restartStatus"] = restart_status
        status["latestFaultyPodInstanceList"] = {
            "restartType": "PodLevel" if pod_level else "JobLevel",
            "faultyPodList": faulty_pods,
            "faultyRankList": [
                (pods.get(n) or {})
                .get("metadata", {})
                .get("labels", {})
                .get("sagemaker.amazonaws.com/rank", "")
                for n in faulty_pods
            ],
            "faultyInstanceIdList": instances,
        }
        set_condition(status, "Running", "False", "Restarting", summary)
        set_condition(
            status,
            "Restarting",
            "True",
            "PodLevelRestart" if pod_level else "JobLevelRestart",
            f"restart {count}/{budget}: {summary}",
        )
        self.event(
            job,
            "JobRestarting",
            f"restart {count}/{budget} ({'pod' if pod_level else 'job'} level): {summary}",
            "Warning",
        )
        self.expected[uid] = set()
        return True

    def _fail(self, job: Obj, status: Obj, reason: str, message: str, faulty: list[str]) -> None:
        set_condition(status, "Running", "False", reason, message)
        if condition({"status": status}, "Restarting"):
            set_condition(status, "Restarting", "False", reason, message)
        set_condition(status, "Failed", "True", reason, message)
        status["completionTime"] = now_iso()
        status.setdefault("latestFaultyPodInstanceList", {"faultyPodList": faulty})
        self.event(job, reason, message, "Warning")
        self._clean(job, status)

    def _clean(self, job: Obj, status: Obj) -> None:
        policy = (job["spec"].get("runPolicy") or {}).get("cleanPodPolicy", "All")
        if policy == "None":
            return
        for pod in self.children("pods", job):
            running = (pod.get("status") or {}).get("phase") in ("Pending", "Running")
            if (policy == "All" or running) and not pod["metadata"].get("deletionTimestamp"):
                self.delete("pods", pod)
        self.expected.pop(job["metadata"]["uid"], None)

    # -- log monitoring ----------------------------------------------------------------

    def resync(self) -> None:
        if not self.active():
            return
        for job in self.store.items(KEY):
            if (job["spec"].get("runPolicy") or {}).get(
                "activeDeadlineSeconds"
            ) is not None and not terminal(job):
                self.poke(KEY, job["metadata"]["namespace"], job["metadata"]["name"])
            monitors = (job["spec"].get("runPolicy") or {}).get("logMonitoringConfiguration") or []
            if not monitors or terminal(job):
                continue
            for pod in self.children("pods", job):
                if (pod.get("status") or {}).get("phase") != "Running" or pod["metadata"][
                    "uid"
                ] in self.hung:
                    continue
                why = self._hang(pod, monitors)
                if why:
                    self.hung[pod["metadata"]["uid"]] = why
                    self.poke(KEY, job["metadata"]["namespace"], job["metadata"]["name"])

    def _hang(self, pod: Obj, monitors: list[Obj]) -> str | None:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if not statuses:
            return None
        first = statuses[0]
        started_at = ((first.get("state") or {}).get("running") or {}).get("startedAt")
        if not started_at:
            return None
        started = parse_iso(started_at).timestamp()
        log = self.server.logs.logs.get(
            (pod["metadata"]["namespace"], pod["metadata"]["name"], first["name"])
        )
        lines = log.lines if log is not None else []
        now = time.time()
        for monitor in monitors:
            pattern = re.compile(monitor["logPattern"])
            matches = [ts for ts, text in lines if pattern.search(text)]
            cutoff = monitor.get("expectedStartCutOffInSeconds")
            every = monitor.get("expectedRecurringFrequencyInSeconds")
            if not matches and cutoff is not None and now - started > float(cutoff):
                return f"log monitor {monitor['name']}: no line matching {monitor['logPattern']!r} within {cutoff}s of start (hang)"
            if matches and every is not None and now - matches[-1] > float(every):
                return f"log monitor {monitor['name']}: no line matching {monitor['logPattern']!r} for {every}s (hang)"
        return None

    def deleted(self, event: WatchEvent) -> None:
        if event.key == KEY:
            uid = event.obj["metadata"]["uid"]
            self.expected.pop(uid, None)
            self.pod_restarts.pop(uid, None)
            self.room_since.pop(uid, None)
