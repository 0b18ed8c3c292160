"""A stage whose earlier run did its work but never recorded it (its worker, or PostgreSQL, died
in between) is redelivered, finds the work done and is counted as done by this operation: the
operation ends `succeeded`, not `noop`. A request that had nothing to do from its first run
still ends `noop`.

Real PostgreSQL, the real stage engine, the storage create workflow with its S3 adapter against
the simulated AWS; the "death" is a BaseException raised right after the stage's own function
returned, which the engine, like a killed process, does not get to record."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import asyncpg
import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.domain.storage import create_bucket_workflow
from shared.contracts.commands import CreateStorageBucket
from shared.errors import PermanentError
from shared.operations import create_operation, retry_operation
from shared.stages import Delivery, Done, RetryPolicy, Stage, StageContext, StageEngine, Workflow
from sim.aws import SimulatedAws
from sim.testing import call_log, simulated_aws
from tests.integration.helpers import events_of, stage_rows

REGION = "us-east-1"

sim = simulated_aws(profile="fast", account_id="333344445555", set_env=False, scope="module")


class WorkerDied(BaseException):
    """The process ended here: nothing after this point runs or is recorded."""


@pytest.fixture(scope="module")
def aws(sim: SimulatedAws) -> AwsClients:
    return AwsClients(REGION, endpoint_url=sim.endpoint_url)


def _engine(pool: asyncpg.Pool) -> StageEngine:
    return StageEngine(
        pool,
        poll_initial=0.01,
        poll_max=0.05,
        retry=RetryPolicy(attempts=3, initial=0.01, maximum=0.02),
    )


def _dies_after(workflow: Workflow[Any], name: str) -> Workflow[Any]:
    """The workflow with stage `name` running its real function, then its worker dying."""

    def dying(stage: Stage) -> Stage:
        async def run(ctx: StageContext[Any]) -> Any:
            await stage.run(ctx)  # the effect happens in AWS
            raise WorkerDied

        return Stage(stage.name, stage.title, run, stage.poll, stage.needs)

    stages = tuple(dying(s) if s.name == name else s for s in workflow.stages)
    return Workflow(
        kind=workflow.kind, domain=workflow.domain, stages=stages, command=workflow.command
    )


async def _bucket_operation(pool: asyncpg.Pool, name: str) -> tuple[uuid.UUID, dict[str, Any]]:
    command = CreateStorageBucket(name=name, region=REGION)
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            command,
            target_type="bucket",
            target_id=name,
            request={"name": name},
            principal="tester",
            source="rest",
            idempotency_key=None,
        )
    return accepted.operation_id, command.model_dump(mode="json")


def _delivery(message_id: uuid.UUID, attempt: int = 1) -> Delivery:
    return Delivery(
        consumer="cluster-svc",
        message_id=message_id,
        principal="tester",
        source="rest",
        attempt=attempt,
    )


def _creates(sim: SimulatedAws, name: str) -> int:
    return sum(1 for c in call_log(sim, "s3", "CreateBucket") if c["params"].get("Bucket") == name)


async def test_a_stage_done_before_its_worker_died_ends_the_operation_succeeded(
    pool: asyncpg.Pool, sim: SimulatedAws, aws: AwsClients
) -> None:
    name = f"interrupted-{uuid.uuid4().hex[:8]}"
    workflow = create_bucket_workflow(S3Buckets(aws))
    op, command = await _bucket_operation(pool, name)
    message = uuid.uuid4()  # a redelivery carries the same message

    with pytest.raises(WorkerDied):
        await _engine(pool).run(_dies_after(workflow, "bucket"), op, command, _delivery(message))
    # what the dead worker left: the bucket made in AWS, its stage recorded as running
    assert _creates(sim, name) == 1
    left = await stage_rows(pool, op)
    assert (left["bucket"]["status"], left["bucket"]["attempts"]) == ("running", 1)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT status FROM operations WHERE id = $1", op) == "running"

    # redelivered to a live worker: the bucket is found made, by this operation's earlier run
    assert await _engine(pool).run(workflow, op, command, _delivery(message)) == "succeeded"

    assert _creates(sim, name) == 1  # nothing repeated
    rows = await stage_rows(pool, op)
    assert (rows["bucket"]["status"], rows["bucket"]["attempts"]) == ("succeeded", 2)
    assert rows["bucket"]["outputs"] == {"arn": f"arn:aws:s3:::{name}"}
    events = await events_of(pool, op)
    bucket = [e for e in events if e.get("stage") == "bucket"]
    assert [e["type"] for e in bucket] == [
        "StageStarted",
        "StageStarted",
        "StageProgress",
        "StageSucceeded",
    ]
    found = bucket[2]["message"]
    assert found.startswith("found done: an earlier run of this stage did not record it done")
    assert bucket[3]["noop"] is False
    assert events[-1]["type"] == "OperationSucceeded"
    assert not [e for e in events if e["type"] == "OperationNoop"]
    # the other stages ran once, on the redelivery, from their first run: their own outcome
    for stage in ("public_access", "encryption"):
        assert rows[stage]["attempts"] == 1
        assert not [e for e in events if e.get("stage") == stage and e["type"] == "StageProgress"]


async def test_a_request_with_nothing_to_do_from_its_first_run_stays_noop(
    pool: asyncpg.Pool, sim: SimulatedAws, aws: AwsClients
) -> None:
    name = f"already-{uuid.uuid4().hex[:8]}"
    workflow = create_bucket_workflow(S3Buckets(aws))
    first, command = await _bucket_operation(pool, name)
    assert await _engine(pool).run(workflow, first, command, _delivery(uuid.uuid4())) == "succeeded"

    again, command = await _bucket_operation(pool, name)
    assert await _engine(pool).run(workflow, again, command, _delivery(uuid.uuid4())) == "noop"

    assert _creates(sim, name) == 1
    rows = await stage_rows(pool, again)
    assert {n: (r["status"], r["attempts"]) for n, r in rows.items()} == {
        "bucket": ("noop", 1),
        "public_access": ("noop", 1),
        "encryption": ("noop", 1),
    }
    events = await events_of(pool, again)
    assert events[-1]["type"] == "OperationNoop"
    assert not [e for e in events if e["type"] == "StageProgress"]


async def test_a_failed_stage_retried_and_found_done_counts_as_the_operations_work(
    pool: asyncpg.Pool,
) -> None:
    """The same rule after a failure: the first run's call took effect but its answer was an
    error (say, a timeout); the operation's retry finds the effect in place."""
    made: set[str] = set()
    runs: Counter[str] = Counter()

    async def make(ctx: StageContext[Any]) -> Done:
        runs["make"] += 1
        if "thing" in made:
            return Done({"thing": "thing"}, noop=True)
        made.add("thing")
        raise PermanentError("RequestTimeout", "no answer in time", "retry the operation")

    async def same(ctx: StageContext[Any]) -> Done:
        return Done(noop=True)

    workflow: Workflow[Any] = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("make", "Make the thing", make), Stage("check", "Check", same)),
    )
    op, _ = await _bucket_operation(pool, f"retried-{uuid.uuid4().hex[:8]}")
    assert await _engine(pool).run(workflow, op, {}, _delivery(uuid.uuid4())) == "failed"
    async with pool.acquire() as conn:
        assert await retry_operation(conn, op, principal="tester", source="rest") == ["make"]
    second = _delivery(uuid.uuid4(), attempt=2)
    assert await _engine(pool).run(workflow, op, {}, second) == "succeeded"

    assert runs["make"] == 2
    rows = await stage_rows(pool, op)
    assert (rows["make"]["status"], rows["check"]["status"]) == ("succeeded", "noop")
    events = await events_of(pool, op)
    found = [e for e in events if e["type"] == "StageProgress" and e["stage"] == "make"]
    assert len(found) == 1 and found[0]["message"].startswith("found done:")
    assert events[-1]["type"] == "OperationSucceeded"
