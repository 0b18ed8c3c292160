"""The emulator's own admin API, for tests that run the simulated world in another process:
fault injection, installs and KEDA metrics under `/_sim/`, with the cluster's bearer token.

POST /_sim/faults/throttle        {requests?, seconds?, retry_after?, paths?}
POST /_sim/faults/crash-pod       {namespace, name, exit_code?, container?}
POST /_sim/faults/kill-pod        {namespace, name, reason?, message?}
POST /_sim/faults/node-not-ready  {node}        POST /_sim/faults/node-ready {node}
POST /_sim/faults/node-health     {node, status, reason?}
POST /_sim/faults/slow-image-pull {image, seconds}
POST /_sim/faults/image-pull-failure {image, message?}   POST /_sim/faults/clear-image-pull-failure {image}
POST /_sim/faults/xid            {node, gpu?, xid?}   POST /_sim/faults/efa-errors {node, count?}
POST /_sim/install                {component}
POST /_sim/metrics                {namespace, scaledObject, value}
GET  /_sim/state
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sim.k8s.errors import ApiError

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


def _field(body: dict[str, Any], name: str) -> Any:
    if name not in body:
        raise ApiError(400, f"missing field: {name}")
    return body[name]


def handle(server: ApiServer, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    faults = server.faults
    if method == "GET" and path == "/_sim/state":
        return {
            "cluster": server.cluster,
            "requests": server.requests,
            "throttled": faults.throttled,
            "watchers": server.store.watcher_count(),
            "resourceVersion": str(server.store.rv),
        }
    if method != "POST":
        raise ApiError(405, f"method {method} not allowed")
    actions: dict[str, Callable[[], None]] = {
        "/_sim/faults/throttle": lambda: faults.throttle(
            requests=body.get("requests"),
            seconds=body.get("seconds"),
            retry_after=int(body.get("retry_after", 1)),
            paths=str(body.get("paths", "/api*")),
        ),
        "/_sim/faults/crash-pod": lambda: faults.crash_pod(
            str(_field(body, "namespace")),
            str(_field(body, "name")),
            int(body.get("exit_code", 1)),
            body.get("container"),
        ),
        "/_sim/faults/kill-pod": lambda: faults.kill_pod(
            str(_field(body, "namespace")),
            str(_field(body, "name")),
            str(body.get("reason", "Killed")),
            str(body.get("message", "The pod was killed (injected fault)")),
        ),
        "/_sim/faults/node-not-ready": lambda: faults.node_not_ready(str(_field(body, "node"))),
        "/_sim/faults/node-ready": lambda: faults.node_ready(str(_field(body, "node"))),
        "/_sim/faults/node-health": lambda: faults.node_health(
            str(_field(body, "node")),
            str(_field(body, "status")),
            str(body.get("reason", "GpuXidError")),
        ),
        "/_sim/faults/slow-image-pull": lambda: faults.slow_image_pull(
            str(_field(body, "image")), float(_field(body, "seconds"))
        ),
        "/_sim/faults/image-pull-failure": lambda: faults.image_pull_failure(
            str(_field(body, "image")), str(body.get("message", "not found"))
        ),
        "/_sim/faults/clear-image-pull-failure": lambda: faults.clear_image_pull_failure(
            str(_field(body, "image"))
        ),
        "/_sim/faults/xid": lambda: server.telemetry.inject_xid(
            str(_field(body, "node")), int(body.get("gpu", 0)), int(body.get("xid", 79))
        ),
        "/_sim/faults/efa-errors": lambda: server.telemetry.inject_efa_errors(
            str(_field(body, "node")), int(body.get("count", 1))
        ),
        "/_sim/install": lambda: server.install(str(_field(body, "component"))),
        "/_sim/metrics": lambda: server.set_metric(
            str(_field(body, "namespace")),
            str(_field(body, "scaledObject")),
            float(_field(body, "value")),
        ),
    }
    action = actions.get(path)
    if action is None:
        raise ApiError(404, f"no admin action at {path}")
    try:
        action()
    except (KeyError, ValueError) as exc:
        raise ApiError(400, str(exc)) from exc
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
