"""Fault injection: API throttling, container crashes, pod kills, NotReady nodes, node health
faults, slow and failing image pulls."""

from __future__ import annotations

import fnmatch
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sim.k8s.errors import ApiError
from sim.k8s.http import Request

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


@dataclass
class Throttle:
    remaining: int | None
    until: float | None
    retry_after: int
    paths: str


@dataclass
class Faults:
    """What the test or the simulated AWS injected into one API server."""

    server: ApiServer
    throttles: list[Throttle] = field(default_factory=list)
    slow_pulls: dict[str, float] = field(default_factory=dict)
    failed_pulls: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    throttled: int = 0

    def throttle(
        self,
        requests: int | None = None,
        seconds: float | None = None,
        retry_after: int = 1,
        paths: str = "/api*",
    ) -> None:
        """Answer 429 to the next `requests` requests (or for `seconds`) whose path matches."""
        until = time.monotonic() + seconds if seconds is not None else None
        if requests is None and until is None:
            requests = 1
        with self.lock:
            self.throttles.append(Throttle(requests, until, retry_after, paths))

    def before_request(self, req: Request) -> None:
        with self.lock:
            now = time.monotonic()
            self.throttles = [
                t
                for t in self.throttles
                if (t.remaining is None or t.remaining > 0) and (t.until is None or t.until > now)
            ]
            for t in self.throttles:
                if fnmatch.fnmatch(req.path, t.paths):
                    if t.remaining is not None:
                        t.remaining -= 1
                    self.throttled += 1
                    raise ApiError(
                        429,
                        "Too many requests, please try again later.",
                        details={"retryAfterSeconds": t.retry_after},
                        headers={"Retry-After": str(t.retry_after)},
                    )

    def slow_image_pull(self, image_pattern: str, seconds: float) -> None:
        """Pulling images matching the glob takes `seconds` longer."""
        with self.lock:
            self.slow_pulls[image_pattern] = seconds

    def image_pull_failure(self, image_pattern: str, message: str = "not found") -> None:
        """Pulling images matching the glob fails (ErrImagePull, then ImagePullBackOff)."""
        with self.lock:
            self.failed_pulls[image_pattern] = message

    def clear_image_pull_failure(self, image_pattern: str) -> None:
        with self.lock:
            self.failed_pulls.pop(image_pattern, None)

    def pull_failure(self, image: str) -> str | None:
        with self.lock:
            return next(
                (m for pat, m in self.failed_pulls.items() if fnmatch.fnmatch(image, pat)), None
            )

    def extra_pull_time(self, image: str) -> float:
        with self.lock:
            return max(
                (s for pat, s in self.slow_pulls.items() if fnmatch.fnmatch(image, pat)),
                default=0.0,
            )

    def crash_pod(
        self, namespace: str, name: str, exit_code: int = 1, container: str | None = None
    ) -> None:
        """The container (default: the first) exits with `exit_code` now."""
        self.server.run_on_loop(
            self.server.kubelet.crash, namespace, name, container, exit_code, "Error"
        )

    def kill_pod(
        self,
        namespace: str,
        name: str,
        reason: str = "Killed",
        message: str = "The pod was killed (injected fault)",
    ) -> None:
        """The pod is lost mid-run, as when its node's kubelet kills or evicts it: every
        container stops with exit code 137 and the pod fails for good (no container restart,
        whatever its restartPolicy); its owner decides what comes next (a Job starts a new pod
        and counts the failure against backoffLimit; the training operator restarts the job)."""
        self.server.run_on_loop(
            self.server.kubelet.fail_pod, namespace, name, reason, message, "TerminationByKubelet"
        )

    def node_not_ready(self, node: str) -> None:
        self.server.run_on_loop(self.server.nodes.set_ready, node, False)

    def node_ready(self, node: str) -> None:
        self.server.run_on_loop(self.server.nodes.set_ready, node, True)

    def node_health(self, node: str, status: str, reason: str = "GpuXidError") -> None:
        """What HyperPod's health-monitoring agent does on a hardware fault: label the node
        (`UnschedulablePendingReplacement` or `UnschedulablePendingReboot`), taint it, evict its
        pods, and tell whoever listens (the simulated AWS replaces or reboots the instance)."""
        self.server.run_on_loop(self.server.nodes.set_health, node, status, reason)
