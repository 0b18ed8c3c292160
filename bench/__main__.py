"""`make bench`: every benchmark, each in its own process, then docs/performance.md.

    .venv/bin/python -m bench [--only accept,pipeline] [--report-only]

A benchmark that fails is reported and the others still run; the table then says which
result is missing. `bench.scale` alone takes about 30 minutes on 2 cores (its live fleet of 50
clusters is built and watched idle for 15 minutes: one drift period).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from bench import report
from bench.common import record

# (module, arguments, time limit in seconds)
BENCHMARKS: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("bench.accept", (), 150),
    ("bench.pipeline", (), 180),
    ("bench.fanout", (), 120),
    ("bench.status_lag", (), 300),
    ("bench.workflow", ("--runs", "3"), 150),
    ("bench.logs", (), 150),
    ("bench.k8s_api", ("--seconds", "10"), 90),
    ("bench.mcp_tools", (), 60),
    ("bench.capacity", ("--runs", "15"), 1500),
    ("bench.fleet", (), 1200),
    ("bench.scale", (), 3000),  # the live fleet of 50 clusters: about 30 minutes
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated names, e.g. accept,fanout")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the table")
    args = parser.parse_args()
    wanted = {f"bench.{n.strip()}" for n in args.only.split(",") if n.strip()}
    failed: list[str] = []
    start = time.monotonic()
    if not args.report_only:
        for module, extra, limit in BENCHMARKS:
            if wanted and module not in wanted:
                continue
            print(f"== {module}", flush=True)
            begun = time.monotonic()
            try:
                code = subprocess.run(
                    [sys.executable, "-m", module, *extra], timeout=limit, check=False
                ).returncode
            except subprocess.TimeoutExpired:
                code = -1
                print(f"{module} ran out of its {limit:.0f} s", flush=True)
            print(f"   ({time.monotonic() - begun:.0f} s)", flush=True)
            if code != 0:
                failed.append(module)
    elapsed = time.monotonic() - start
    if not args.report_only and not wanted:
        record("run", {"elapsed_seconds": round(elapsed, 1), "failed": failed})
    path = report.write()
    print(f"== {path} written; {elapsed:.0f} s in all")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
