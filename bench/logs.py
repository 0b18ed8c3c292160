"""Benchmark of job logs over WebSocket: lines per second from the pods to a client.

The whole path is the product's: the emulated cluster's pod log API -> workload-svc (log pages
over NATS request/reply) -> the gateway -> a WebSocket client. A training job is submitted
through REST; pods of that job (labelled as its pods) print `--lines` numbered lines each as
fast as the emulator writes them; the client follows every pod until it ends, checks the
sequence (no line lost or repeated) and records lines/s. Floor, in the same run: `kubectl logs -f`
of the same pods on the same emulator, one kubectl per pod in parallel, straight from the API
server (no control plane in between). Writes bench/results/logs.json.

    .venv/bin/python -m bench.logs [--pods 4] [--lines 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.common import TOKEN, record, simulated_stack

GOAL_LINES_PER_SECOND = 10_000


def _cluster(api: httpx.Client, name: str) -> None:
    deadline = time.monotonic() + 60
    while (zones := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
        assert time.monotonic() < deadline, zones.text
        time.sleep(0.2)
    zone = zones.json()[0]["zone_id"]
    body = {
        "name": name,
        "availability_zone_id": zone,
        "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2}],
    }
    _wait(api, api.post("/api/v1/clusters", json=body).json()["operation_id"], 300)


def _wait(api: httpx.Client, operation_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        op = api.get(f"/api/v1/operations/{operation_id}", params={"wait": 5}).json()
        if op["status"] in ("succeeded", "noop"):
            return
        assert op["status"] not in ("failed", "cancelled"), op
        assert time.monotonic() < deadline, op


def _flood_pods(sim: Any, cluster: str, job: str, pods: int, lines: int) -> list[str]:
    """Pods of `job` that print `lines` numbered lines and exit."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    server = sim.ctx.kube.api_server(cluster)
    api = k8s_config.new_client_from_config_dict(server.kubeconfig())  # type: ignore[no-untyped-call]
    core = k8s.CoreV1Api(api)
    text = "\\n".join(f"line {i}" for i in range(lines))
    names = []
    for index in range(pods):
        name = f"{job}-flood-{index}"
        pod: Any = {  # the client accepts a manifest as well as a V1Pod
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"hyperpilot.dev/job": job}},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"sagemaker.amazonaws.com/instance-group-name": "gpu"},
                "containers": [{"name": "flood", "image": "busybox", "command": ["printf", text]}],
            },
        }
        core.create_namespaced_pod("default", pod)
        names.append(name)
    return names


def _kubectl_floor(sim: Any, cluster: str, pods: list[str], lines: int) -> float:
    """Seconds for `kubectl logs -f` (one per pod, in parallel) to read every pod's log."""
    import yaml

    kubectl = Path(sys.executable).parent / "kubectl"
    server = sim.ctx.kube.api_server(cluster)
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=False) as f:
        yaml.safe_dump(server.kubeconfig(), f)
        config = f.name
    started = time.perf_counter()
    runs = [
        subprocess.Popen(
            [str(kubectl), "--kubeconfig", config, "logs", "-f", "-n", "default", pod],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for pod in pods
    ]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    seconds = time.perf_counter() - started
    Path(config).unlink()
    for pod, output in zip(pods, outputs, strict=True):
        assert output.count(b"\n") >= lines - 1, f"kubectl logs -f {pod}: short read"
    return seconds


async def _stream(url: str, pods: list[str]) -> tuple[dict[str, list[str]], float]:
    received: dict[str, list[str]] = {p: [] for p in pods}
    ended: set[str] = set()
    query = "&".join(f"pod={p}" for p in pods)
    started = time.perf_counter()
    async with websockets.connect(
        f"{url}?{query}", additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None
    ) as ws:
        while ended != set(pods):
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=60))
            if frame["type"] == "lines":
                got = received[frame["pod"]]
                assert frame["start"] == len(got), f"gap or repeat in {frame['pod']}"
                got.extend(frame["lines"])
            elif frame["type"] == "end":
                ended.add(frame["pod"])
            elif frame["type"] == "error":
                raise AssertionError(frame)
    return received, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=4)
    parser.add_argument(
        "--lines", type=int, default=20000, help="per pod (the emulator keeps 20000)"
    )
    args = parser.parse_args()
    with simulated_stack() as (stack, sim):
        api = httpx.Client(
            base_url=stack.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        cluster, job = "bench-logs", "flood"
        _cluster(api, cluster)
        submitted = api.post(
            f"/api/v1/clusters/{cluster}/jobs",
            json={
                "recipe": "pytorch",
                "name": job,
                "instance_group": "gpu",
                "script": "train.py",
                "resources": {"gpus": 0},
            },
        )
        assert submitted.status_code == 202, submitted.text
        _wait(api, submitted.json()["operation_id"], 60)
        pods = _flood_pods(sim, cluster, job, args.pods, args.lines)
        # The lines are written as the containers start: wait for them, so the run measures
        # the delivery path rather than the emulated container start.
        deadline = time.monotonic() + 60
        for pod in pods:
            while (
                api.get(
                    f"/api/v1/clusters/{cluster}/jobs/{job}/logs", params={"pod": pod}
                ).text.count("\n")
                < args.lines
            ):
                assert time.monotonic() < deadline, pod
                time.sleep(0.2)
        url = stack.url.replace("http", "ws", 1) + f"/api/v1/clusters/{cluster}/jobs/{job}/logs/ws"
        received, seconds = asyncio.run(_stream(url, pods))
        for pod, lines in received.items():
            assert lines == [f"line {i}" for i in range(args.lines)], f"{pod}: sequence broken"
        total = sum(len(v) for v in received.values())
        rate = total / seconds
        floor_seconds = _kubectl_floor(sim, cluster, pods, args.lines)
        floor_rate = total / floor_seconds
        result = {
            "pods": args.pods,
            "lines_per_pod": args.lines,
            "lines": total,
            "seconds": round(seconds, 3),
            "lines_per_second_per_job": round(rate),
            "goal_lines_per_second_per_job": GOAL_LINES_PER_SECOND,
            "meets_goal": rate >= GOAL_LINES_PER_SECOND,
            "floor": "kubectl logs -f, one per pod in parallel, same pods, same emulator",
            "floor_seconds": round(floor_seconds, 3),
            "floor_lines_per_second": round(floor_rate),
            "ratio_to_floor": round(rate / floor_rate, 3),
            "sequence_check": "every line once, in order",
        }
        path = record("logs", result)
        print(json.dumps(result, indent=2))
        print(f"written to {path}")


if __name__ == "__main__":
    main()
