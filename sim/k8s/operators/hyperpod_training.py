"""The HyperPod training operator: runs HyperPodPyTorchJob pods, restarts them after faults
(pod-level first, then whole-job, per runPolicy), detects hangs from log patterns, and fails
the job with the reason once the retry budget is spent. Active only once its CRD exists."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from sim.k8s.controllers.base import Controller, Rule, condition, set_condition, template_pod
from sim.k8s.controllers.nodes import HP
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


class HyperPodTrainingOperator(Controller):
    name = "hyperpod-training-operator"

    def __init__(self, server: ApiServer) -> None:
        super().__init__(server)
        self.expected: dict[str, set[str]] = {}  # job uid -> uids of pods it should still have
        self.pod_restarts: dict[str, list[float]] = {}  # job uid -> times of pod-level restarts
        self.hung: dict[str, str] = {}  # pod uid -> why the log monitor calls it hung

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
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        return self.owner_of(event, KEY, "HyperPodPyTorchJob") if event.key == "pods" else []

    # -- pods --------------------------------------------------------------------------

    def _layout(self, job: Obj) -> list[tuple[Obj, int, int]]:
        """(replica spec, index within it, global rank) for every pod the job runs."""
        out = []
        rank = 0
        for spec in job["spec"].get("replicaSpecs") or []:
            for index in range(int(spec.get("replicas", 0))):
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
        first = self._layout(job)[0][0]["name"]
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
        layout = self._layout(job)
        pods = {
            p["metadata"]["name"]: p
            for p in self.children("pods", job)
            if not p["metadata"].get("deletionTimestamp")
        }
        expected = self.expected.setdefault(uid, set())
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
        job["status"] = status
        if status != (
            self.store.get(KEY, job["metadata"]["namespace"], job["metadata"]["name"]) or {}
        ).get("status"):
            self.update_status(KEY, job)

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
