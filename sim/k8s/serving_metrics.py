"""Request metrics of the simulated model servers, as vLLM's OpenAI-compatible server serves
them on its API port at `/metrics` (docs.vllm.ai "Production Metrics"; names, types and buckets
from vllm/engine/metrics.py):

- `vllm:request_success_total{model_name, finished_reason}` (counter): requests the server
  finished; the emulator answers every completion with `finish_reason: "stop"`.
- `vllm:e2e_request_latency_seconds{model_name}` (histogram, `_bucket{le}`, `_sum`, `_count`):
  the time the emulated server took to answer each finished request, measured (the emulator
  answers in well under a second, so every request falls in the first bucket, `le="0.3"`).
- `vllm:num_requests_running{model_name}` (gauge): requests being answered right now.

Only what the emulator counts truthfully is served: the inference requests (POST
/v1/chat/completions, /v1/completions, /invocations, /generate) the API server's service or pod
proxy handed the pod and that the server answered with 200. A request the server refused (a body
that is not JSON) is not a finished request and counts nowhere, as in vLLM, where the HTTP layer
refuses it before the engine sees it. SGLang and the other servers keep their own metric names
and are not exported here.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

INFERENCE_PATHS = frozenset(
    {"/v1/chat/completions", "/v1/completions", "/invocations", "/generate"}
)
VLLM = re.compile(r"vllm", re.I)
# vllm/engine/metrics.py: histogram_e2e_time_request buckets
LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
FINISHED_REASON = "stop"


@dataclass
class _Server:
    running: int = 0
    success: int = 0
    latency_sum: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))


def is_vllm(container: Obj) -> bool:
    """The container runs vLLM (its image or command names it)."""
    words = [container.get("image", ""), *(container.get("command") or [])]
    return bool(VLLM.search(" ".join(map(str, words))))


class ServingMetrics:
    """One API server's model servers' request counts, per pod (uid) and container."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, str], _Server] = {}
        self._lock = threading.Lock()

    def _of(self, pod: Obj, container: Obj) -> _Server:
        key = (str(pod["metadata"].get("uid", pod["metadata"]["name"])), str(container["name"]))
        return self._servers.setdefault(key, _Server())

    def started(self, pod: Obj, container: Obj) -> None:
        """The server took a request."""
        with self._lock:
            self._of(pod, container).running += 1

    def finished(self, pod: Obj, container: Obj, seconds: float, status: int) -> None:
        """The server answered the request it took, `status` after `seconds`."""
        with self._lock:
            found = self._of(pod, container)
            found.running -= 1
            if status != 200:
                return
            found.success += 1
            found.latency_sum += seconds
            for index, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    found.buckets[index] += 1

    def exposition(self, pod: Obj, container: Obj, model: str) -> str:
        """The server's `/metrics` answer, in the Prometheus text format; `model` is its
        `model_name` label (--served-model-name, else --model)."""
        with self._lock:
            found = self._of(pod, container)
            running, success, total = found.running, found.success, found.latency_sum
            buckets = list(found.buckets)
        model = model.replace("\\", "\\\\").replace('"', '\\"')
        base = f'model_name="{model}"'
        latency = "vllm:e2e_request_latency_seconds"
        lines = [
            "# HELP vllm:num_requests_running Number of requests currently running on GPU.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{base}}} {running}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{finished_reason="{FINISHED_REASON}",{base}}} {success}',
            f"# HELP {latency} Histogram of end to end request latency in seconds.",
            f"# TYPE {latency} histogram",
        ]
        for bound, count in zip(LATENCY_BUCKETS, buckets, strict=True):
            lines.append(f'{latency}_bucket{{le="{bound}",{base}}} {count}')
        lines += [
            f'{latency}_bucket{{le="+Inf",{base}}} {success}',
            f"{latency}_sum{{{base}}} {total:.6f}",
            f"{latency}_count{{{base}}} {success}",
        ]
        return "\n".join(lines) + "\n"


_SERVING: WeakKeyDictionary[ApiServer, ServingMetrics] = WeakKeyDictionary()


def serving_of(server: ApiServer) -> ServingMetrics:
    """The request metrics of one simulated API server's model servers."""
    if server not in _SERVING:
        _SERVING[server] = ServingMetrics()
    return _SERVING[server]
