"""The preflight stage run by the real StageEngine against PostgreSQL, reading the simulated AWS:
a spec the account cannot satisfy fails the operation before any later stage runs."""

from __future__ import annotations

import uuid

import asyncpg

from cluster_svc.adapters.inspect import Inspector
from cluster_svc.domain.inspection import create_stages
from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import CreateCluster
from shared.operations import create_operation
from shared.stages import Done, RetryPolicy, Stage, StageContext, StageEngine, Workflow
from tests.cluster_inspection.conftest import REGION, World, spec
from tests.integration.helpers import delivery, stage_rows


async def run_create(
    pool: asyncpg.Pool, inspector: Inspector, cluster: ClusterSpec
) -> tuple[str, uuid.UUID, list[str]]:
    """Run preflight and one stage that needs it; returns status, operation id, stages run."""
    ran: list[str] = []

    async def network(ctx: StageContext) -> Done:
        ran.append("network")
        return Done({"vpc_id": "vpc-0123456789abcdef0"})

    workflow = Workflow(
        kind=CreateCluster.kind(),
        domain=CreateCluster.domain,
        command=CreateCluster,
        stages=(
            *create_stages(inspector),
            Stage("network", "Build the network", network, needs=("preflight",)),
        ),
    )
    command = CreateCluster(spec=cluster, region=REGION, bucket=f"hyperpilot-{cluster.name}")
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            command,
            target_type="cluster",
            target_id=cluster.name,
            request=cluster.model_dump(mode="json"),
            principal="tester",
            source="rest",
            idempotency_key=None,
        )
    engine = StageEngine(pool, retry=RetryPolicy(attempts=2, initial=0.01, maximum=0.02))
    status = await engine.run(
        workflow, accepted.operation_id, command.model_dump(mode="json"), delivery()
    )
    return status, accepted.operation_id, ran


async def test_a_spec_over_quota_fails_preflight_with_the_reason(
    pool: asyncpg.Pool, world: World, inspector: Inspector
) -> None:
    over = spec("fresh-cluster", workers={"instance_type": "ml.p5.48xlarge", "count": 5})
    status, operation, ran = await run_create(pool, inspector, over)
    assert (status, ran) == ("failed", [])
    stages = await stage_rows(pool, operation)
    assert stages["preflight"]["status"] == "failed"
    assert stages["network"]["status"] == "pending"
    error = stages["preflight"]["error"]
    assert error["code"] == "PreflightFailed"
    assert error["message"] == (
        "instance_groups[0].count: ml.p5.48xlarge for cluster usage allows 2; "
        "this cluster asks for 5"
    )
    assert (
        "request an increase of 'ml.p5.48xlarge for cluster usage' to at least 5" in error["hint"]
    )


async def test_a_good_spec_passes_preflight_and_the_workflow_goes_on(
    pool: asyncpg.Pool, world: World, inspector: Inspector
) -> None:
    good = spec("fresh-cluster", workers={"instance_type": "ml.p5.48xlarge", "count": 2})
    status, operation, ran = await run_create(pool, inspector, good)
    assert (status, ran) == ("succeeded", ["network"])
    preflight = (await stage_rows(pool, operation))["preflight"]
    assert preflight["status"] == "succeeded"
    assert "cluster_quota" in preflight["outputs"]["checks"]
