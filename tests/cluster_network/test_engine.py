"""The network and identity stages run by the real StageEngine against PostgreSQL and the
simulated AWS: create, then delete from the create operation's recorded outputs.

The EKS cluster between them belongs to another area; here a small stage makes it with boto3
(and deletes it), so `oidc_provider` reads a real issuer and the delete order is the one the
workflow composes (network and roles go after EKS)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import asyncpg

from cluster_svc.adapters.ec2 import Ec2Network
from cluster_svc.adapters.iam import IamIdentity
from cluster_svc.domain import identity, network
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.operations import create_operation
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
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.cluster_network.conftest import my_inventory
from tests.cluster_network.helpers import create_command, delete_command
from tests.integration.helpers import delivery, stage_rows


def eks_stages(sim: SimulatedAws) -> tuple[Stage, Stage]:
    """`eks_cluster` and `delete_eks` as plain boto3 calls on the simulated EKS."""
    eks = aws_client(sim, "eks")

    async def create(ctx: StageContext) -> Submitted:
        name = ctx.command["spec"]["name"]
        eks.create_cluster(
            name=name,
            roleArn=ctx.output("eks_role", "role_arn"),
            resourcesVpcConfig={
                "subnetIds": ctx.output("network", "private_subnet_ids"),
                "securityGroupIds": [ctx.output("security_group", "security_group_id")],
            },
        )
        return Submitted(name)

    async def active(ctx: StageContext) -> Done | Pending:
        cluster = eks.describe_cluster(name=ctx.external_id)["cluster"]
        if cluster["status"] != "ACTIVE":
            return Pending(cluster["status"])
        return Done({"oidc_issuer": cluster["identity"]["oidc"]["issuer"], "created": True})

    async def delete(ctx: StageContext) -> Submitted:
        eks.delete_cluster(name=ctx.command["name"])
        return Submitted(ctx.command["name"])

    async def gone(ctx: StageContext) -> Done | Pending:
        names = eks.list_clusters()["clusters"]
        return Pending("deleting") if ctx.external_id in names else Done()

    return (
        Stage(
            "eks_cluster",
            "EKS",
            create,
            poll=active,
            needs=("network", "security_group", "eks_role"),
        ),
        Stage("delete_eks", "Delete EKS", delete, poll=gone),
    )


def after(stage: Stage, *needs: str) -> Stage:
    return dataclasses.replace(stage, needs=(*stage.needs, *needs))


async def operation(pool: asyncpg.Pool, command: CreateCluster | DeleteCluster, name: str) -> Any:
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


async def test_create_then_delete_through_the_stage_engine(
    pool: asyncpg.Pool, sim: SimulatedAws, ec2: Ec2Network, iam: IamIdentity
) -> None:
    before = my_inventory(sim)
    engine = StageEngine(
        pool, poll_initial=0.05, poll_max=0.2, retry=RetryPolicy(attempts=3, initial=0.01)
    )
    name = f"eng-{uuid.uuid4().hex[:6]}"
    payload = create_command(name)
    eks_cluster, delete_eks = eks_stages(sim)
    create_flow = Workflow(
        kind="cluster.create",
        command=CreateCluster,
        domain="cluster",
        stages=(
            *network.create_stages(ec2),
            *identity.create_stages(iam),
            eks_cluster,
        ),
    )
    create_id = await operation(pool, CreateCluster.from_payload(payload), name)
    assert await engine.run(create_flow, create_id, payload, delivery()) == "succeeded"
    rows = await stage_rows(pool, create_id)
    assert {n: r["status"] for n, r in rows.items()} == {
        n: "succeeded"
        for n in (
            "network",
            "security_group",
            "compute_subnet",
            "eks_role",
            "execution_role",
            "eks_cluster",
            "oidc_provider",
        )
    }
    assert rows["network"]["external_id"] == rows["network"]["outputs"]["nat_gateway_id"]
    assert sim.inventory()["oidc_providers"]
    async with pool.acquire() as conn:
        result = await conn.fetchval("SELECT result FROM operations WHERE id = $1", create_id)
    assert result["compute_subnet"]["availability_zone_id"] == "use1-az2"

    # Delete, composed as the full workflow composes it: after the EKS cluster is gone.
    delete_flow = Workflow(
        kind="cluster.delete",
        command=DeleteCluster,
        domain="cluster",
        stages=(
            delete_eks,
            *[
                after(s, "delete_eks") if s.name != "delete_network" else s
                for s in network.delete_stages(ec2)
            ],
            *[after(s, "delete_eks") for s in identity.delete_stages(iam)],
        ),
    )
    delete_payload = delete_command(name, result)
    delete_id = await operation(pool, DeleteCluster(name=name, region="us-east-1"), name)
    assert await engine.run(delete_flow, delete_id, delete_payload, delivery()) == "succeeded"
    assert my_inventory(sim) == before
    assert not [c for c in sim.inventory()["eks_clusters"] if name in c]
