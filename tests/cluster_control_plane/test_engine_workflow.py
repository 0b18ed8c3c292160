"""The stages inside the real StageEngine against a real PostgreSQL and the simulated AWS: a
create workflow (with stand-ins for the networking, identity and dependencies stages, which
output the documented keys of what this suite made with boto3), then its delete workflow."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.eks import EksClusters
from cluster_svc.adapters.fsx import FsxFileSystems
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.domain import control_plane, fsx, hyperpod
from shared.contracts.commands import Command, CreateCluster, DeleteCluster
from shared.operations import create_operation
from shared.stages import Done, RetryPolicy, Stage, StageContext, StageEngine, Workflow
from sim.aws import SimulatedAws
from sim.testing import aws_client, inject_fault
from tests.cluster_control_plane.conftest import REGION, Prereqs, cluster_command, unique
from tests.integration.helpers import delivery, events_of, stage_rows


def _stand_in(name: str, outputs: dict[str, Any], needs: tuple[str, ...] = ()) -> Stage:
    async def run(ctx: StageContext) -> Done:
        return Done(dict(outputs))

    return Stage(name, f"stand-in for {name}", run, needs=needs)


async def _operation(pool: asyncpg.Pool, command: Command, name: str) -> uuid.UUID:
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            command,
            target_type="cluster",
            target_id=name,
            request={"name": name},
            principal="tester",
            source="rest",
            idempotency_key=None,
        )
    return accepted.operation_id


def _engine(pool: asyncpg.Pool) -> StageEngine:
    return StageEngine(
        pool,
        poll_initial=0.05,
        poll_max=0.25,
        retry=RetryPolicy(attempts=3, initial=0.05, maximum=0.1),
    )


async def test_create_then_delete_through_the_stage_engine(
    pool: asyncpg.Pool, sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs
) -> None:
    name = unique("cp-engine")
    given = prereqs.outputs
    create = Workflow(
        kind=CreateCluster.kind(),
        domain=CreateCluster.domain,
        command=CreateCluster,
        stages=(
            _stand_in("network", given["network"]),
            _stand_in("security_group", given["security_group"], ("network",)),
            _stand_in("compute_subnet", given["compute_subnet"], ("network",)),
            _stand_in("eks_role", given["eks_role"]),
            _stand_in("execution_role", given["execution_role"]),
            *control_plane.create_stages(EksClusters(aws), S3Buckets(aws)),
            _stand_in("dependencies", given["dependencies"], ("eks_cluster", "access_entries")),
            *hyperpod.create_stages(SageMakerClusters(aws)),
            *fsx.create_stages(FsxFileSystems(aws), deployment_type="SCRATCH_2"),
        ),
    )
    payload = cluster_command(name, fsx_capacity_gib=1200)
    op = await _operation(pool, CreateCluster.from_payload(payload), name)
    assert await _engine(pool).run(create, op, payload, delivery()) == "succeeded"

    rows = await stage_rows(pool, op)
    eks_row, hp_row, fsx_row = rows["eks_cluster"], rows["hyperpod_cluster"], rows["fsx"]
    assert eks_row["status"] == "succeeded" and eks_row["external_id"].endswith(f"cluster/{name}")
    assert eks_row["outputs"]["endpoint"] and eks_row["outputs"]["created"] is True
    assert hp_row["status"] == "succeeded" and hp_row["external_id"].startswith(
        "arn:aws:sagemaker:"
    )
    assert fsx_row["outputs"]["file_system_id"] == fsx_row["external_id"]
    assert (
        rows["bucket"]["outputs"]["lifecycle_script_uri"] == f"s3://{name}-data/hyperpod/lifecycle/"
    )
    progress = [e["message"] for e in await events_of(pool, op) if e["type"] == "StageProgress"]
    assert any(m.startswith("EKS control plane CREATING (") for m in progress)
    assert any(m.startswith("HyperPod cluster Creating (") for m in progress)
    inventory = sim.inventory()
    assert f"{name}-data" in inventory["s3_buckets"]
    assert fsx_row["external_id"] in inventory["fsx"]
    assert name in inventory["eks_clusters"] and name in inventory["hyperpod_clusters"]

    resources = {stage: dict(row["outputs"] or {}) for stage, row in rows.items()}
    delete = Workflow(
        kind=DeleteCluster.kind(),
        domain=DeleteCluster.domain,
        command=DeleteCluster,
        stages=(
            _stand_in("delete_storage", {}),
            *hyperpod.delete_stages(SageMakerClusters(aws)),
            *fsx.delete_stages(FsxFileSystems(aws)),
            _stand_in("delete_dependencies", {}, ("delete_hyperpod",)),
            _stand_in("delete_roles", {}, ("delete_eks",)),
            *control_plane.delete_stages(EksClusters(aws), S3Buckets(aws)),
        ),
    )
    command = DeleteCluster(name=name, region=REGION)
    delete_payload = {**command.model_dump(mode="json"), "resources": resources}
    delete_op = await _operation(pool, command, name)
    assert await _engine(pool).run(delete, delete_op, delete_payload, delivery()) == "succeeded"

    deleted = await stage_rows(pool, delete_op)
    for stage in ("delete_hyperpod", "delete_eks", "delete_fsx", "delete_bucket"):
        assert deleted[stage]["status"] == "succeeded", stage
    inventory = sim.inventory()
    assert f"{name}-data" not in inventory["s3_buckets"]
    assert fsx_row["external_id"] not in inventory["fsx"]
    assert name not in inventory["eks_clusters"] and name not in inventory["hyperpod_clusters"]
    assert not [e for e in inventory["eks_access_entries"] if e.startswith(f"{name}/")]
    with pytest.raises(aws_client(sim, "eks").exceptions.ResourceNotFoundException):
        aws_client(sim, "eks").describe_cluster(name=name)
    with pytest.raises(aws_client(sim, "sagemaker").exceptions.ResourceNotFound):
        aws_client(sim, "sagemaker").describe_cluster(ClusterName=name)
    # What the create did not make (the roles, the network) is still there.
    assert "cp-test-execution" in inventory["iam_roles"]
    assert given["network"]["vpc_id"] in inventory["vpcs"]


async def test_capacity_failure_is_the_operations_error_with_the_next_step(
    pool: asyncpg.Pool, sim: SimulatedAws, aws: AwsClients, prereqs: Prereqs
) -> None:
    name = unique("cp-nocap")
    given = prereqs.outputs
    zone = given["compute_subnet"]["availability_zone_id"]
    create = Workflow(
        kind=CreateCluster.kind(),
        domain=CreateCluster.domain,
        command=CreateCluster,
        stages=(
            _stand_in("network", given["network"]),
            _stand_in("security_group", given["security_group"], ("network",)),
            _stand_in("compute_subnet", given["compute_subnet"], ("network",)),
            _stand_in("eks_role", given["eks_role"]),
            _stand_in("execution_role", given["execution_role"]),
            *control_plane.create_stages(EksClusters(aws), S3Buckets(aws)),
            _stand_in("dependencies", given["dependencies"], ("eks_cluster", "access_entries")),
            *hyperpod.create_stages(SageMakerClusters(aws)),
        ),
    )
    payload = cluster_command(name)
    op = await _operation(pool, CreateCluster.from_payload(payload), name)
    with inject_fault(
        sim, "insufficient_capacity", instance_type="ml.g5.8xlarge", availability_zone_id=zone
    ):
        assert await _engine(pool).run(create, op, payload, delivery()) == "failed"
    row = (await stage_rows(pool, op))["hyperpod_cluster"]
    assert row["status"] == "failed" and row["attempts"] == 1
    error = row["error"]
    assert error["code"] == "InsufficientInstanceCapacity"
    assert f"capacity in the Availability Zone {zone}" in error["message"]
    assert error["hint"].startswith("try another Availability Zone (ml.g5.8xlarge is offered in ")
    assert _calls_named(sim, name) == 1
    async with pool.acquire() as conn:
        operation = await conn.fetchrow("SELECT status, error FROM operations WHERE id = $1", op)
    assert operation["status"] == "failed"
    assert operation["error"]["stage"] == "hyperpod_cluster"
    assert operation["error"]["hint"] == error["hint"]


def _calls_named(sim: SimulatedAws, name: str) -> int:
    calls = sim.call_log("sagemaker", "CreateCluster")
    return sum(1 for c in calls if c["params"].get("ClusterName") == name)
