"""Item 7, status lag: from a simulated state change (EKS cluster ACTIVE, HyperPod cluster
InService) to our StageSucceeded event, and the describe calls spent per minute of waiting.

One full cluster creation in the fast profile with the product's default polling (first poll
at once, then 0.05 s growing x1.5 up to POLL_MAX_SECONDS = 15 s). The simulated AWS runs in
this process: its clock's tasks are observed to timestamp each state change, and its HTTP
front counts the describe calls. Floor: one DescribeCluster round trip to the same simulator
(the least lag a poller that asked at the very moment of the change would see). The same
backoff is also evaluated for the real profile's durations (EKS 10 min, HyperPod 15 min).

    .venv/bin/python -m bench.status_lag

Writes bench/results/status_lag.json.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import httpx

from bench.common import TOKEN, median, record, simulated_stack

EKS_DESCRIBE = re.compile(r"^/clusters/[^/]+$")
# stage -> (resource kind in the simulator, the status that ends its wait)
WAITS = {"eks_cluster": ("eks", "ACTIVE"), "hyperpod_cluster": ("hyperpod", "InService")}
REAL_SECONDS = {"eks_cluster": 600.0, "hyperpod_cluster": 900.0}


class Observer:
    """State changes of the simulator's clusters, and its describe calls, with wall times."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, str, str, float]] = []  # kind, name, status, time
        self.describes: list[tuple[str, float]] = []  # kind, time
        self._last: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def attach(self, sim: Any) -> None:
        scheduler = sim.ctx.scheduler
        original_after = scheduler.after

        def after(delay: float, task: Callable[[], None]) -> None:
            def observed() -> None:
                task()
                self._snapshot(sim)

            original_after(delay, observed)

        scheduler.after = after
        app = sim.app

        def counted(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if target == "SageMaker.DescribeCluster":
                self.describes.append(("hyperpod", time.time()))
            elif environ.get("REQUEST_METHOD") == "GET" and EKS_DESCRIBE.match(
                environ.get("PATH_INFO", "")
            ):
                self.describes.append(("eks", time.time()))
            result: Iterable[bytes] = app(environ, start_response)
            return result

        sim.app = counted

    def _snapshot(self, sim: Any) -> None:
        now = time.time()
        current = {("eks", n): c.status for n, c in sim.eks.clusters.items()}
        current |= {("hyperpod", n): c.status for n, c in sim.hyperpod.clusters.items()}
        with self._lock:
            for key, status in current.items():
                if self._last.get(key) != status:
                    self.changes.append((key[0], key[1], status, now))
                    self._last[key] = status


def _ts(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def modelled(wait: float, initial: float = 0.05, maximum: float = 15.0) -> dict[str, float]:
    """The stage engine's polling over a wait of `wait` seconds: polls and lag."""
    t, delay, polls = 0.0, initial, 1
    while t < wait:
        t += delay
        polls += 1
        delay = min(delay * 1.5, maximum)
    return {
        "wait_seconds": wait,
        "lag_seconds": round(t - wait, 2),
        "describe_calls": polls,
        "calls_per_minute": round(polls / (wait / 60), 2),
    }


def _describe_floor(endpoint: str, name: str) -> float:
    import boto3

    client = boto3.client(
        "eks",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    times = []
    for _ in range(20):
        start = time.perf_counter()
        client.describe_cluster(name=name)
        times.append((time.perf_counter() - start) * 1000)
    return median(times)


def run() -> dict[str, Any]:
    observer = Observer()
    with simulated_stack(instrument=observer.attach) as (stack, sim):
        api = httpx.Client(
            base_url=stack.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        deadline = time.monotonic() + 30
        while (zones := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
            assert time.monotonic() < deadline, zones.text
            time.sleep(0.1)
        name = f"lag-{time.time_ns() % 10**6}"
        spec = {
            "name": name,
            "availability_zone_id": zones.json()[0]["zone_id"],
            "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2}],
        }
        op_id = api.post("/api/v1/clusters", json=spec).json()["operation_id"]
        while (op := api.get(f"/api/v1/operations/{op_id}", params={"wait": 10}).json())[
            "status"
        ] not in ("succeeded", "failed"):
            pass
        assert op["status"] == "succeeded", op["error"]
        eks_name = next(c for c in sim.eks.clusters)
        floor_ms = _describe_floor(sim.endpoint_url, eks_name)

    waits: dict[str, Any] = {}
    for stage, (kind, status) in WAITS.items():
        events = [e for e in op["events"] if e["payload"].get("stage") == stage]
        submitted = next(_ts(e["occurred_at"]) for e in events if e["type"] == "StageSubmitted")
        succeeded = next(_ts(e["occurred_at"]) for e in events if e["type"] == "StageSucceeded")
        changed = next(
            t for k, _, s, t in observer.changes if k == kind and s == status and t >= submitted
        )
        calls = [t for k, t in observer.describes if k == kind and submitted <= t <= succeeded]
        waited = succeeded - submitted
        waits[stage] = {
            "simulated_wait_seconds": round(changed - submitted, 3),
            "lag_ms": round((succeeded - changed) * 1000, 1),
            "describe_calls": len(calls),
            "calls_per_minute": round(len(calls) / (waited / 60), 1),
            "real_profile_model": modelled(REAL_SECONDS[stage]),
        }
    lags = [w["lag_ms"] for w in waits.values()]
    return {
        "what": "simulated state change -> our StageSucceeded event; describe calls while waiting",
        "floor": "one DescribeCluster round trip to the simulator",
        "waits": waits,
        "floor_ms": round(floor_ms, 2),
        "summary": {
            "eks_lag_ms": waits["eks_cluster"]["lag_ms"],
            "hyperpod_lag_ms": waits["hyperpod_cluster"]["lag_ms"],
            "max_lag_ms": max(lags),
            "floor_ms": round(floor_ms, 2),
            "ratio": round(max(lags) / floor_ms, 1),
            "eks_calls_per_minute": waits["eks_cluster"]["calls_per_minute"],
            "hyperpod_calls_per_minute": waits["hyperpod_cluster"]["calls_per_minute"],
            "real_eks_lag_s": waits["eks_cluster"]["real_profile_model"]["lag_seconds"],
            "real_eks_calls_per_minute": waits["eks_cluster"]["real_profile_model"][
                "calls_per_minute"
            ],
        },
        "goal": "none set in the issue (lag is bounded by the poll backoff, POLL_MAX_SECONDS)",
    }


def main() -> None:
    result = run()
    path = record("status_lag", result)
    s = result["summary"]
    print(
        f"status lag (fast profile): EKS {s['eks_lag_ms']} ms, HyperPod {s['hyperpod_lag_ms']} ms "
        f"(one describe: {s['floor_ms']} ms); describes/min EKS {s['eks_calls_per_minute']}, "
        f"HyperPod {s['hyperpod_calls_per_minute']}; real profile (model): EKS lag "
        f"{s['real_eks_lag_s']} s at {s['real_eks_calls_per_minute']} calls/min -> {path}"
    )


if __name__ == "__main__":
    main()
