"""Generated requests from the OpenAPI document (schemathesis) against the real gateway and
services: no 5xx, and every answer as the document declares it (status code, content type, body
schema). Stateful too: schemathesis follows the document's links (a created bucket to its GET, an
accepted mutation to its operation) and the ones it infers, against a stack with a cluster in it.
Slow: run with `make reliability`.

Budget: FUZZ_EXAMPLES cases per operation in the fuzzing phase (default 40), FUZZ_STATEFUL
stateful scenarios (default 200) and FUZZ_MAX_SECONDS for the whole run (default 1500:
schemathesis is interrupted there and what it ran is reported). The seed
is drawn per run and printed unless FUZZ_SEED is set; FUZZ_OPERATION (e.g. "POST
/api/v1/storage/buckets") runs one operation only. What is checked where: schemathesis.toml."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway.auth import hash_token
from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, _stack, cluster_spec, unique

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
STATEFUL = int(os.environ.get("FUZZ_STATEFUL", "200"))
MAX_SECONDS = int(os.environ.get("FUZZ_MAX_SECONDS", "1500"))
SEED = int(os.environ.get("FUZZ_SEED") or random.SystemRandom().randrange(2**32))
OPERATION = os.environ.get("FUZZ_OPERATION")
MIN_CASES = 1000  # a smaller full run means most operations were not reached

CONFIG = Path(__file__).with_name("schemathesis.toml")
ROOT = Path(__file__).resolve().parents[2]

# The token the run authenticates with. Its name breaks the API's token-name rule, so no request
# the run generates can revoke or rotate it (the bootstrap "admin" token it may well revoke).
FUZZ_TOKEN_NAME = "Fuzz Admin"
FUZZ_TOKEN = "hp_fuzz_" + uuid.uuid4().hex


def replay_command(operation: str | None = None) -> str:
    env = f"FUZZ_SEED={SEED} FUZZ_EXAMPLES={EXAMPLES} FUZZ_STATEFUL={STATEFUL}"
    if operation:
        env += f" FUZZ_OPERATION={shlex.quote(operation)}"
    return f"{env} .venv/bin/pytest -q -m slow tests/e2e/test_fuzz_api.py -s"


@pytest.fixture
def fuzz_stack(tmp_path: Path, database_url: str, sim_aws: SimulatedAws) -> Iterator[RunningStack]:
    """A stack whose rate limit the run does not hit (429s would leave the routes untested),
    with the run's own admin token and a cluster for the requests to find."""
    env = {"MUTATIONS_PER_MINUTE": "1000000", "MUTATION_BURST": "1000000"}
    with _stack(tmp_path / "stack", database_url, sim_aws, env=env) as running:

        async def add_token() -> None:
            conn = await asyncpg.connect(database_url)
            try:
                await conn.execute(
                    "INSERT INTO api_tokens (id, name, token_hash, role) VALUES ($1, $2, $3, $4)",
                    uuid.uuid4(),
                    FUZZ_TOKEN_NAME,
                    hash_token(FUZZ_TOKEN),
                    "admin",
                )
            finally:
                await conn.close()

        asyncio.run(add_token())
        api = running.client
        name = unique("fuzz")
        accepted = api.post("/api/v1/clusters", cluster_spec(api, name, count=1))
        assert accepted.status_code == 202, accepted.text
        done = api.wait(accepted.json()["operation_id"], timeout=240)
        assert done["status"] == "succeeded", done.get("error")
        active = api.http.put("/api/v1/clusters/active", json={"name": name})
        assert active.status_code == 200, active.text
        yield running


def _decode(content: Any, limit: int = 400) -> str:
    if isinstance(content, dict) and "$base64" in content:
        text = base64.b64decode(content["$base64"]).decode("utf-8", "replace")
    elif content is None:
        text = ""
    else:
        text = json.dumps(content) if not isinstance(content, str) else content
    return text if len(text) <= limit else text[:limit] + "..."


def _curl(request: dict[str, Any]) -> str:
    """The request as a curl command line (the token left to $TOKEN)."""
    words = ["curl", "-X", shlex.quote(request.get("method", "GET"))]
    words += ["-H", '"Authorization: Bearer $TOKEN"']
    body = request.get("body")
    if body is not None:
        words += ["-H", "'Content-Type: application/json'"]
        words += ["--data-binary", shlex.quote(_decode(body, 4000))]
    words.append(shlex.quote(request.get("uri", "")))
    return " ".join(words)


def summarize(report: Path) -> tuple[int, dict[str, list[dict[str, Any]]], dict[str, int]]:
    """Cases run, failures grouped by operation (one per distinct failure), answers by status."""
    cases: set[str] = set()
    statuses: dict[str, int] = defaultdict(int)
    failures: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: set[tuple[str, str, str]] = set()
    for line in report.read_text().splitlines():
        event = json.loads(line).get("ScenarioFinished")
        if not event:
            continue
        recorder = event["recorder"]
        cases.update(recorder.get("cases", {}))
        for interaction in recorder.get("interactions", {}).values():
            statuses[str(interaction.get("response", {}).get("status_code"))] += 1
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                if check["status"] != "failure":
                    continue
                info = (check.get("failure_info") or {}).get("failure") or {}
                case = recorder["cases"].get(case_id, {}).get("value", {})
                operation = info.get("operation") or f"{case.get('method')} {case.get('path')}"
                message = info.get("message", "")
                key = (operation, check["name"], message.split("\n")[0])
                if key in seen:
                    continue
                seen.add(key)
                interaction = recorder["interactions"].get(case_id, {})
                response = interaction.get("response") or {}
                failures[operation].append(
                    {
                        "check": check["name"],
                        "title": info.get("title", ""),
                        "message": message,
                        "phase": event["phase"],
                        "case_id": case_id,
                        "status": response.get("status_code"),
                        "response": _decode(response.get("content")),
                        "curl": _curl(interaction.get("request") or {}),
                    }
                )
    return len(cases), dict(failures), dict(statuses)


@pytest.mark.slow
@pytest.mark.timeout(MAX_SECONDS + 900)
def test_generated_requests_get_no_server_error_and_conform_to_the_schema(
    fuzz_stack: RunningStack,
) -> None:
    # A directory of its own, kept: pytest's numbered ones are pruned by concurrent sessions.
    # schemathesis keeps its crash files (`st replay`) under .schemathesis/ there.
    workdir = Path(tempfile.mkdtemp(prefix="hp-fuzz-"))
    print(
        f"\nfuzz: seed {SEED}, {EXAMPLES} examples per operation, {STATEFUL} stateful scenarios,"
        f" at most {MAX_SECONDS} s"
    )
    print(f"fuzz: replay with `{replay_command(OPERATION)}`; report and output in {workdir}")
    report = workdir / "fuzz.ndjson"
    output = workdir / "st.txt"
    config = workdir / "schemathesis.toml"
    settings, replaced = re.subn(
        r"(?m)^stateful\.generation\.max-examples = \d+$",
        f"stateful.generation.max-examples = {STATEFUL}",
        CONFIG.read_text(),
    )
    assert replaced == 1, f"{CONFIG} sets no stateful.generation.max-examples"
    config.write_text(settings)
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file",
        str(config),
        "run",
        f"{fuzz_stack.stack.url}/openapi.json",
        "-H",
        f"Authorization: Bearer {FUZZ_TOKEN}",
        "--seed",
        str(SEED),
        "-n",
        str(EXAMPLES),
        "--report-ndjson-path",
        str(report),
        "--no-color",
    ]
    if OPERATION:
        command += ["--include-name", OPERATION]
    with output.open("w") as out:
        run = subprocess.Popen(command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
        try:
            run.wait(timeout=MAX_SECONDS)
            cut_short = False
        except subprocess.TimeoutExpired:
            cut_short = True
            run.send_signal(signal.SIGINT)  # it stops and writes what it ran
            try:
                run.wait(timeout=120)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
    tail = output.read_text()[-3000:]
    cases, failures, statuses = summarize(report)

    failed = sum(len(found) for found in failures.values())
    print(
        f"fuzz: {cases} cases, {failed} failures in {len(failures)} operations"
        + (f" (stopped at the {MAX_SECONDS} s bound)" if cut_short else "")
    )
    stateful = [
        " ".join(line.split())
        for line in output.read_text().splitlines()
        if line.strip().startswith(("Scenarios:", "API Links:"))
    ]
    for line in stateful:
        print(f"fuzz: stateful {line}")
    print("fuzz: answers by status: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    for operation, found in sorted(failures.items()):
        print(f"\n{operation}  (replay: {replay_command(operation)})")
        for failure in found:
            print(f"  - {failure['check']}: {failure['title']} [{failure['phase']}]")
            if failure["message"]:
                print("    " + failure["message"].replace("\n", "\n    "))
            print(f"    answered {failure['status']}: {failure['response']}")
            print(f"    request: {failure['curl']}")
            print(
                f"    cd {workdir} && st replay {failure['case_id']} --url $URL"
                ' --schema-location $URL/openapi.json -H "Authorization: Bearer $TOKEN"'
            )

    summary = {
        "seed": SEED,
        "examples_per_operation": EXAMPLES,
        "stateful_scenarios": STATEFUL,
        "checks": [
            "not_a_server_error",
            "status_code_conformance",
            "content_type_conformance",
            "response_schema_conformance",
        ],
        "phases": ["examples", "coverage", "fuzzing", "stateful"],
        "cases": cases,
        "stateful": stateful,
        "statuses": dict(sorted(statuses.items())),
        "cut_short": cut_short,
        "failures": {
            operation: [{k: f[k] for k in ("check", "message", "status", "curl")} for f in found]
            for operation, found in sorted(failures.items())
        },
    }
    if not OPERATION:
        (ROOT / "bench" / "results" / "fuzz.json").write_text(json.dumps(summary, indent=2) + "\n")

    assert cases >= (1 if OPERATION else MIN_CASES), tail
    assert failures == {}, f"{failed} failures (seed {SEED}); see above. Last output:\n{tail}"
