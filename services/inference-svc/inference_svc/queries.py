"""Live reads over NATS request/reply: `qry.inference.<name>`.

- `plan`: a command's dry run, computed by the same functions the workflows decide with
  (`planners`, one per command type, answered through `shared.service.plan_route`).
- `describe`: an endpoint's spec, its observed status, its pods (a pool worker's model label).
- `invoke`: an OpenAI-compatible request to the endpoint's model server, through the Kubernetes
  API server's service proxy (the gateway never reaches into a cluster's network itself). The
  path is one of the inference paths; a pool's per-model Service is named by `pool_model` (a
  `model` that is not a model id, or names no valid Service, is refused on `model`), and the
  proxy's URL is made of those checked segments alone.

Replies are `{"ok": true, "data": ...}` or `{"ok": false, "error": {"code", "message", "hint"}}`.
"""

from __future__ import annotations

import json
from typing import Any

from inference_svc.access import Clusters
from inference_svc.domain.plan import (
    assign_plan,
    checked_pool_model,
    delete_plan,
    deploy_plan,
    rule,
    scale_plan,
)
from inference_svc.domain.render import (
    ENDPOINT_LABEL,
    INVOKE_PATHS,
    MODEL_LABEL,
    service_name,
    serving_port,
)
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    EndpointSpec,
    ScaleEndpoint,
)
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.logging import get_logger
from shared.queries import BadRequest, Route
from shared.service import Planner
from shared.validation import RuleViolation

log = get_logger("inference_svc.queries")

DESCRIBE = query_subject("inference", "describe")
INVOKE = query_subject("inference", "invoke")


def _text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key} is required", f"send {key} as a string")
    return value


class Reads:
    """The inference queries and dry runs, over the recorded endpoints and their clusters."""

    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters

    def routes(self) -> dict[str, Route]:
        return {DESCRIBE: self.describe, INVOKE: self.invoke}

    def planners(self) -> dict[str, Planner]:
        return {
            DeployEndpoint.__name__: self.plan_deploy,
            ScaleEndpoint.__name__: self.plan_scale,
            AssignPoolWorker.__name__: self.plan_assign,
            DeleteEndpoint.__name__: self.plan_delete,
        }

    # ---- plan --------------------------------------------------------------------------------

    async def plan_deploy(self, payload: dict[str, Any]) -> Plan:
        deploy = DeployEndpoint.from_payload(payload)
        return deploy_plan(deploy.spec, await self.clusters.facts(deploy.cluster, deploy.spec))

    async def plan_scale(self, payload: dict[str, Any]) -> Plan:
        scale = ScaleEndpoint.from_payload(payload)
        cluster = scale.target.cluster
        spec = await self.clusters.recorded(cluster, scale.target.name)
        return scale_plan(
            spec, cluster, await self.clusters.scale_object(cluster, spec), scale.replicas
        )

    async def plan_assign(self, payload: dict[str, Any]) -> Plan:
        assign = AssignPoolWorker.from_payload(payload)
        cluster = assign.target.cluster
        spec = await self.clusters.recorded(cluster, assign.target.name)
        kube = await self.clusters.kube(cluster)
        pod = await kube.get("v1", "Pod", assign.pod, spec.namespace)
        exists = False
        if assign.model is not None:
            name = checked_pool_model(spec, assign.model).service
            exists = await kube.get("v1", "Service", name, spec.namespace) is not None
        return assign_plan(spec, cluster, pod, assign.model, exists)

    async def plan_delete(self, payload: dict[str, Any]) -> Plan:
        delete = DeleteEndpoint.from_payload(payload)
        cluster = delete.target.cluster
        spec = await self.clusters.recorded(cluster, delete.target.name)
        return delete_plan(spec, cluster, await self.clusters.present(cluster, spec))

    # ---- describe ----------------------------------------------------------------------------

    async def describe(self, request: dict[str, Any]) -> Any:
        cluster, name = _text(request, "cluster"), _text(request, "name")
        spec = await self.clusters.recorded(cluster, name)
        # Read while a deploy is still applying its objects, a missing one is not a failure.
        creating = await self.clusters.in_progress(cluster, name)
        seen = await self.clusters.observe(cluster, spec, creating=creating)
        kube = await self.clusters.kube(cluster)
        # The operator labels the workers of a managed endpoint with app=<name>.
        selector = (
            f"app={spec.name}"
            if spec.kind in ("managed", "jumpstart")
            else f"{ENDPOINT_LABEL}={spec.name}"
        )
        pods = await kube.pods(spec.namespace, selector)
        return {
            "status": seen.status,
            "replicas": seen.replicas,
            "ready_replicas": seen.ready_replicas,
            "address": seen.address,
            "message": seen.message,
            "service": service_name(spec),
            "port": serving_port(spec),
            "pods": [_pod(p) for p in pods],
        }

    # ---- invoke ------------------------------------------------------------------------------

    async def invoke(self, request: dict[str, Any]) -> Any:
        cluster, name = _text(request, "cluster"), _text(request, "name")
        path = request.get("path") or "/v1/chat/completions"
        if not isinstance(path, str) or path not in INVOKE_PATHS:
            raise BadRequest(
                f"path {str(path)[:80]!r} is not an inference path",
                "use " + ", ".join(INVOKE_PATHS),
            )
        body = request.get("body")
        if not isinstance(body, dict):
            raise BadRequest("body is required", "send the OpenAI-compatible request as an object")
        spec = await self.clusters.recorded(cluster, name)
        service = service_name(spec)
        if spec.service == "model_pool" and spec.kind == "container":
            model = body.get("model")
            if not isinstance(model, str) or not model:
                raise rule(
                    "model",
                    f"{name} is a model pool: the request names the model it is for",
                    "set body.model to a model a worker of the pool is assigned to",
                )
            service = checked_pool_model(spec, model).service
        kube = await self.clusters.kube(cluster)
        try:
            answer = await kube.proxy(
                spec.namespace,
                service,
                serving_port(spec),
                path,
                json.dumps(body).encode(),
            )
        except RuleViolation as exc:
            raise BadRequest(str(exc), exc.hint) from exc
        try:
            decoded: Any = json.loads(answer.body)
        except ValueError:
            decoded = answer.body.decode("utf-8", errors="replace")
        return {"status": answer.status, "body": decoded, "service": service}


def _pod(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return {
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "phase": status.get("phase"),
        "ready": bool(containers) and all(c.get("ready") for c in containers),
        "restarts": sum(int(c.get("restartCount") or 0) for c in containers),
        "model": (meta.get("labels") or {}).get(MODEL_LABEL),
        "role": (meta.get("labels") or {}).get("hyperpilot.dev/role"),
    }


__all__ = ["DESCRIBE", "INVOKE", "EndpointSpec", "Reads"]
