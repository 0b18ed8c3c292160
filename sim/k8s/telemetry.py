"""GPU and EFA telemetry of simulated nodes, as the HyperPod observability add-on's exporters
serve it: NVIDIA dcgm-exporter (port 9400, `/metrics`) and the EFA node exporter (port 9109).

What the numbers follow (nothing is random):

- A GPU is the container's that was given it: the running pods of the node, oldest first, take
  the node's GPUs in order, one per `nvidia.com/gpu` of each container's limit.
- A training program's steps drive its GPUs (`stepped`, called by the kubelet each step): a GPU
  whose program logged a step within the last three step intervals (at least the last five
  seconds) is busy (92..98 %, the step
  number picks the value), its framebuffer fills over the first five steps to 72 % of the
  device and its power draw follows the utilization. A container that holds GPUs without
  stepping (a hung program, a model server at rest) keeps its memory at 0 % utilization, which is
  what a stall looks like; a GPU nobody holds is idle: no memory used, idle power. A model
  server (vLLM, SGLang, ...) holds 90 % of its GPU's memory and is busy with the requests the
  API server's proxy handed it (20 % per request a second over the last 10 s).
- XID errors are injected (`inject_xid`, the `/_sim/faults/xid` admin action): the GPU's
  `DCGM_FI_DEV_XID_ERRORS` is the last XID code from then on; XID 79 (the GPU fell off the bus)
  and 48 (a double-bit ECC error) also stop the GPU (utilization 0).
- EFA: each step of a container with `vpc.amazonaws.com/efa` devices moves its gradients over
  the node's EFA devices (`node_amazonefa_tx_bytes`, `rx_bytes`, `rdma_write_bytes` grow);
  injected EFA errors (`inject_efa_errors`) count in `node_amazonefa_rdma_read_wr_err` and
  `node_amazonefa_retrans_pkts`.

Metric names, types and labels: dcgm-exporter's default counters
(github.com/NVIDIA/dcgm-exporter etc/default-counters.csv: DCGM_FI_DEV_GPU_UTIL "GPU
utilization (in %)", DCGM_FI_DEV_FB_FREE/FB_USED "Framebuffer memory free/used (in MiB)",
DCGM_FI_DEV_POWER_USAGE "Power draw (in W)", DCGM_FI_DEV_XID_ERRORS "Value of the last XID
error encountered", all gauges; labels gpu, UUID, device, modelName, Hostname, and pod,
namespace, container with its Kubernetes mapping); the EFA exporter is node_exporter's amazonefa
collector (`node_amazonefa_<hw counter>{device="rdmap...",port="1"}`).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sim.k8s.controllers.programs import SERVING
from sim.k8s.gpu_devices import _MODEL, GPU_MEMORY_MIB, _family
from sim.k8s.instances import capacity
from sim.k8s.operators.traffic import traffic_of
from sim.k8s.quantity import parse
from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

DCGM_PORT = 9400
EFA_PORT = 9109
BUSY_STEPS = 3  # a GPU is busy while its program stepped within this many intervals,
BUSY_SECONDS = 5.0  # or within this long (DCGM averages utilization over its sample period)
FILL_STEPS = 5  # steps until a training program's framebuffer is full
TRAINING_MEMORY = 0.72  # share of the device a training program holds
STOPPING_XIDS = frozenset({48, 79})
GRADIENT_BYTES = 64 * 1024 * 1024  # bytes one step all-reduces over each EFA device
SERVING_MEMORY = 0.9  # vLLM's default --gpu-memory-utilization: a model server holds 90 %
UTIL_PER_REQUEST = 20.0  # % utilization per request a second a model server answers
REQUEST_WINDOW = 10.0  # seconds of requests a model server's utilization follows
# (idle, max) power in W per GPU family (the devices' TDP; idle as nvidia-smi reports at rest)
POWER = {
    "p4d": (55.0, 400.0),
    "p4de": (55.0, 400.0),
    "p5": (70.0, 700.0),
    "p5e": (75.0, 700.0),
    "p5en": (75.0, 700.0),
    "g5": (25.0, 300.0),
    "g6": (16.0, 72.0),
    "g6e": (35.0, 350.0),
    "p6-b200": (120.0, 1000.0),
}

DCGM_HELP = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
)
EFA_COUNTERS = (
    ("tx_bytes", "Number of bytes transmitted"),
    ("rx_bytes", "Number of bytes received"),
    ("rdma_write_bytes", "Number of bytes written with RDMA"),
    ("rdma_read_wr_err", "Number of RDMA read work requests with an error"),
    ("retrans_pkts", "Number of retransmitted packets"),
)


@dataclass
class _Steps:
    count: int = 0
    last: float = 0.0
    interval: float = 1.0


@dataclass
class _Holder:
    pod: Obj
    container: str
    steps: _Steps | None


@dataclass
class Telemetry:
    """One cluster's GPU and EFA telemetry (see the module docstring)."""

    server: ApiServer
    clock: object = field(default=time.monotonic)
    _steps: dict[tuple[str, str], _Steps] = field(default_factory=dict)
    _xid: dict[tuple[str, int], int] = field(default_factory=dict)
    _efa: defaultdict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _now(self) -> float:
        clock = self.clock
        assert callable(clock)
        return float(clock())

    # ---- what drives the numbers -------------------------------------------------------------

    def stepped(self, pod: Obj, container: Obj, step: int, interval: float) -> None:
        """A training program logged step `step`; every `interval` seconds it logs one."""
        key = (str(pod["metadata"]["uid"]), str(container["name"]))
        with self._lock:
            found = self._steps.setdefault(key, _Steps())
            found.count, found.last, found.interval = step, self._now(), max(interval, 0.05)
        devices = _limit(container, "vpc.amazonaws.com/efa")
        node = str(pod["spec"].get("nodeName") or "")
        if devices and node:
            with self._lock:
                for index in range(devices):
                    device = _efa_device(index)
                    for counter in ("tx_bytes", "rx_bytes", "rdma_write_bytes"):
                        self._efa[(node, f"{device}/{counter}")] += GRADIENT_BYTES

    def inject_xid(self, node: str, gpu: int = 0, xid: int = 79) -> None:
        """The GPU reports XID `xid` (79 and 48 also stop it)."""
        gpus = self._gpus(self._node(node))
        if not 0 <= gpu < gpus:
            raise ValueError(f"gpu: node {node} has GPUs 0..{gpus - 1}, not {gpu}")
        if not 1 <= xid <= 999:
            raise ValueError(f"xid: an XID code is 1..999, not {xid}")
        with self._lock:
            self._xid[(node, gpu)] = xid

    def inject_efa_errors(self, node: str, count: int = 1) -> None:
        """RDMA read work-request errors and retransmits on the node's first EFA device."""
        found = self._node(node)
        if not capacity(_instance_type(found)).efa:
            raise ValueError(f"node: {node} has no EFA devices")
        if count < 1:
            raise ValueError(f"count: at least 1, not {count}")
        with self._lock:
            self._efa[(node, f"{_efa_device(0)}/rdma_read_wr_err")] += count
            self._efa[(node, f"{_efa_device(0)}/retrans_pkts")] += count * 16

    def _requests(self, meta: Obj, now: float) -> float:
        """Requests per second the pod's server received over the last `REQUEST_WINDOW` s."""
        since = now - REQUEST_WINDOW
        served = traffic_of(self.server).requests
        count = sum(
            1
            for when, namespace, name, _ in served
            if when >= since and namespace == meta["namespace"] and name == meta["name"]
        )
        return count / REQUEST_WINDOW

    def clear_node(self, node: str) -> None:
        """A reboot: the node's GPUs report no XID any more."""
        with self._lock:
            for key in [k for k in self._xid if k[0] == node]:
                del self._xid[key]

    def _prune(self) -> None:
        """Forget the steps of pods that are gone."""
        alive = {str(p["metadata"].get("uid")) for p in self.server.store.items("pods")}
        with self._lock:
            for key in [k for k in self._steps if k[0] not in alive]:
                del self._steps[key]

    # ---- the exporters' answers --------------------------------------------------------------

    def _node(self, name: str) -> Obj:
        found = self.server.store.get("nodes", "", name)
        if found is None:
            raise ValueError(f"node: no node {name}")
        return found

    def _gpus(self, node: Obj) -> int:
        return capacity(_instance_type(node)).gpus

    def _holders(self, node_name: str, gpus: int) -> list[_Holder | None]:
        """Who holds each GPU of the node (None: nobody)."""
        pods = [
            p
            for p in self.server.store.items("pods")
            if p["spec"].get("nodeName") == node_name
            and (p.get("status") or {}).get("phase") == "Running"
        ]
        pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        holders: list[_Holder | None] = []
        with self._lock:
            for pod in pods:
                for container in pod["spec"].get("containers") or []:
                    steps = self._steps.get((str(pod["metadata"]["uid"]), container["name"]))
                    for _ in range(_limit(container, "nvidia.com/gpu")):
                        holders.append(_Holder(pod, str(container["name"]), steps))
        return (holders + [None] * gpus)[:gpus]

    def dcgm(self, node_name: str) -> str:
        """dcgm-exporter's `/metrics` on the node, in the Prometheus text format."""
        node = self._node(node_name)
        self._prune()
        family = _family(_instance_type(node))
        gpus = self._gpus(node)
        total = GPU_MEMORY_MIB.get(family, 16384)
        idle, peak = POWER.get(family, (30.0, 300.0))
        model = _MODEL.get(family, "NVIDIA").replace("-", " ")
        now = self._now()
        rows: dict[str, list[str]] = {name: [] for name, _ in DCGM_HELP}
        for index, holder in enumerate(self._holders(node_name, gpus)):
            xid = self._xid.get((node_name, index), 0)
            util, used = 0.0, 0.0
            labels = {
                "gpu": str(index),
                "UUID": f"GPU-{node_name}-{index}",
                "device": f"nvidia{index}",
                "modelName": model,
                "Hostname": node_name,
            }
            if holder is not None:
                meta = holder.pod["metadata"]
                labels |= {
                    "container": holder.container,
                    "namespace": str(meta["namespace"]),
                    "pod": str(meta["name"]),
                }
                steps = holder.steps
                if steps is None and _serves(holder.pod, holder.container):
                    used = total * SERVING_MEMORY
                    util = min(100.0, UTIL_PER_REQUEST * self._requests(meta, now))
                elif steps is None:
                    used = total * TRAINING_MEMORY
                else:
                    used = total * TRAINING_MEMORY * min(1.0, steps.count / FILL_STEPS)
                    if now - steps.last <= max(BUSY_STEPS * steps.interval, BUSY_SECONDS):
                        util = 92.0 + steps.count % 7
            if xid in STOPPING_XIDS:
                util = 0.0
            power = idle + (peak - idle) * util / 100.0 * 0.9
            text = _labels(labels)
            rows["DCGM_FI_DEV_GPU_UTIL"].append(f"DCGM_FI_DEV_GPU_UTIL{text} {util:g}")
            rows["DCGM_FI_DEV_FB_FREE"].append(f"DCGM_FI_DEV_FB_FREE{text} {round(total - used)}")
            rows["DCGM_FI_DEV_FB_USED"].append(f"DCGM_FI_DEV_FB_USED{text} {round(used)}")
            rows["DCGM_FI_DEV_POWER_USAGE"].append(f"DCGM_FI_DEV_POWER_USAGE{text} {power:.3f}")
            rows["DCGM_FI_DEV_XID_ERRORS"].append(f"DCGM_FI_DEV_XID_ERRORS{text} {xid}")
        lines: list[str] = []
        for name, help_text in DCGM_HELP:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *rows[name]]
        return "\n".join(lines) + "\n"

    def efa(self, node_name: str) -> str:
        """The EFA node exporter's `/metrics` on the node (node_amazonefa_* counters)."""
        node = self._node(node_name)
        devices = capacity(_instance_type(node)).efa
        lines: list[str] = []
        with self._lock:
            for counter, help_text in EFA_COUNTERS:
                name = f"node_amazonefa_{counter}"
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
                for index in range(devices):
                    device = _efa_device(index)
                    value = self._efa.get((node_name, f"{device}/{counter}"), 0.0)
                    lines.append(f'{name}{{device="{device}",port="1"}} {value:g}')
        return "\n".join(lines) + "\n"

    def exporter_answer(self, pod: Obj, container: Obj, path: str) -> str | None:
        """The `/metrics` answer of an exporter pod of the observability add-on, else None."""
        if path.split("?", 1)[0] != "/metrics":
            return None
        image = str(container.get("image", ""))
        node = str(pod["spec"].get("nodeName") or "")
        if not node:
            return None
        if "dcgm-exporter" in image:
            return self.dcgm(node)
        if "efa-exporter" in image:
            return self.efa(node)
        return None


def _serves(pod: Obj, name: str) -> bool:
    container: Obj = next((c for c in pod["spec"].get("containers") or [] if c["name"] == name), {})
    args = " ".join(map(str, (container.get("command") or []) + (container.get("args") or [])))
    return bool(SERVING.search(f"{container.get('image', '')} {args}"))


def _instance_type(node: Obj) -> str:
    labels = node["metadata"].get("labels") or {}
    return str(labels.get("node.kubernetes.io/instance-type", "")).removeprefix("ml.")


def _limit(container: Obj, resource: str) -> int:
    resources = container.get("resources") or {}
    value = (resources.get("limits") or {}).get(resource) or (resources.get("requests") or {}).get(
        resource
    )
    return int(parse(value)) if value is not None else 0


def _efa_device(index: int) -> str:
    return f"rdmap{16 + index}s27"


def _labels(labels: dict[str, str]) -> str:
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + ",".join(escaped) + "}"
