"""Workflow critical path: a full cluster creation (fast profile) against the longest chain of
its dependent stages, and against the same stages run one after another.

    .venv/bin/python -m bench.workflow [--runs 3]

Writes bench/results/workflow.json. Goal: total <= 1.1 x the critical path.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from typing import Any

import httpx

from bench.common import TOKEN, median, record, simulated_stack
from shared.stages import Done, Stage, StageContext, Workflow


async def _noop(ctx: StageContext[Any]) -> Done:
    return Done()


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def measure(op: dict[str, Any]) -> dict[str, Any]:
    stages = op["stages"]
    durations = {s["name"]: _seconds(s["started_at"], s["finished_at"]) for s in stages}
    graph: Workflow[Any] = Workflow(
        kind="bench",
        domain="bench",
        stages=tuple(Stage(s["name"], s["title"], _noop, needs=tuple(s["needs"])) for s in stages),
    )
    critical = graph.critical_path(durations)
    total = _seconds(min(s["started_at"] for s in stages), max(s["finished_at"] for s in stages))
    accepted_to_done = _seconds(op["created_at"], op["finished_at"])
    return {
        "total_seconds": round(total, 3),
        "accepted_to_terminal_seconds": round(accepted_to_done, 3),
        "critical_path_seconds": round(critical, 3),
        "sequential_seconds": round(sum(durations.values()), 3),
        "ratio_to_critical_path": round(total / critical, 3),
        "stages": {name: round(d, 3) for name, d in durations.items()},
    }


def run(runs: int) -> dict[str, Any]:
    results = []
    with simulated_stack({"POLL_MAX_SECONDS": "0.5"}) as (stack, _sim):
        api = httpx.Client(
            base_url=stack.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        deadline = time.monotonic() + 30
        while (zones := api.get("/api/v1/inspect/availability-zones")).status_code != 200:
            assert time.monotonic() < deadline, zones.text
            time.sleep(0.1)
        zone = zones.json()[0]["zone_id"]
        for i in range(runs):
            spec = {
                "name": f"bench-{i}-{time.time_ns() % 10**6}",
                "availability_zone_id": zone,
                "instance_groups": [{"name": "gpu", "instance_type": "ml.g5.8xlarge", "count": 2}],
            }
            op_id = api.post("/api/v1/clusters", json=spec).json()["operation_id"]
            while (op := api.get(f"/api/v1/operations/{op_id}", params={"wait": 10}).json())[
                "status"
            ] not in (
                "succeeded",
                "failed",
            ):
                pass
            assert op["status"] == "succeeded", op["error"]
            results.append(measure(op))
            delete = api.delete(f"/api/v1/clusters/{spec['name']}").json()["operation_id"]
            api.get(f"/api/v1/operations/{delete}", params={"wait": 60})
    summary = {
        key: median([r[key] for r in results])
        for key in (
            "total_seconds",
            "accepted_to_terminal_seconds",
            "critical_path_seconds",
            "sequential_seconds",
            "ratio_to_critical_path",
        )
    }
    return {"runs": results, "median": summary, "goal": "total <= 1.1 x critical path"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = run(args.runs)
    path = record("workflow", result)
    m = result["median"]
    print(
        f"cluster creation (fast profile, median of {args.runs}): total {m['total_seconds']:.2f}s | "
        f"critical path {m['critical_path_seconds']:.2f}s (ratio {m['ratio_to_critical_path']:.3f}) | "
        f"stages one after another {m['sequential_seconds']:.2f}s -> {path}"
    )


if __name__ == "__main__":
    main()
