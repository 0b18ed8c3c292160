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
refuses it before the engine sees it.

SGLang's server (`python -m sglang.launch_server ... --enable-metrics`) serves the same counts
under its own names on its API port at `/metrics` (SGLang's docs/references/production_metrics.md;
python/sglang/srt/metrics/collector.py):

- `sglang:num_requests_total{model_name}` (counter): requests processed.
- `sglang:e2e_request_latency_seconds{model_name}` (histogram): end-to-end latency, with the
  buckets its production metrics page shows (`le="0.3"` first).
- `sglang:num_running_reqs{model_name}` and `sglang:num_queue_reqs{model_name}` (gauges): the
  requests running now, and the waiting queue (the emulator answers at once: always 0).

The other servers (TGI, ...) keep their own names and are not exported here.
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
SGLANG = re.compile(r"sglang", re.I)
# vllm/engine/metrics.py: histogram_e2e_time_request buckets
LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
FINISHED_REASON = "stop"
# SGLang's docs/references/production_metrics.md: sglang:e2e_request_latency_seconds buckets
SGLANG_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
BOUNDS = tuple(sorted(set(LATENCY_BUCKETS) | set(SGLANG_LATENCY_BUCKETS)))


@dataclass
class _Server:
    running: int = 0
    success: int = 0
    latency_sum: float = 0.0
    # finished requests at or under each bound (both servers' bounds, cumulative)
    buckets: dict[float, int] = field(default_factory=lambda: dict.fromkeys(BOUNDS, 0))


def _words(container: Obj) -> str:
    return " ".join(map(str, [container.get("image", ""), *(container.get("command") or [])]))


def is_vllm(container: Obj) -> bool:
    """The container runs vLLM (its image or command names it)."""
    return bool(VLLM.search(_words(container)))


def engine_of(container: Obj) -> str | None:
    """ "vllm" or "sglang": the model server whose request metrics the container serves."""
    words = _words(container)
    if VLLM.search(words):
        return "vllm"
    if SGLANG.search(words):
        return "sglang"
    return None


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
            for bound in BOUNDS:
                if seconds <= bound:
                    found.buckets[bound] += 1

    def exposition(self, pod: Obj, container: Obj, model: str, engine: str = "vllm") -> str:
        """The server's `/metrics` answer, in the Prometheus text format, under `engine`'s
        names ("vllm" or "sglang"); `model` is its `model_name` label (--served-model-name,
        else --model or --model-path)."""
        with self._lock:
            found = self._of(pod, container)
            running, success, total = found.running, found.success, found.latency_sum
            buckets = dict(found.buckets)
        model = model.replace("\\", "\\\\").replace('"', '\\"')
        base = f'model_name="{model}"'
        if engine == "sglang":
            latency = "sglang:e2e_request_latency_seconds"
            lines = [
                "# HELP sglang:num_running_reqs The number of running requests",
                "# TYPE sglang:num_running_reqs gauge",
                f"sglang:num_running_reqs{{{base}}} {running}",
                "# HELP sglang:num_queue_reqs The number of requests in the waiting queue",
                "# TYPE sglang:num_queue_reqs gauge",
                f"sglang:num_queue_reqs{{{base}}} 0",
                "# HELP sglang:num_requests_total Number of requests processed.",
                "# TYPE sglang:num_requests_total counter",
                f"sglang:num_requests_total{{{base}}} {success}",
                f"# HELP {latency} Histogram of End-to-end request latency in seconds",
                f"# TYPE {latency} histogram",
            ]
            bounds: tuple[float, ...] = SGLANG_LATENCY_BUCKETS
        else:
            latency = "vllm:e2e_request_latency_seconds"
            lines = [
                "# HELP vllm:num_requests_running Number of requests currently running on GPU.",
                "# TYPE vllm:num_requests_running gauge",
                f"vllm:num_requests_running{{{base}}} {running}",
                "# HELP vllm:request_success_total Count of successfully processed requests.",
                "# TYPE vllm:request_success_total counter",
                f'vllm:request_success_total{{finished_reason="{FINISHED_REASON}",{base}}}'
                f" {success}",
                f"# HELP {latency} Histogram of end to end request latency in seconds.",
                f"# TYPE {latency} histogram",
            ]
            bounds = LATENCY_BUCKETS
        for bound in bounds:  # cumulative, as prometheus_client writes a histogram
            lines.append(f'{latency}_bucket{{le="{bound}",{base}}} {buckets[bound]}')
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
