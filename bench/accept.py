"""Item 1, accept latency: POST /api/v1/storage/buckets -> 202 at rising load, against the floor
(a bare FastAPI endpoint doing one PostgreSQL INSERT, served like the gateway) in the same run.

The gateway runs alone (its outbox relay and live stream included; the audit row is written with its event) on the
embedded PostgreSQL and NATS: accepting is its whole job, and commands wait in JetStream. The
load comes from another process at a fixed rate (open loop); each rate is run on the floor,
then on the gateway, so both see the same machine. The rates the goals name (50 and 200 req/s)
run ten such rounds of 1.25 s, who goes first alternating, and each side's figures pool its
rounds: the machine's speed drifts by tens of percent within seconds, and short interleaved
rounds spread the drift over both sides alike.

    .venv/bin/python -m bench.accept [--seconds 2.5]

Writes bench/results/accept.json. Goals: p50 ratio <= 1.5; p99 <= 20 ms at 200 req/s.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.common import TOKEN, embedded_stack, record
from bench.floor import start_floor_app, stop_process
from bench.load import Target, run_rounds, run_step, sustained

RATES = (50, 100, 200, 400, 800, 1200, 1600, 2400)
GOAL_RATE = 200
ROUNDS = {50: 10, GOAL_RATE: 10}  # rates measured in interleaved rounds of half a step each


def _highest(steps: list[dict[str, Any]]) -> float:
    rates = [s["offered_rate"] for s in steps if sustained(s)]
    return max(rates, default=0.0)


def run(seconds: float) -> dict[str, Any]:
    from hyperpilot.infra import free_port

    ours_steps: list[dict[str, Any]] = []
    floor_steps: list[dict[str, Any]] = []
    with embedded_stack((("gateway", "gateway"),), with_sim=False) as stack:
        assert stack.database_url is not None
        port = free_port()
        floor_app = start_floor_app(stack.database_url, port, stack.state_dir)
        try:
            ours = Target(
                url=f"{stack.url}/api/v1/storage/buckets",
                body='{"name": "bench-{i}"}',
                headers=(("Authorization", f"Bearer {TOKEN}"),),
            )
            floor = Target(url=f"http://127.0.0.1:{port}/items", body='{"name": "bench-{i}"}')
            run_step(floor, 100, 1.0, "warm-")
            run_step(ours, 100, 1.0, "warm-")
            gateway = stack.processes["gateway"].pid
            floor_going = ours_going = True
            for rate in RATES:
                targets = [(floor, floor_app.pid)] if floor_going else []
                targets += [(ours, gateway)] if ours_going else []
                rounds = ROUNDS.get(rate, 1)
                each = seconds / 2 if rounds > 1 else seconds
                steps = run_rounds(
                    targets, rate, each, rounds, f"r{rate}-{time.time_ns() % 10**6}-"
                )
                if floor_going:
                    step = steps.pop(0)
                    floor_steps.append(step)
                    floor_going = sustained(step) or rate < GOAL_RATE
                if ours_going:
                    step = steps.pop(0)
                    ours_steps.append(step)
                    ours_going = sustained(step) or rate < GOAL_RATE
                if not floor_going and not ours_going:
                    break
        finally:
            stop_process(floor_app)
    at_goal = next(s for s in ours_steps if s["offered_rate"] == GOAL_RATE)
    floor_at_goal = next(s for s in floor_steps if s["offered_rate"] == GOAL_RATE)
    low = ours_steps[0]
    floor_low = floor_steps[0]
    return {
        "what": "POST /api/v1/storage/buckets -> 202, open-loop load from another process",
        "floor": "bare FastAPI + asyncpg endpoint, one INSERT, one uvicorn worker served like the gateway",
        "seconds_per_step": seconds,
        "ours": ours_steps,
        "floor_steps": floor_steps,
        "summary": {
            "p50_ms_at_50": low["p50_ms"],
            "floor_p50_ms_at_50": floor_low["p50_ms"],
            "p50_ms_at_200": at_goal["p50_ms"],
            "p99_ms_at_200": at_goal["p99_ms"],
            "floor_p50_ms_at_200": floor_at_goal["p50_ms"],
            "floor_p99_ms_at_200": floor_at_goal["p99_ms"],
            "ratio_p50_at_200": round(at_goal["p50_ms"] / floor_at_goal["p50_ms"], 2),
            "ratio_p99_at_200": round(at_goal["p99_ms"] / floor_at_goal["p99_ms"], 2),
            "cpu_ms_per_request_at_100": next(
                s["server_cpu_ms_per_request"] for s in ours_steps if s["offered_rate"] == 100
            ),
            "floor_cpu_ms_per_request_at_100": next(
                s["server_cpu_ms_per_request"] for s in floor_steps if s["offered_rate"] == 100
            ),
            "highest_sustained_rate": _highest(ours_steps),
            "floor_highest_sustained_rate": _highest(floor_steps),
        },
        "goal": "p50 ratio <= 1.5; p99 <= 20 ms at 200 req/s",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.5)
    args = parser.parse_args()
    result = run(args.seconds)
    path = record("accept", result)
    s = result["summary"]
    print(
        f"accept at 200 req/s: p50 {s['p50_ms_at_200']} ms (floor {s['floor_p50_ms_at_200']}, "
        f"ratio {s['ratio_p50_at_200']}), p99 {s['p99_ms_at_200']} ms (floor "
        f"{s['floor_p99_ms_at_200']}) | highest sustained {s['highest_sustained_rate']}/s "
        f"(floor {s['floor_highest_sustained_rate']}/s) -> {path}"
    )


if __name__ == "__main__":
    main()
