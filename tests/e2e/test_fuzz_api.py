"""Bad input never gets a 5xx: requests generated from the OpenAPI spec (schemathesis), thousands
of them, against the real gateway and services. Slow: run with `make reliability`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import TOKEN, RunningStack

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_generated_requests_never_get_a_server_error(
    running_stack: RunningStack, tmp_path: Path
) -> None:
    report = tmp_path / "fuzz.ndjson"
    st = Path(sys.executable).parent / "st"
    run = subprocess.run(
        [
            str(st),
            "run",
            f"{running_stack.stack.url}/openapi.json",
            "-H",
            f"Authorization: Bearer {TOKEN}",
            "--checks",
            "not_a_server_error",
            "-n",
            str(EXAMPLES),
            "--exclude-path-regex",
            "/events/stream|/logs",  # endless streams
            "--report-ndjson-path",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    cases, failures = 0, []
    for line in report.read_text().splitlines():
        event = json.loads(line).get("ScenarioFinished")
        if not event:
            continue
        recorder = event["recorder"]
        cases += len(recorder.get("cases", {}))
        for case_id, checks in recorder.get("checks", {}).items():
            if any(c["status"] == "failure" for c in checks):
                failures.append(
                    (
                        recorder["label"],
                        recorder["interactions"].get(case_id, {}).get("request", {}).get("uri"),
                    )
                )
    summary = {"cases": cases, "server_errors": len(failures), "failures": failures[:20]}
    (Path(__file__).resolve().parents[2] / "bench" / "results" / "fuzz.json").write_text(
        json.dumps(summary, indent=2) + "\n"
    )
    assert cases >= 1000, run.stdout[-3000:]
    assert failures == [], run.stdout[-3000:]
