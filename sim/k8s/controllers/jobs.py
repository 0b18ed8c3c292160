"""Jobs: run pods to `completions` with `parallelism`, count failures against `backoffLimit`."""

from __future__ import annotations

from sim.k8s.controllers.base import (
    Controller,
    Rule,
    condition,
    random_suffix,
    set_condition,
    template_pod,
)
from sim.k8s.controllers.workloads import active, pod_ready
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso

COUNTED = "batch.kubernetes.io/job-tracking"


def finished(job: Obj) -> bool:
    return any(
        (c := condition(job, t)) is not None and c.get("status") == "True"
        for t in ("Complete", "Failed")
    )


class JobController(Controller):
    name = "job-controller"

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "reconcile",
                "jobs.batch",
                lambda j: not finished(j) and not j["metadata"].get("deletionTimestamp"),
                self.reconcile,
            )
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        return self.owner_of(event, "jobs.batch", "Job") if event.key == "pods" else []

    def reconcile(self, job: Obj) -> None:
        spec = job["spec"]
        status = clone(job.get("status") or {})
        if not spec.get("suspend"):  # a suspended job has not started (job controller syncJob)
            status.setdefault("startTime", now_iso())
            if (c := condition(job, "Suspended")) is not None and c.get("status") == "True":
                set_condition(status, "Suspended", "False", "JobResumed", "Job resumed")
                self.event(job, "Resumed", "Job resumed")
        elif not finished(job):
            # https://kubernetes.io/docs/concepts/workloads/controllers/job/#suspending-a-job:
            # suspending a Job deletes its active Pods and resets its start time
            for pod in self.children("pods", job):
                if active(pod):
                    self.delete("pods", pod)
            status.pop("startTime", None)
            if (c := condition(job, "Suspended")) is None or c.get("status") != "True":
                set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended")
                self.event(job, "Suspended", "Job suspended")
        pods = self.children("pods", job)
        succeeded = int(status.get("succeeded", 0))
        failed = int(status.get("failed", 0))
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp"):
                labels = pod["metadata"].get("labels") or {}
                if labels.get(COUNTED) != "counted":
                    if phase == "Succeeded":
                        succeeded += 1
                    else:
                        failed += 1
                    marked = dict(
                        pod,
                        metadata=dict(pod["metadata"], labels=dict(labels, **{COUNTED: "counted"})),
                    )
                    self.update("pods", marked)
        live = [p for p in self.children("pods", job) if active(p)]
        completions = int(spec.get("completions") or 1)
        parallelism = int(spec.get("parallelism", 1))
        backoff = int(spec.get("backoffLimit", 6))
        if failed > backoff:
            for pod in live:
                self.delete("pods", pod)
            set_condition(
                status,
                "FailureTarget",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
            set_condition(
                status,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
            self.event(
                job,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
                "Warning",
            )
            live = []
        elif succeeded >= completions:
            set_condition(
                status,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
            set_condition(
                status,
                "Complete",
                "True",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
            status["completionTime"] = now_iso()
            self.event(job, "Completed", "Job completed")
        elif not spec.get("suspend"):
            missing = min(parallelism, completions - succeeded) - len(live)
            for _ in range(max(0, missing)):
                pod = template_pod(
                    job, spec["template"], f"{job['metadata']['name']}-{random_suffix()}"
                )
                self.create("pods", pod)
                self.event(job, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
            live = [p for p in self.children("pods", job) if active(p)]
        status.update(
            active=len(live),
            ready=sum(1 for p in live if pod_ready(p)),
            succeeded=succeeded,
            failed=failed,
            terminating=0,
            uncountedTerminatedPods={},
        )
        for key in ("active", "succeeded", "failed"):
            if not status[key]:
                status.pop(key)
        if status != (job.get("status") or {}):
            job["status"] = status
            self.update_status("jobs.batch", job)
