"""A job's status read from its custom resource and pods (pure).

HyperPodPyTorchJob: conditions (Created, Running, Restarting, Completed, Failed), restartCount
against runPolicy.jobMaxRetryCount, latestFaultyPodInstanceList, and the replicas: running
against the operator's target, within elasticPolicy's bounds for an elastic job (its
elasticScalingStatus). RayJob: jobStatus and jobDeploymentStatus. batch/v1 Job: succeeded/failed
counts and conditions (a failed pod the Job replaced is a restart).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

KubeObject = dict[str, Any]


@dataclass(frozen=True)
class Observed:
    status: str  # pending | running | restarting | succeeded | failed
    restarts: int = 0
    budget: int | None = None
    faulty_pods: list[str] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    message: str | None = None
    dashboard: str | None = None
    # HyperPodPyTorchJob: {current (pods running), target, elastic, min, max, last_scaling_time}
    replicas: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key(self) -> tuple[Any, ...]:
        """What an event is emitted for when it changes (pod phases alone are not events)."""
        return (self.status, self.restarts, tuple(self.faulty_pods), self.reason)


def _condition(obj: KubeObject, kind: str) -> KubeObject | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _true(obj: KubeObject, kind: str) -> KubeObject | None:
    cond = _condition(obj, kind)
    return cond if cond is not None and cond.get("status") == "True" else None


def pod_summary(pods: list[KubeObject]) -> list[dict[str, Any]]:
    out = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        status = pod.get("status") or {}
        restarts = sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or [])
        out.append(
            {
                "name": pod["metadata"]["name"],
                "phase": status.get("phase", "Pending"),
                "node": (pod.get("spec") or {}).get("nodeName"),
                "restarts": restarts,
            }
        )
    return out


def observe(kind: str, obj: KubeObject | None, pods: list[KubeObject]) -> Observed | None:
    """None when the resource is gone."""
    if obj is None:
        return None
    summary = pod_summary(pods)
    if kind == "HyperPodPyTorchJob":
        return _hyperpod(obj, summary)
    if kind == "RayJob":
        return _ray(obj, summary)
    return _batch(obj, summary)


def replicas(obj: KubeObject, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """Pods running against the target: the replica specs' replicas, or for an elastic job the
    operator's current target (elasticScalingStatus.targetReplicas) within its bounds."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    elastic = spec.get("elasticPolicy") or None
    scaling = status.get("elasticScalingStatus") or {}
    targets = scaling.get("targetReplicas") or {}
    if elastic is not None and targets:
        target = sum(int(v) for v in targets.values())
    else:
        target = sum(int(r.get("replicas", 0)) for r in spec.get("replicaSpecs") or [])
    return {
        "current": sum(1 for p in pods if p["phase"] == "Running"),
        "target": target,
        "elastic": elastic is not None,
        "min": int(elastic["minReplicas"]) if elastic and "minReplicas" in elastic else None,
        "max": int(elastic["maxReplicas"]) if elastic and "maxReplicas" in elastic else None,
        "last_scaling_time": scaling.get("lastScalingTime"),
    }


def _hyperpod(obj: KubeObject, pods: list[dict[str, Any]]) -> Observed:
    status = obj.get("status") or {}
    budget = int(((obj.get("spec") or {}).get("runPolicy") or {}).get("jobMaxRetryCount", 0))
    restarts = int(status.get("restartCount", 0))
    faulty = list((status.get("latestFaultyPodInstanceList") or {}).get("faultyPodList") or [])
    sized = replicas(obj, pods)
    if failed := _true(obj, "Failed"):
        return Observed(
            "failed",
            restarts,
            budget,
            faulty,
            pods,
            failed.get("reason"),
            failed.get("message"),
            replicas=sized,
        )
    if done := _true(obj, "Completed"):
        return Observed("succeeded", restarts, budget, [], pods, done.get("reason"), replicas=sized)
    if _true(obj, "Suspended"):
        return Observed("suspended", restarts, budget, faulty, pods, "JobSuspended", replicas=sized)
    if restarting := _true(obj, "Restarting"):
        return Observed(
            "restarting",
            restarts,
            budget,
            faulty,
            pods,
            restarting.get("reason"),
            restarting.get("message"),
            replicas=sized,
        )
    if _true(obj, "Running"):
        return Observed("running", restarts, budget, faulty, pods, replicas=sized)
    return Observed("pending", restarts, budget, faulty, pods, replicas=sized)


def _ray(obj: KubeObject, pods: list[dict[str, Any]]) -> Observed:
    status = obj.get("status") or {}
    budget = (obj.get("spec") or {}).get("backoffLimit")
    job_status = str(status.get("jobStatus") or "PENDING")
    restarts = int(status.get("failed") or 0)
    dashboard = status.get("dashboardURL")
    phase = {
        "SUCCEEDED": "succeeded",
        "FAILED": "failed",
        "STOPPED": "failed",
        "RUNNING": "running",
    }.get(job_status, "pending")
    return Observed(
        phase,
        restarts,
        int(budget) if budget is not None else None,
        [p["name"] for p in pods if p["phase"] == "Failed"],
        pods,
        status.get("reason"),
        status.get("message"),
        dashboard,
    )


def _batch(obj: KubeObject, pods: list[dict[str, Any]]) -> Observed:
    status = obj.get("status") or {}
    budget = (obj.get("spec") or {}).get("backoffLimit")
    restarts = int(status.get("failed") or 0) + sum(p["restarts"] for p in pods)
    faulty = [p["name"] for p in pods if p["phase"] == "Failed"]
    if failed := _true(obj, "Failed"):
        return Observed(
            "failed",
            restarts,
            budget,
            faulty,
            pods,
            failed.get("reason"),
            failed.get("message"),
        )
    if _true(obj, "Complete") or int(status.get("succeeded") or 0) > 0:
        return Observed("succeeded", restarts, budget, [], pods)
    if int(status.get("active") or 0) > 0 and any(p["phase"] == "Running" for p in pods):
        return Observed("running", restarts, budget, faulty, pods)
    return Observed("pending", restarts, budget, faulty, pods)


def newest_pod(pods: list[KubeObject]) -> KubeObject | None:
    """The pod a Job runs now: its pods fail one after another, the replacement comes last
    (creation times are whole seconds, so a failed pod sorts before one that is not)."""
    if not pods:
        return None
    return max(
        pods,
        key=lambda p: (
            (p.get("status") or {}).get("phase") != "Failed",
            str(p["metadata"].get("creationTimestamp") or ""),
            p["metadata"]["name"],
        ),
    )


def progress(lines: list[str]) -> str | None:
    """The last progress line of a download log ("... 40%"), if any."""
    for line in reversed(lines):
        if "%" in line and ("progress" in line.lower() or "download" in line.lower()):
            return line.strip()
    return None
