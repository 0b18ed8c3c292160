"""The API server's service and pod proxy (`.../services/<name>[:port]/proxy/<path>`), answered
by the simulated containers: model servers speak the OpenAI-compatible API vLLM and SGLang
serve (health, models, completions, chat completions) and SageMaker's `/invocations`; other
containers answer `/` and health paths. Each request is logged by the container it reached;
a POST is counted as the pod's traffic (`operators.traffic`), which KEDA's rate triggers read."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson

from sim.k8s.controllers.programs import SERVING
from sim.k8s.controllers.workloads import pod_ready
from sim.k8s.errors import ApiError, not_found
from sim.k8s.http import Request, Response
from sim.k8s.operators.spaces import CONTAINER, NAME_LABEL, activity_of
from sim.k8s.operators.traffic import traffic_of
from sim.k8s.serving_metrics import INFERENCE_PATHS, engine_of, serving_of
from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


def _model_name(container: Obj) -> str:
    args = list(container.get("command") or []) + list(container.get("args") or [])
    for flag in ("--served-model-name", "--model", "--model-path"):
        if flag in args and args.index(flag) + 1 < len(args):
            return str(args[args.index(flag) + 1])
        for arg in args:
            if str(arg).startswith(flag + "="):
                return str(arg).split("=", 1)[1]
    for env in container.get("env") or []:
        if env.get("name") in ("MODEL_ID", "SM_MODEL_ID", "MODEL_NAME", "HF_MODEL_ID") and env.get(
            "value"
        ):
            return str(env["value"])
    return str(container.get("image", "model")).rsplit("/", 1)[-1]


def _pods_of_service(server: ApiServer, namespace: str, name: str) -> list[Obj]:
    svc = server.store.get("services", namespace, name)
    if svc is None:
        raise not_found("services", "", name)
    selector = (svc.get("spec") or {}).get("selector") or {}
    pods = [
        p
        for p in server.store.items("pods", namespace)
        if selector
        and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
    ]
    ready = [p for p in pods if pod_ready(p)]
    if not ready:
        raise ApiError(
            503, f'no endpoints available for service "{name}"', reason="ServiceUnavailable"
        )
    return ready


def proxy(
    server: ApiServer, req: Request, kind: str, namespace: str, target: str, path: str
) -> Response:
    name = target.split(":")[-2] if target.count(":") >= 2 else target.split(":")[0]
    if kind == "services":
        pods = _pods_of_service(server, namespace, name)
        pod = pods[server.requests % len(pods)]
    else:
        found = server.store.get("pods", namespace, name)
        if found is None:
            raise not_found("pods", "", name)
        if not pod_ready(found):
            raise ApiError(503, f'pod "{name}" is not ready', reason="ServiceUnavailable")
        pod = found
    container = pod["spec"]["containers"][0]
    peer = req.headers.get("x-forwarded-for", "10.0.0.1")
    status, body, ctype = serve(server, pod, container, req.method, path, req.body, peer)
    return Response(status, body, content_type=ctype)


def serve(
    server: ApiServer, pod: Obj, container: Obj, method: str, path: str, raw: bytes, peer: str
) -> tuple[int, bytes, str]:
    """One HTTP request answered by `container` of `pod` (through the proxy or a forwarded
    port): (status, body, content type); logged by the container and counted as its traffic."""
    path = "/" + path.lstrip("/")
    exported = server.telemetry.exporter_answer(pod, container, path) if method == "GET" else None
    if exported is not None:  # an exporter's scrape is not logged (Prometheus scrapes often)
        return 200, exported.encode(), "text/plain; version=0.0.4"
    engine = engine_of(container)
    if method == "GET" and path.split("?", 1)[0] == "/metrics" and engine is not None:
        # vLLM and SGLang serve their Prometheus metrics on the API port, each under its own
        # names (sim.k8s.serving_metrics)
        text = serving_of(server).exposition(pod, container, _model_name(container), engine)
        return 200, text.encode(), "text/plain; version=0.0.4"
    inference = method == "POST" and path in INFERENCE_PATHS and engine is not None
    if inference:
        serving_of(server).started(pod, container)
    began = time.perf_counter()
    status, body = _answer(container, method, path, raw)
    if inference:
        serving_of(server).finished(pod, container, time.perf_counter() - began, status)
    workspace = (pod["metadata"].get("labels") or {}).get(NAME_LABEL)
    if workspace and container["name"] == CONTAINER:
        # a space's JupyterLab: any request is activity (what idle shutdown reads)
        activity_of(server).touch(pod["metadata"]["namespace"], workspace)
        if method == "GET" and (path in ("/", "/lab") or path.startswith("/lab/")):
            status = 200
            body = f"<html><title>JupyterLab</title><body>JupyterLab: {workspace}</body></html>"
            line = f'INFO:     {peer}:0 - "{method} {path} HTTP/1.1" {status}'
            server.logs.write(
                pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"], line
            )
            return status, body.encode(), "text/html"
    if method == "POST":
        traffic_of(server).record(pod)
    line = f'INFO:     {peer}:0 - "{method} {path} HTTP/1.1" {status}'
    server.logs.write(
        pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"], line
    )
    if isinstance(body, (dict, list)):
        return status, orjson.dumps(body), "application/json"
    return status, str(body).encode(), "text/plain"


def _answer(container: Obj, method: str, path: str, raw: bytes) -> tuple[int, Any]:
    serving = bool(
        SERVING.search(
            f"{container.get('image', '')} {' '.join(map(str, container.get('args') or []))}"
        )
    )
    if path in ("/health", "/healthz", "/ready", "/ping", "/readyz", "/livez"):
        return 200, "OK"
    if not serving:
        return (200, "ok") if path == "/" and method == "GET" else (404, "404 page not found")
    model = _model_name(container)
    if method == "GET" and path == "/v1/models":
        return 200, {
            "object": "list",
            "data": [{"id": model, "object": "model", "owned_by": "sim"}],
        }
    if method == "POST" and path in INFERENCE_PATHS:
        try:
            request = orjson.loads(raw or b"{}")
        except orjson.JSONDecodeError:
            return 400, {
                "error": {"message": "request body is not JSON", "type": "BadRequestError"}
            }
        messages = request.get("messages") or []
        prompt = (
            str(messages[-1].get("content", ""))
            if messages
            else str(request.get("prompt") or request.get("inputs") or "")
        )
        text = f"[sim] {model} answers: {prompt[:200]}"
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(text.split()),
            "total_tokens": len(prompt.split()) + len(text.split()),
        }
        created = int(time.time())
        if path == "/v1/chat/completions":
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            return 200, {
                "id": "chatcmpl-sim",
                "object": "chat.completion",
                "created": created,
                "model": request.get("model", model),
                "choices": [choice],
                "usage": usage,
            }
        if path == "/v1/completions":
            return 200, {
                "id": "cmpl-sim",
                "object": "text_completion",
                "created": created,
                "model": request.get("model", model),
                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": usage,
            }
        return 200, {"generated_text": text}
    return 404, {"error": {"message": f"no route {method} {path}", "type": "NotFoundError"}}
