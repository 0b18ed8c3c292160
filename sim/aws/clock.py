"""The simulated passage of time: work scheduled to finish after a profile's duration.

Statuses move by the clock. Every piece of simulated cloud work (a cluster becoming ACTIVE,
a node booting) is a task due at a monotonic instant. A ticker thread runs due tasks, and
every request first runs whatever is due, so a read never sees a state older than the clock.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Scheduler:
    """Runs callbacks when they are due, under the simulation's lock."""

    def __init__(self, lock: threading.RLock, after_run: Callable[[], None]) -> None:
        self._lock = lock
        self._after_run = after_run
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def after(self, delay: float, task: Callable[[], None]) -> None:
        """Run `task` once `delay` seconds have passed."""
        with self._lock:
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._seq), task))
        self._wake.set()

    def run_due(self) -> None:
        """Run every task whose time has come, in due order (the caller may hold the lock)."""
        with self._lock:
            ran = False
            while self._heap and self._heap[0][0] <= time.monotonic():
                _, _, task = heapq.heappop(self._heap)
                ran = True
                try:
                    task()
                except Exception:
                    log.exception("simulated task failed")
            if ran:
                self._after_run()

    def pending(self) -> int:
        with self._lock:
            return len(self._heap)

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._tick, name="sim-aws-clock", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _tick(self) -> None:
        while not self._stopping.is_set():
            self.run_due()
            with self._lock:
                wait = self._heap[0][0] - time.monotonic() if self._heap else 1.0
            self._wake.wait(timeout=min(max(wait, 0.0), 1.0))
            self._wake.clear()
