"""The status of an endpoint from its objects: pure functions of what the cluster reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference_svc.domain.render import KubeObject

AVAILABLE = "available"
DEPLOYING = "deploying"
DEGRADED = "degraded"
FAILED = "failed"
WAITING_REASONS = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "CreateContainerConfigError"}
)


@dataclass(frozen=True)
class Observed:
    status: str
    replicas: int
    ready_replicas: int
    address: str | None = None
    message: str | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.status, self.replicas, self.ready_replicas, self.address)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def pod_problem(pods: list[KubeObject]) -> str | None:
    """The first container stuck waiting for a reason that will not pass by itself."""
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in WAITING_REASONS:
                name = (pod.get("metadata") or {}).get("name")
                return f"pod {name}: {waiting['reason']}: {waiting.get('message', '')}".strip()
    return None


def load_balancer(service: KubeObject | None) -> str | None:
    ingress = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")
    if not ingress:
        return None
    first = ingress[0]
    return str(first.get("hostname") or first.get("ip") or "") or None


BEING_CREATED = "its objects are being created"


def observe_deployment(
    deployment: KubeObject | None,
    pods: list[KubeObject],
    service: KubeObject | None,
    external: bool,
    *,
    creating: bool = False,
) -> Observed:
    """A Deployment-backed endpoint: available once every replica is, and (for an external
    endpoint) once its load balancer has an address. `creating`: an operation is deploying the
    endpoint, so a Deployment that does not exist yet is progress, not a failure."""
    if deployment is None:
        if creating:
            return Observed(DEPLOYING, 0, 0, message=BEING_CREATED)
        return Observed(FAILED, 0, 0, message="the endpoint's Deployment is missing")
    wanted = _int((deployment.get("spec") or {}).get("replicas", 1))
    status = deployment.get("status") or {}
    ready = _int(status.get("availableReplicas"))
    address = load_balancer(service)
    problem = pod_problem(pods)
    if ready >= wanted and (address or not external):
        return Observed(AVAILABLE, wanted, ready, address)
    if problem:
        return Observed(DEGRADED if ready else DEPLOYING, wanted, ready, address, problem)
    message = f"{ready}/{wanted} replicas available"
    if external and not address and ready >= wanted:
        message = "waiting for the load balancer's address"
    return Observed(DEPLOYING, wanted, ready, address, message)


def observe_operator(resource: KubeObject | None, *, creating: bool = False) -> Observed:
    """An InferenceEndpointConfig or JumpStartModel, as its operator reports it (`creating` as
    for `observe_deployment`)."""
    if resource is None:
        if creating:
            return Observed(DEPLOYING, 0, 0, message=BEING_CREATED)
        return Observed(FAILED, 0, 0, message="the endpoint's resource is missing")
    status = resource.get("status") or {}
    state = str(status.get("state") or "")
    counts = (status.get("deploymentStatus") or {}).get("status") or {}
    wanted = _int((resource.get("spec") or {}).get("replicas", 1))
    ready = _int(counts.get("availableReplicas"))
    endpoint = (status.get("endpoints") or {}).get("service")
    conditions = status.get("conditions") or []
    message = next((str(c.get("message")) for c in conditions if c.get("message")), None)
    if state == "DeploymentComplete":
        return Observed(AVAILABLE, wanted, ready, endpoint, message)
    if state in ("DeploymentFailed", "Failed"):
        return Observed(FAILED, wanted, ready, endpoint, message or state)
    return Observed(DEPLOYING, wanted, ready, endpoint, message or state or "submitted")
