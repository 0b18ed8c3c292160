"""The `hyperpilot` binary against the real stack in the simulated world: what a user sees."""

from __future__ import annotations

import json
import re
import signal
import socket
import stat
import time
from typing import Any

import httpx
import pytest
import yaml

from sim.aws import SimulatedAws
from sim.testing import inject_fault
from tests.cli.conftest import Cli, InProcessCli
from tests.e2e.conftest import TOKEN, RunningStack, unique


def _json(out: str) -> Any:
    return json.loads(out)


def test_storage_create_with_wait_prints_the_operation_as_json(cli: Cli, cli_in: Cli) -> None:
    name = unique("cli-json")
    done = cli.run("storage", "create", name, "--wait", "--output", "json")
    assert done.returncode == 0, done.stderr
    op = _json(done.stdout)
    assert op["status"] == "succeeded"
    assert op["kind"] == "storage.create" and op["target_id"] == name
    assert op["source"] == "cli"
    assert {s["name"]: s["status"] for s in op["stages"]} == {
        "bucket": "succeeded",
        "public_access": "succeeded",
        "encryption": "succeeded",
    }
    assert [e["type"] for e in op["events"]][-1] == "OperationSucceeded"
    # Progress went to stderr, one line per change (not a terminal), stage by stage.
    assert f"operation {op['id']}" in done.stderr
    for stage in ("bucket", "public_access", "encryption"):
        assert any(stage in line and "succeeded" in line for line in done.stderr.splitlines())

    listed = cli_in.run("storage", "list", "-o", "json")
    assert listed.returncode == 0
    assert any(b["name"] == name and b["status"] == "available" for b in _json(listed.stdout))
    described = cli_in.run("storage", "describe", name, "-o", "yaml")
    assert described.returncode == 0
    assert yaml.safe_load(described.stdout)["arn"] == f"arn:aws:s3:::{name}"
    table = cli_in.run("storage", "list")
    assert table.returncode == 0
    assert "NAME" in table.stdout and name in table.stdout and "available" in table.stdout


def test_dry_run_prints_the_plan_and_changes_nothing(cli_in: Cli) -> None:
    name = unique("cli-dry")
    planned = cli_in.run("storage", "create", name, "--dry-run", "-o", "json")
    assert planned.returncode == 0, planned.stderr
    plan = _json(planned.stdout)["plan"]
    assert (
        plan["command"] == "CreateStorageBucket" and plan["calls"][0]["operation"] == "CreateBucket"
    )
    assert cli_in.run("storage", "describe", name).returncode != 0  # nothing was stored
    deleting = cli_in.run("clusters", "delete", "no-such-cluster", "--dry-run")
    assert deleting.returncode == 2 and "no-such-cluster" in deleting.stderr


def test_a_mutation_without_wait_answers_the_operation_and_how_to_follow_it(cli_in: Cli) -> None:
    name = unique("cli-nowait")
    done = cli_in.run("storage", "create", name)
    assert done.returncode == 0, done.stderr
    assert "accepted: operation " in done.stdout
    op_id = done.stdout.split("accepted: operation ")[1].split()[0]
    assert f"hyperpilot operations wait {op_id}" in done.stdout
    waited = cli_in.run("operations", "wait", op_id, "-o", "json")
    assert waited.returncode == 0, waited.stderr
    assert _json(waited.stdout)["status"] == "succeeded"
    shown = cli_in.run("operations", "show", op_id)
    assert shown.returncode == 0
    assert "storage.create" in shown.stdout and "public_access" in shown.stdout
    listed = cli_in.run("operations", "list", "--target", name, "-o", "json")
    assert [o["id"] for o in _json(listed.stdout)] == [op_id]


def test_validation_errors_exit_2_naming_the_field_and_the_fix(cli: Cli, cli_in: Cli) -> None:
    bad_bucket = cli.run("storage", "create", "Bad_Name", "--wait")
    assert bad_bucket.returncode == 2
    assert "validation_error (HTTP 422)" in bad_bucket.stderr
    assert "  name: bucket name" in bad_bucket.stderr
    assert "hint: use 3-63 lowercase letters" in bad_bucket.stderr
    assert bad_bucket.stdout == ""

    bad_zone = cli.run(
        "clusters",
        "create",
        "--name",
        unique("cli-zone"),
        "--zone",
        "nowhere-1",
        "-g",
        "name=workers,type=ml.g5.8xlarge,count=1",
    )
    assert bad_zone.returncode == 2
    assert "availability_zone_id:" in bad_zone.stderr
    assert "hint:" in bad_zone.stderr

    extra = cli_in.run(
        "clusters",
        "create",
        "--name",
        "c1",
        "--zone",
        "use1-az2",
        "-g",
        "name=w,type=ml.g5.8xlarge,count=1,color=red",
    )
    assert extra.returncode == 2
    assert "instance_groups.0.color" in extra.stderr and "remove this field" in extra.stderr

    malformed = cli_in.run("clusters", "create", "--name", "c1", "-g", "workers")
    assert malformed.returncode == 2
    assert "is not key=value" in malformed.stderr

    missing = cli_in.run("storage", "describe", "no-such-bucket-here")
    assert missing.returncode == 2
    assert "not_found (HTTP 404)" in missing.stderr
    assert "hint:" in missing.stderr

    usage = cli_in.run("storage", "create")
    assert usage.returncode == 2


def test_a_failed_operation_exits_1_and_retry_wait_exits_0(
    cli: Cli, cli_in: Cli, sim_aws: SimulatedAws
) -> None:
    name = unique("cli-retry")
    with inject_fault(
        sim_aws,
        "error",
        service="s3",
        operation="PutBucketEncryption",
        times=None,
        code="AccessDenied",
        status=403,
    ):
        failed = cli.run("storage", "create", name, "--wait")
    assert failed.returncode == 1, failed.stderr
    assert "failed" in failed.stdout and "AccessDenied" in failed.stdout
    op_id = failed.stdout.split("operation ")[1].split()[0]
    assert f"hyperpilot operations retry {op_id}" in failed.stdout
    assert any("encryption" in line and "failed" in line for line in failed.stderr.splitlines())

    shown = cli_in.run("operations", "show", op_id, "-o", "json")
    assert _json(shown.stdout)["status"] == "failed"

    retried = cli_in.run("operations", "retry", op_id, "--wait", "-o", "json")
    assert retried.returncode == 0, retried.stderr
    op = _json(retried.stdout)
    assert op["status"] == "succeeded" and op["attempt"] == 2
    assert {s["name"]: s["attempts"] for s in op["stages"]}["encryption"] == 2

    # The same caller's retry again is answered (a repeated request); another caller's is a
    # new request, refused: the operation is not failed any more.
    assert cli_in.run("operations", "retry", op_id).returncode == 0
    token = httpx.post(
        f"{cli.url}/api/v1/tokens",
        json={"name": f"op-{name}", "role": "operator"},
        headers={"Authorization": f"Bearer {cli.token}"},
    ).json()["token"]
    again = InProcessCli(cli_in.url, token, cli_in.config_home).run("operations", "retry", op_id)
    assert again.returncode == 2
    assert "not_retryable (HTTP 409)" in again.stderr


def test_events_list_tail_and_audit(cli: Cli, cli_in: Cli) -> None:
    name = unique("cli-events")
    created = cli_in.run("storage", "create", name, "-o", "json")
    op_id = _json(created.stdout)["operation_id"]

    tail = cli.run(
        "events", "tail", "--operation", op_id, "--until-terminal", "-o", "json", timeout=30
    )
    assert tail.returncode == 0, tail.stderr
    lines = [json.loads(line) for line in tail.stdout.splitlines()]
    assert lines[0]["type"] == "OperationAccepted"
    assert lines[-1]["type"] == "OperationSucceeded"
    assert all(e["operation_id"] == op_id for e in lines)
    seqs = [e["seq"] for e in lines]
    assert seqs == sorted(seqs)

    limited = cli_in.run("events", "tail", "--after", "0", "--limit", "3", "-o", "json")
    assert limited.returncode == 0
    assert len(limited.stdout.splitlines()) == 3

    listed = cli_in.run("events", "list", "--operation", op_id)
    assert listed.returncode == 0
    assert "OperationSucceeded" in listed.stdout and "stage=bucket" in listed.stdout

    audit = cli_in.run("events", "audit", "--operation", op_id, "-o", "json")
    assert audit.returncode == 0
    records = _json(audit.stdout)
    assert records and {r["source"] for r in records} >= {"cli"}

    plain = cli_in.run("events", "tail", "--operation", op_id, "--until-terminal")
    assert plain.returncode == 0
    assert "OperationSucceeded" in plain.stdout.splitlines()[-1]


# In `make reliability`: in loaded runs the CLI did not always exit within 20 s of its SIGINT;
# the wait now exits from a SIGINT handler at once (hyperpilot/commands/common.py), the
# likeliest cause fixed, not proven (docs/reliability.md).
@pytest.mark.slow
def test_ctrl_c_during_a_wait_leaves_the_operation_running_and_says_how_to_resume(
    cli: Cli, cli_in: Cli, module_stack: RunningStack
) -> None:
    stack = module_stack.stack
    stack.kill_service("cluster-svc")
    try:
        process = cli.start("storage", "create", unique("cli-sigint"), "--wait")
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith("operation "), first
        op_id = first.split()[1]
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=20)
        assert process.returncode == 130
        assert f"hyperpilot operations wait {op_id}" in rest
        assert "keeps running" in rest
        shown = cli_in.run("operations", "show", op_id, "-o", "json")
        assert _json(shown.stdout)["status"] == "pending"

        other = _json(cli_in.run("storage", "create", unique("cli-cancel"), "-o", "json").stdout)
        cancelled = cli_in.run(
            "operations", "cancel", other["operation_id"], "--wait", "-o", "json"
        )
        assert cancelled.returncode == 3, cancelled.stderr
        assert _json(cancelled.stdout)["status"] == "cancelled"
    finally:
        stack.start_service("cluster-svc")
    resumed = cli_in.run("operations", "wait", op_id, "-o", "json", timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert _json(resumed.stdout)["status"] == "succeeded"


def test_clusters_list_describe_use_as_far_as_the_api_answers(cli_in: Cli) -> None:
    listed = cli_in.run("clusters", "list", "-o", "json")
    assert listed.returncode == 0
    assert isinstance(_json(listed.stdout), list)
    assert cli_in.run("clusters", "list").returncode == 0

    missing = cli_in.run("clusters", "describe", "no-such-cluster")
    assert missing.returncode == 2
    assert "not_found" in missing.stderr

    no_active = cli_in.run("clusters", "describe")
    assert no_active.returncode == 2
    assert "no_active_cluster" in no_active.stderr

    use = cli_in.run("clusters", "use", "no-such-cluster")
    assert use.returncode == 2 and "not_found" in use.stderr

    delete = cli_in.run("clusters", "delete", "no-such-cluster", "--yes")
    assert delete.returncode == 2 and "not_found" in delete.stderr

    unconfirmed = cli_in.run("clusters", "delete", "no-such-cluster")
    assert unconfirmed.returncode == 2 and "--yes" in unconfirmed.stderr


def test_connection_and_authorization_errors(cli: Cli, cli_in: Cli) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = cli.run("--url", f"http://127.0.0.1:{port}", "storage", "list")
    assert down.returncode == 4
    assert "cannot reach the gateway" in down.stderr

    denied = cli_in.run("storage", "list", HYPERPILOT_TOKEN="hp_not_a_token")
    assert denied.returncode == 2
    assert "HTTP 401" in denied.stderr and "HYPERPILOT_TOKEN" in denied.stderr


def test_a_profile_supplies_url_and_token(cli_in: Cli) -> None:
    added = cli_in.run("profile", "add", "local", "--url", cli_in.url, "--token", TOKEN)
    assert added.returncode == 0, added.stderr
    path = cli_in.config_home / "hyperpilot" / "config.yaml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = cli_in.run("storage", "list", "-o", "json", HYPERPILOT_URL="", HYPERPILOT_TOKEN="")
    assert listed.returncode == 0, listed.stderr
    shown = cli_in.run("profile", "show", "-o", "json", HYPERPILOT_URL="", HYPERPILOT_TOKEN="")
    info = _json(shown.stdout)
    assert info["profile"] == "local" and info["url"] == cli_in.url
    assert TOKEN not in shown.stdout
    profiles = cli_in.run("profile", "list")
    assert "local" in profiles.stdout and TOKEN not in profiles.stdout


def _cluster_args(cli_in: Cli, name: str) -> list[str]:
    """Flags for a cluster in a zone that offers the instance type (asked of the CLI itself)."""
    zones = _json(cli_in.run("inspect", "availability-zones", "-o", "json").stdout)
    zone = zones[0]["zone_id"]
    offered = _json(cli_in.run("inspect", "instance-types", "--zone", zone, "-o", "json").stdout)
    types = [t["instance_type"] for t in offered if zone in t["availability_zone_ids"]]
    instance_type = "ml.g5.8xlarge" if "ml.g5.8xlarge" in types else types[0]
    return ["--name", name, "--zone", zone, "-g", f"name=gpu,type={instance_type},count=2"]


STEP = re.compile(r"^step (\d+)/(\d+) ")


def _job_logs_follow_to_the_end(cli: Cli, cli_in: Cli) -> None:
    """A job submitted by recipe; `jobs logs -f` streams its log until the job ends."""
    submitted = cli_in.run(
        "jobs", "submit", "--recipe", "pytorch", "--name", "cli-ddp", "--instance-group", "gpu",
        "--script", "code/train.py", "--gpus", "1", "--wait", "-o", "json",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr[-2000:]
    deadline = time.monotonic() + 60
    while (
        not (job := _json(cli_in.run("jobs", "describe", "cli-ddp", "-o", "json").stdout))
        .get("live", {})
        .get("observed", {})
        .get("pods")
    ):
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    followed = cli.run("jobs", "logs", "cli-ddp", "-f", "--interval", "0.3", timeout=180)
    assert followed.returncode == 0, followed.stderr[-2000:]
    steps = [int(m.group(1)) for line in followed.stdout.splitlines() if (m := STEP.match(line))]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) == 100  # none lost or repeated
    assert "job cli-ddp succeeded" in followed.stderr
    jobs = _json(cli_in.run("jobs", "list", "-o", "json").stdout)
    assert [(j["name"], j["status"]) for j in jobs] == [("cli-ddp", "succeeded")]


def test_create_a_cluster_with_wait_and_json_then_use_describe_and_delete_it(
    cli: Cli, cli_in: Cli
) -> None:
    name = unique("cli-hp")
    created = cli.run(
        "clusters", "create", *_cluster_args(cli_in, name), "--wait", "-o", "json", timeout=240
    )
    assert created.returncode == 0, created.stderr[-3000:]
    op = _json(created.stdout)
    assert op["status"] == "succeeded" and op["kind"] == "cluster.create"
    stages = {s["name"]: s["status"] for s in op["stages"]}
    assert {"preflight", "network", "eks_cluster", "hyperpod_cluster", "storage"} <= set(stages)
    assert all(status in ("succeeded", "noop") for status in stages.values()), stages
    # The progress display named every stage as it went.
    for stage in ("eks_cluster", "hyperpod_cluster"):
        assert any(stage in line and "running" in line for line in created.stderr.splitlines())

    described = _json(cli_in.run("clusters", "describe", name, "-o", "json").stdout)
    assert described["status"] == "active"
    assert described["instance_groups"][0]["count"] == 2
    completed = cli.run(
        _HYPERPILOT_COMPLETE="complete_bash",
        COMP_WORDS=f"hyperpilot clusters describe {name[:6]}",
        COMP_CWORD="3",
    )
    assert name in completed.stdout.split()  # shell completion asks the gateway
    used = cli_in.run("clusters", "use", name)
    assert used.returncode == 0 and f"active cluster: {name}" in used.stdout
    listed = cli_in.run("clusters", "list")
    assert any(line.startswith("*") and name in line for line in listed.stdout.splitlines())
    active = cli_in.run("clusters", "describe")
    assert active.returncode == 0 and name in active.stdout and "gpu" in active.stdout

    groups = _json(cli_in.run("instance-groups", "list", "-o", "json").stdout)
    assert [(g["name"], g["count"]) for g in groups] == [("gpu", 2)]
    plan = cli_in.run("instance-groups", "update", "gpu", "--count", "3", "--dry-run", "-o", "json")
    assert plan.returncode == 0, plan.stderr
    assert _json(plan.stdout)["plan"]["diff"]["count"] == {"actual": 2, "requested": 3}
    scaled = cli_in.run("instance-groups", "update", "gpu", "--count", "3", "--wait", "-o", "json")
    assert scaled.returncode == 0, scaled.stderr[-3000:]
    assert _json(scaled.stdout)["status"] == "succeeded"
    nodes = _json(cli_in.run("nodes", "list", "-o", "json").stdout)
    assert len(nodes["nodes"]) >= 2 and all(n["instance_group"] == "gpu" for n in nodes["nodes"])
    features = _json(cli_in.run("features", "show", "-o", "json").stdout)
    assert "training_operator" in features
    components = _json(cli_in.run("dependencies", "list", "-o", "json").stdout)
    assert components and {c["status"] for c in components} <= {
        "installed",
        "upgraded",
        "unchanged",
    }

    _job_logs_follow_to_the_end(cli, cli_in)
    _diagnose_the_job_pod(cli, cli_in)

    duplicate = cli_in.run("clusters", "create", *_cluster_args(cli_in, name))
    assert duplicate.returncode == 2
    assert "  name: " in duplicate.stderr and "hint:" in duplicate.stderr

    deleted = cli_in.run("clusters", "delete", name, "--yes", "--wait", "-o", "json")
    assert deleted.returncode == 0, deleted.stderr[-3000:]
    assert _json(deleted.stdout)["status"] == "succeeded"
    gone = cli_in.run("clusters", "describe", name)
    assert gone.returncode == 2 and "not_found" in gone.stderr


def _diagnose_the_job_pod(cli: Cli, cli_in: Cli) -> None:
    """`diagnose pods|events|logs` on the finished job's pod; `--previous` of a pod that never
    restarted is a 404 that says so; a bad selector exits 2 naming the field."""
    pods = _json(
        cli_in.run("diagnose", "pods", "-l", "hyperpilot.dev/job=cli-ddp", "-o", "json").stdout
    )
    (pod,) = pods["pods"]
    assert pod["namespace"] == "default" and pod["status"] == "Completed"
    assert pod["restarts"] == 0 and pod["containers"][0]["exit_code"] == 0
    table = cli.run("diagnose", "pods", "-l", "hyperpilot.dev/job=cli-ddp")
    assert table.returncode == 0 and "STATUS" in table.stdout and pod["name"] in table.stdout
    events = _json(
        cli_in.run(
            "diagnose", "events", "-n", "default", "--kind", "Pod", "--object", pod["name"],
            "-o", "json",
        ).stdout
    )  # fmt: skip
    reasons = [e["reason"] for e in events["events"]]
    assert "Scheduled" in reasons and "Started" in reasons, reasons
    tail = cli.run("diagnose", "logs", pod["name"], "--tail", "3")
    assert tail.returncode == 0, tail.stderr
    steps = [int(m.group(1)) for line in tail.stdout.splitlines() if (m := STEP.match(line))]
    assert len(tail.stdout.splitlines()) == 3 and steps[-1] == 100, tail.stdout
    never = cli.run("diagnose", "logs", pod["name"], "--previous")
    assert never.returncode == 2 and "not_found (HTTP 404)" in never.stderr
    assert "has not restarted" in never.stderr and "hint:" in never.stderr
    job_previous = cli_in.run("jobs", "logs", "cli-ddp", "--previous")
    assert job_previous.returncode == 2 and "has not restarted" in job_previous.stderr
    bad = cli.run("diagnose", "pods", "-l", "app in (")
    assert bad.returncode == 2 and "query.selector" in bad.stderr and "hint:" in bad.stderr


def test_a_cluster_in_a_zone_without_the_instance_type_is_refused_with_the_field(
    cli_in: Cli,
) -> None:
    zones = _json(cli_in.run("inspect", "availability-zones", "-o", "json").stdout)
    offered = _json(cli_in.run("inspect", "instance-types", "-o", "json").stdout)
    for zone in (z["zone_id"] for z in zones):
        missing = [t["instance_type"] for t in offered if zone not in t["availability_zone_ids"]]
        if missing:
            break
    else:
        return
    refused = cli_in.run(
        "clusters",
        "create",
        "--name",
        unique("cli-nozone"),
        "--zone",
        zone,
        "-g",
        f"name=gpu,type={missing[0]},count=1",
    )
    assert refused.returncode == 2, refused.stdout
    assert "validation_error (HTTP 422)" in refused.stderr
    assert "instance_groups" in refused.stderr and "hint:" in refused.stderr
