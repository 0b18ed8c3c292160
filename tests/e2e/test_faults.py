"""Faults lose nothing and repeat nothing: kill -9 mid-operation, NATS down, PostgreSQL down."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from hyperpilot.infra import start_postgres
from shared.migrate import migrate
from sim.aws import SimulatedAws
from tests.e2e.conftest import RunningStack, _stack, unique


def _mutations(sim: SimulatedAws, bucket: str) -> Counter[str]:
    return Counter(
        c["operation"] for c in sim.call_log("s3") if c["params"].get("Bucket") == bucket
    )


def _wait_for_event(
    stack: RunningStack, operation_id: str, event_type: str, stage: str | None
) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        events = stack.client.get("/api/v1/events", params={"operation_id": operation_id}).json()
        if any(
            e["type"] == event_type and (stage is None or e["payload"].get("stage") == stage)
            for e in events
        ):
            return
        time.sleep(0.005)
    raise AssertionError(f"no {event_type} for {stage}")


@pytest.mark.parametrize(
    ("event_type", "stage"),
    [
        ("OperationAccepted", None),  # killed before or while it consumed the command
        ("StageStarted", "bucket"),  # killed around the CreateBucket call
        ("StageSucceeded", "bucket"),  # killed while the concurrent stages run
    ],
)
def test_kill_9_mid_operation_completes_after_restart_with_each_mutation_once(
    running_stack: RunningStack, sim_aws: SimulatedAws, event_type: str, stage: str | None
) -> None:
    api, stack = running_stack.client, running_stack.stack
    name = unique("kill")
    op_id = api.post("/api/v1/storage/buckets", {"name": name}).json()["operation_id"]
    _wait_for_event(running_stack, op_id, event_type, stage)
    stack.kill_service("cluster-svc")
    stack.start_service("cluster-svc")
    op = api.wait(op_id)
    assert op["status"] == "succeeded", op
    mutations = _mutations(sim_aws, name)
    assert mutations["CreateBucket"] == 1
    assert mutations["PutBucketEncryption"] == 1
    assert mutations["PutPublicAccessBlock"] == 1


def test_repeated_kills_across_many_operations_lose_and_repeat_nothing(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api, stack = running_stack.client, running_stack.stack
    names = [unique(f"many{i}") for i in range(8)]
    ops = [api.post("/api/v1/storage/buckets", {"name": n}).json()["operation_id"] for n in names]
    for pause in (0.05, 0.15, 0.3):
        time.sleep(pause)
        stack.kill_service("cluster-svc")
        stack.start_service("cluster-svc")
    for op_id in ops:
        assert api.wait(op_id)["status"] == "succeeded"
    for name in names:
        assert _mutations(sim_aws, name)["CreateBucket"] == 1


def test_mutations_are_accepted_while_nats_is_down_and_complete_when_it_returns(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    running_stack.nats.stop()
    name = unique("natsdown")
    accepted = api.post("/api/v1/storage/buckets", {"name": name})
    assert accepted.status_code == 202
    op_id = accepted.json()["operation_id"]
    time.sleep(1.0)
    assert api.get(f"/api/v1/operations/{op_id}").json()["status"] == "pending"
    ready = httpx.get(f"{running_stack.stack.url}/readyz")
    assert ready.status_code == 503 and ready.json()["checks"]["nats"] == "unavailable"
    running_stack.nats.start()
    assert api.wait(op_id)["status"] == "succeeded"
    assert _mutations(sim_aws, name)["CreateBucket"] == 1


def test_postgres_down_is_a_clear_503_and_work_resumes_when_it_returns(
    tmp_path: Path, sim_aws: SimulatedAws
) -> None:
    # PostgreSQL runs as its own user, which pytest's private temp directories keep out.
    pg = start_postgres(Path(tempfile.mkdtemp(prefix="hp-pgdown-")) / "pg")
    dsn = pg.dsn()
    asyncio.run(migrate(dsn))
    try:
        with _stack(tmp_path, dsn, sim_aws) as running:
            api = running.client
            first = api.post("/api/v1/storage/buckets", {"name": unique("pgdown")}).json()[
                "operation_id"
            ]
            assert api.wait(first)["status"] == "succeeded"
            pg.stop()
            refused = api.post("/api/v1/storage/buckets", {"name": unique("pgdown")})
            assert refused.status_code == 503
            error = refused.json()["error"]
            assert (
                error["code"] == "database_unavailable" and "nothing was stored" in error["message"]
            )
            assert httpx.get(f"{running.stack.url}/readyz").status_code == 503
            pg.start()
            deadline = time.monotonic() + 30
            while True:
                again = api.post("/api/v1/storage/buckets", {"name": unique("pgback")})
                if again.status_code == 202 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert again.status_code == 202
            assert api.wait(again.json()["operation_id"])["status"] == "succeeded"
    finally:
        pg.stop()


def test_throttling_and_5xx_are_retried_inside_the_stage(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    from sim.testing import inject_fault

    api = running_stack.client
    name = unique("throttled")
    with (
        inject_fault(sim_aws, "throttle", service="s3", operation="CreateBucket", times=2),
        inject_fault(
            sim_aws, "server_error", service="s3", operation="PutBucketEncryption", times=1
        ),
    ):
        op = api.wait(api.post("/api/v1/storage/buckets", {"name": name}).json()["operation_id"])
    assert op["status"] == "succeeded", op.get("error")
    retries = [e["payload"] for e in op["events"] if e["type"] == "StageRetrying"]
    assert {r["stage"] for r in retries} == {"bucket", "encryption"}
    assert sorted(r["error"]["code"] for r in retries if r["stage"] == "bucket")[0] in (
        "SlowDown",
        "Throttling",
        "ThrottlingException",
    )
    assert [s["attempts"] for s in op["stages"]] == [1, 1, 1]  # retried inside, not re-run
    assert _mutations(sim_aws, name)["CreateBucket"] == 3  # two refused, one applied


def test_nats_restarted_mid_flight_loses_nothing(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    names = [unique(f"restart{i}") for i in range(10)]
    ops = [api.post("/api/v1/storage/buckets", {"name": n}).json()["operation_id"] for n in names]
    running_stack.nats.stop()
    time.sleep(0.5)
    names2 = [unique(f"during{i}") for i in range(5)]
    ops += [api.post("/api/v1/storage/buckets", {"name": n}).json()["operation_id"] for n in names2]
    running_stack.nats.start()
    for op in ops:
        assert api.wait(op)["status"] == "succeeded"
    for name in names + names2:
        assert _mutations(sim_aws, name)["CreateBucket"] == 1
