"""One command line run in a pod's container through the Kubernetes API's `pods/exec`
subresource (the WebSocket protocol kubectl exec speaks), as `sh -c LINE`, with workload-svc's
own EKS credentials: what the UI's terminal sends a line at a time. Its own ApiClient per call,
since the stream helper swaps the client's request function while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.stream import stream

TIMEOUT = 30
MAX_OUTPUT = 256 * 1024


@dataclass(frozen=True)
class ExecAnswer:
    output: str
    exit_code: int | None


async def run_line(
    kube: Any, namespace: str, pod: str, container: str | None, line: str
) -> ExecAnswer:
    """Run `line` in the pod (a `shared.adapters.eks_kube.ClusterKube`)."""

    def call() -> ExecAnswer:
        api = k8s.ApiClient(kube.api.configuration)
        try:
            core = k8s.CoreV1Api(api)
            options: dict[str, Any] = {
                "command": ["sh", "-c", line],
                "stderr": True,
                "stdin": False,
                "stdout": True,
                "tty": False,
                "_preload_content": False,
            }
            if container:
                options["container"] = container
            resp = stream(core.connect_get_namespaced_pod_exec, pod, namespace, **options)
            chunks: list[str] = []
            size = 0
            resp.run_forever(timeout=TIMEOUT)
            for text in (resp.read_stdout(), resp.read_stderr()):
                if text and size < MAX_OUTPUT:
                    chunks.append(text[: MAX_OUTPUT - size])
                    size += len(text)
            code = resp.returncode
            resp.close()
            return ExecAnswer("".join(chunks), int(code) if code is not None else None)
        finally:
            api.close()  # type: ignore[no-untyped-call]

    result: ExecAnswer = await kube._run(f"exec in pod {namespace}/{pod}", call)
    return result
