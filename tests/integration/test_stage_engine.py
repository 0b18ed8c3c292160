"""The stage engine against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from typing import Any

import asyncpg
import pytest

from shared.contracts.commands import CreateStorageBucket
from shared.errors import PermanentError, TemporaryError
from shared.operations import retry_operation
from shared.stages import (
    Done,
    Pending,
    RetryPolicy,
    Stage,
    StageContext,
    StageEngine,
    Submitted,
    Workflow,
)
from tests.integration.helpers import delivery, events_of, new_operation, stage_rows

FAST = {"poll_initial": 0.01, "poll_max": 0.05}


def _engine(pool: asyncpg.Pool) -> StageEngine:
    return StageEngine(pool, retry=RetryPolicy(attempts=4, initial=0.01, maximum=0.02), **FAST)


async def test_independent_stages_run_concurrently_and_dependents_wait(pool: asyncpg.Pool) -> None:
    timeline: list[str] = []
    gate = asyncio.Event()

    def stage(name: str) -> Any:
        async def run(ctx: StageContext) -> Done:
            timeline.append(f"start {name}")
            if name in ("a", "b"):
                # Both independent stages must be running at once for the gate to open.
                if timeline.count("start a") and timeline.count("start b"):
                    gate.set()
                await asyncio.wait_for(gate.wait(), 5)
            timeline.append(f"end {name}")
            return Done({"name": name})

        return run

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(
            Stage("a", "A", stage("a")),
            Stage("b", "B", stage("b")),
            Stage("c", "C", stage("c"), needs=("a", "b")),
        ),
    )
    op = await new_operation(pool)
    status = await _engine(pool).run(wf, op, {}, delivery())
    assert status == "succeeded"
    assert timeline.index("start c") > max(timeline.index("end a"), timeline.index("end b"))
    types = [e["type"] for e in await events_of(pool, op)]
    assert types[0] == "OperationAccepted" and types[-1] == "OperationSucceeded"
    assert types.count("StageSucceeded") == 3


async def test_submitted_stage_resumes_polling_without_repeating_the_mutation(
    pool: asyncpg.Pool,
) -> None:
    calls: Counter[str] = Counter()
    polls_until_done = {"n": 3}
    poll_started = asyncio.Event()

    async def run(ctx: StageContext) -> Submitted:
        calls["mutation"] += 1
        return Submitted("arn:aws:eks:cluster/x", {"arn": "arn:aws:eks:cluster/x"})

    async def poll(ctx: StageContext) -> Done | Pending:
        calls["poll"] += 1
        poll_started.set()
        assert ctx.external_id == "arn:aws:eks:cluster/x"
        polls_until_done["n"] -= 1
        if polls_until_done["n"] > 0:
            return Pending(f"CREATING ({polls_until_done['n']} left)")
        return Done({"status": "ACTIVE"})

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("eks", "EKS", run, poll),))
    op = await new_operation(pool)
    engine = StageEngine(pool, poll_initial=0.3, poll_max=0.3)
    first = asyncio.create_task(engine.run(wf, op, {}, delivery()))
    await asyncio.wait_for(poll_started.wait(), 5)
    first.cancel()  # the process dies while polling
    with pytest.raises(asyncio.CancelledError):
        await first
    row = (await stage_rows(pool, op))["eks"]
    assert row["status"] == "submitted" and row["external_id"] == "arn:aws:eks:cluster/x"

    status = await _engine(pool).run(wf, op, {}, delivery())
    assert status == "succeeded"
    assert calls["mutation"] == 1
    row = (await stage_rows(pool, op))["eks"]
    assert row["outputs"] == {"arn": "arn:aws:eks:cluster/x", "status": "ACTIVE"}
    assert [e["message"] for e in await events_of(pool, op) if e["type"] == "StageProgress"]


async def test_a_failed_stage_is_retried_alone(pool: asyncpg.Pool) -> None:
    calls: Counter[str] = Counter()
    capacity = {"ok": False}

    async def vpc(ctx: StageContext) -> Done:
        calls["vpc"] += 1
        return Done({"vpc_id": "vpc-1"})

    async def hyperpod(ctx: StageContext) -> Done:
        calls["hyperpod"] += 1
        assert ctx.output("vpc", "vpc_id") == "vpc-1"
        if not capacity["ok"]:
            raise PermanentError(
                "InsufficientCapacity", "no ml.p5.48xlarge in use1-az3", "try use1-az2"
            )
        return Done()

    async def bucket(ctx: StageContext) -> Done:
        calls["bucket"] += 1
        return Done()

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(
            Stage("vpc", "VPC", vpc),
            Stage("bucket", "S3", bucket),
            Stage("hyperpod", "HP", hyperpod, needs=("vpc",)),
        ),
    )
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {}, delivery()) == "failed"
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT status, error FROM operations WHERE id = $1", op)
        assert row["error"]["stage"] == "hyperpod"
        assert row["error"]["code"] == "InsufficientCapacity"
        assert row["error"]["hint"] == "try use1-az2"
        assert await retry_operation(conn, op, principal="tester", source="rest") == ["hyperpod"]
    capacity["ok"] = True
    assert await _engine(pool).run(wf, op, {}, delivery()) == "succeeded"
    assert calls == Counter({"vpc": 1, "bucket": 1, "hyperpod": 2})
    assert (await stage_rows(pool, op))["hyperpod"]["attempts"] == 2


async def test_temporary_errors_are_retried_inside_the_stage(pool: asyncpg.Pool) -> None:
    failures = {"left": 2}

    async def throttled(ctx: StageContext) -> Done:
        if failures["left"]:
            failures["left"] -= 1
            raise TemporaryError("ThrottlingException", "Rate exceeded")
        return Done()

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("s", "S", throttled),))
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {}, delivery()) == "succeeded"
    retrying = [e for e in await events_of(pool, op) if e["type"] == "StageRetrying"]
    assert len(retrying) == 2 and retrying[0]["error"]["code"] == "ThrottlingException"


async def test_temporary_errors_that_never_stop_fail_the_stage(pool: asyncpg.Pool) -> None:
    async def always(ctx: StageContext) -> Done:
        raise TemporaryError("ServiceUnavailable", "try later")

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("s", "S", always),))
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {}, delivery()) == "failed"
    assert (await stage_rows(pool, op))["s"]["error"]["code"] == "ServiceUnavailable"


async def test_an_unexpected_exception_fails_the_stage_with_its_text(pool: asyncpg.Pool) -> None:
    async def broken(ctx: StageContext) -> Done:
        raise KeyError("Subnets")

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("s", "S", broken),))
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {}, delivery()) == "failed"
    error = (await stage_rows(pool, op))["s"]["error"]
    assert error["code"] == "InternalError" and "KeyError" in error["message"]


async def test_all_noop_stages_end_the_operation_as_noop(pool: asyncpg.Pool) -> None:
    async def same(ctx: StageContext) -> Done:
        return Done(noop=True)

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("a", "A", same), Stage("b", "B", same)),
    )
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {}, delivery()) == "noop"


async def test_a_terminal_operation_is_not_run_again(pool: asyncpg.Pool) -> None:
    calls = Counter[str]()

    async def once(ctx: StageContext) -> Done:
        calls["run"] += 1
        return Done()

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("a", "A", once),))
    op = await new_operation(pool)
    d = delivery()
    assert await _engine(pool).run(wf, op, {}, d) == "succeeded"
    assert await _engine(pool).run(wf, op, {}, delivery()) == "succeeded"
    assert calls["run"] == 1
    async with pool.acquire() as conn:
        assert (
            await conn.fetchval("SELECT count(*) FROM inbox WHERE message_id = $1", d.message_id)
            == 1
        )


async def test_every_stage_reads_the_command_parsed_once(pool: asyncpg.Pool) -> None:
    seen: list[CreateStorageBucket] = []

    async def read(ctx: StageContext[CreateStorageBucket]) -> Done:
        seen.append(ctx.cmd)
        return Done({"bucket": ctx.cmd.name})

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("a", "A", read), Stage("b", "B", read, needs=("a",))),
        command=CreateStorageBucket,
    )
    op = await new_operation(pool)
    payload = {"name": "bucket-a", "region": "us-east-1", "unknown": "dropped"}
    assert await _engine(pool).run(wf, op, payload, delivery()) == "succeeded"
    assert [c.name for c in seen] == ["bucket-a", "bucket-a"]
    assert seen[0] is seen[1]  # parsed once for the run, not once per stage


async def test_a_workflow_without_a_command_type_refuses_ctx_cmd(pool: asyncpg.Pool) -> None:
    async def read(ctx: StageContext[CreateStorageBucket]) -> Done:
        return Done({"bucket": ctx.cmd.name})

    wf = Workflow(kind="storage.create", domain="storage", stages=(Stage("a", "A", read),))
    op = await new_operation(pool)
    assert await _engine(pool).run(wf, op, {"name": "b"}, delivery()) == "failed"


async def test_concurrent_event_writers_keep_sequence_equal_to_commit_order(
    pool: asyncpg.Pool,
) -> None:
    from shared.contracts.events import StageProgress
    from shared.operations import append_event

    async def writer(i: int) -> None:
        async with pool.acquire() as conn, conn.transaction():
            await append_event(
                conn,
                operation_id=None,
                domain="test",
                event=StageProgress(stage="s", message=str(i)),
                principal="t",
            )
            await asyncio.sleep(0.001 * (i % 3))

    await asyncio.gather(*(writer(i) for i in range(60)))
    async with pool.acquire() as conn:
        seqs = [
            r["seq"]
            for r in await conn.fetch("SELECT seq FROM events ORDER BY xmin::text::bigint, seq")
        ]
        assert len(seqs) == 60
        assert seqs == sorted(seqs)


async def test_a_cancelled_operation_stops_polling_starts_nothing_new_and_can_be_retried(
    pool: asyncpg.Pool,
) -> None:
    from shared.operations import request_cancel

    polling = asyncio.Event()
    calls: Counter[str] = Counter()

    async def create(ctx: StageContext) -> Submitted:
        calls["create"] += 1
        return Submitted("arn:eks/x")

    async def wait(ctx: StageContext) -> Done | Pending:
        polling.set()
        return Done() if calls["create"] > 1 else Pending("CREATING")

    async def after(ctx: StageContext) -> Done:
        calls["after"] += 1
        return Done()

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("eks", "EKS", create, wait), Stage("after", "After", after, needs=("eks",))),
    )
    op = await new_operation(pool)
    engine = StageEngine(pool, poll_initial=0.02, poll_max=0.02)
    running = asyncio.create_task(engine.run(wf, op, {}, delivery()))
    await asyncio.wait_for(polling.wait(), 5)
    async with pool.acquire() as conn:
        assert await request_cancel(conn, op, principal="tester", source="rest") == "cancelling"
    assert await asyncio.wait_for(running, 5) == "cancelled"
    rows = await stage_rows(pool, op)
    assert rows["eks"]["status"] == "cancelled" and rows["after"]["status"] == "pending"
    assert calls["after"] == 0
    assert [e["type"] for e in await events_of(pool, op)][-1] == "OperationCancelled"

    async with pool.acquire() as conn:
        assert await retry_operation(conn, op, principal="tester", source="rest") == ["eks"]
    assert await _engine(pool).run(wf, op, {}, delivery()) == "succeeded"
    assert calls == Counter({"create": 2, "after": 1})


async def test_a_pending_operation_is_cancelled_at_once(pool: asyncpg.Pool) -> None:
    from shared.operations import request_cancel

    op = await new_operation(pool)
    async with pool.acquire() as conn:
        assert await request_cancel(conn, op, principal="tester", source="rest") == "cancelled"
        assert await conn.fetchval("SELECT status FROM operations WHERE id = $1", op) == "cancelled"


@pytest.mark.parametrize("with_on_start", [False, True])
@pytest.mark.parametrize(
    ("known_attempt", "recorded_attempt"),
    [(1, 1), (7, 1), (None, 1)],  # read with the consumer's lock; a stale one; not known
)
async def test_an_operation_starts_once_with_its_recorded_attempt(
    pool: asyncpg.Pool,
    with_on_start: bool,
    known_attempt: int | None,
    recorded_attempt: int,
) -> None:
    hooked: list[str] = []

    async def on_start(conn: asyncpg.Connection, operation_id: Any, command: Any) -> None:
        hooked.append(str(operation_id))

    async def only(ctx: StageContext) -> Done:
        return Done()

    wf = Workflow(
        kind="storage.create",
        domain="storage",
        stages=(Stage("only", "Only", only),),
        on_start=on_start if with_on_start else None,
    )
    op = await new_operation(pool)
    run = dataclasses.replace(delivery(), attempt=known_attempt)
    assert await _engine(pool).run(wf, op, {}, run) == "succeeded"
    started = [e for e in await events_of(pool, op) if e["type"] == "OperationStarted"]
    assert [e["attempt"] for e in started] == [recorded_attempt]
    assert hooked == ([str(op)] if with_on_start else [])
    async with pool.acquire() as conn:
        queued = await conn.fetchval(
            "SELECT count(*) FROM outbox WHERE subject = 'evt.storage.operation_started'"
        )
    assert queued == 1  # and queued once for the bus
    # Delivered again: nothing starts twice.
    assert await _engine(pool).run(wf, op, {}, run) == "succeeded"
    assert len([e for e in await events_of(pool, op) if e["type"] == "OperationStarted"]) == 1
