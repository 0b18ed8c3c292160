"""The `clusters` row of an adoption: reserved by the accept, `adopting` while it runs, then
`active` with what the adoption added (its stage outputs) as the cluster's resources."""

from __future__ import annotations

import uuid

import asyncpg

from cluster_svc.records.clusters import record_components, set_cluster_status
from shared.contracts.adoption import AdoptCluster, ClusterAdopted
from shared.contracts.events import Event
from shared.read_model import finishing, starting
from shared.stages import FINISHED, FinalHook, Hook, Outcome


def added(outputs: dict[str, dict[str, object]]) -> dict[str, object]:
    """What each stage recorded as made by Hyperpilot (nothing for what was already there)."""
    made: dict[str, object] = {}
    for stage, out in outputs.items():
        created = out.get("created") if isinstance(out, dict) else None
        if created and created is not True:
            made[stage] = created
        elif created is True:
            made[stage] = True
    return made


async def _adopting(conn: asyncpg.Connection, _: uuid.UUID, command: AdoptCluster) -> None:
    await set_cluster_status(conn, command.spec.name, "adopting")


async def _adopted(
    conn: asyncpg.Connection, _: uuid.UUID, command: AdoptCluster, outcome: Outcome
) -> list[Event]:
    """Record what the adoption made even when it failed, so delete removes exactly that."""
    name = command.spec.name
    eks = outcome.outputs.get("eks_cluster", {})
    hyperpod = outcome.outputs.get("hyperpod_cluster", {})
    resources = {
        **outcome.outputs,
        "adoption": {
            "eks_cluster": name,
            "added": added(outcome.outputs),
            "kept": {
                "eks_cluster": name,
                "vpc_id": outcome.outputs.get("network", {}).get("vpc_id"),
                "nodegroups": [
                    n["name"] for n in outcome.outputs.get("preflight", {}).get("nodegroups", [])
                ],
                "addons": [
                    a["name"]
                    for a in outcome.outputs.get("preflight", {}).get("addons", [])
                    if not a.get("managed")
                ],
            },
        },
    }
    status = "active" if outcome.status in FINISHED else "adopt_failed"
    await conn.execute(
        "UPDATE clusters SET status = $2, eks_cluster_arn = $3, hyperpod_cluster_arn = $4,"
        " endpoint = $5, ca_data = $6, oidc_issuer = $7, resources = $8, updated_at = now()"
        " WHERE name = $1",
        name,
        status,
        eks.get("cluster_arn"),
        hyperpod.get("cluster_arn"),
        eks.get("endpoint"),
        eks.get("ca_data"),
        eks.get("oidc_issuer"),
        resources,
    )
    await record_components(
        conn, name, outcome.outputs.get("dependencies", {}).get("components", {})
    )
    if outcome.status not in FINISHED:
        return []
    await conn.executemany(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " VALUES ($1, $2, $3, $4, $5, 'InService')"
        " ON CONFLICT (cluster, name) DO UPDATE SET instance_type = $3, count = $4, spec = $5,"
        " status = 'InService', updated_at = now()",
        [
            (name, g.name, g.instance_type, g.count, g.model_dump(mode="json"))
            for g in command.spec.instance_groups
        ],
    )
    return [
        ClusterAdopted(
            name=name,
            eks_cluster_arn=str(eks.get("cluster_arn")),
            hyperpod_cluster_arn=hyperpod.get("cluster_arn"),
            added=added(outcome.outputs),
        )
    ]


HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    AdoptCluster.__name__: (
        starting(AdoptCluster, _adopting),
        finishing(AdoptCluster, _adopted),
    ),
}
