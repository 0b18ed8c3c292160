"""The `instance_groups` rows (and a group's compute subnet among the cluster's recorded
resources), written as a group is added, updated, deleted or its software updated."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from shared.contracts.events import Event
from shared.contracts.instance_groups import (
    AddInstanceGroup,
    ClusterSoftwareUpdated,
    DeleteInstanceGroup,
    InstanceGroupAdded,
    InstanceGroupDeleted,
    InstanceGroupUpdated,
    UpdateClusterSoftware,
    UpdateInstanceGroup,
)
from shared.read_model import finishing, starting
from shared.stages import FINISHED, FinalHook, Hook, Outcome


async def _set_group_status(
    conn: asyncpg.Connection, cluster: str, names: list[str] | None, status: str
) -> None:
    if names is None:
        await conn.execute(
            "UPDATE instance_groups SET status = $2, updated_at = now() WHERE cluster = $1",
            cluster,
            status,
        )
        return
    await conn.execute(
        "UPDATE instance_groups SET status = $3, updated_at = now()"
        " WHERE cluster = $1 AND name = ANY($2::text[])",
        cluster,
        names,
        status,
    )


async def _record_subnet(conn: asyncpg.Connection, cluster: str, subnet: dict[str, Any]) -> None:
    """A compute subnet made for a group joins the cluster's recorded resources, so deleting
    the cluster deletes it too."""
    created = list(subnet.get("created") or [])
    if not created:
        return
    resources = await conn.fetchval(
        "SELECT resources FROM clusters WHERE name = $1 FOR UPDATE", cluster
    )
    if resources is None:
        return
    compute = dict(resources.get("compute_subnet") or {})
    compute["created"] = list(dict.fromkeys([*(compute.get("created") or []), *created]))
    zones = dict(compute.get("subnets") or {})
    zone = subnet.get("availability_zone_id")
    if zone and zone not in zones:
        zones[zone] = {
            "subnet_id": subnet["subnet_id"],
            "cidr": subnet.get("cidr"),
            "created": True,
        }
    compute["subnets"] = zones
    await conn.execute(
        "UPDATE clusters SET resources = $2, updated_at = now() WHERE name = $1",
        cluster,
        {**resources, "compute_subnet": compute},
    )


async def _group_adding(conn: asyncpg.Connection, _: uuid.UUID, add: AddInstanceGroup) -> None:
    await conn.execute(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " SELECT $1, $2, $3, $4, $5, 'adding' WHERE EXISTS (SELECT 1 FROM clusters WHERE name = $1)"
        " ON CONFLICT (cluster, name) DO NOTHING",
        add.cluster,
        add.group.name,
        add.group.instance_type,
        add.group.count,
        add.group.model_dump(mode="json"),
    )


async def _group_added(
    conn: asyncpg.Connection, _: uuid.UUID, add: AddInstanceGroup, outcome: Outcome
) -> list[Event]:
    subnet = outcome.outputs.get("compute_subnet") or {}
    await _record_subnet(conn, add.cluster, subnet)
    if outcome.status not in FINISHED:
        await conn.execute(
            "DELETE FROM instance_groups WHERE cluster = $1 AND name = $2 AND status = 'adding'",
            add.cluster,
            add.group.name,
        )
        return []
    spec = {**add.group.model_dump(mode="json"), "subnet_id": subnet.get("subnet_id")}
    await conn.execute(
        "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
        " SELECT $1, $2, $3, $4, $5, 'InService' WHERE EXISTS (SELECT 1 FROM clusters WHERE name = $1)"
        " ON CONFLICT (cluster, name) DO UPDATE SET instance_type = $3, count = $4, spec = $5,"
        " status = 'InService', updated_at = now()",
        add.cluster,
        add.group.name,
        add.group.instance_type,
        add.group.count,
        spec,
    )
    if outcome.status == "noop":
        return []
    return [
        InstanceGroupAdded(
            cluster=add.cluster,
            name=add.group.name,
            instance_type=add.group.instance_type,
            count=add.group.count,
            subnet_id=subnet.get("subnet_id"),
        )
    ]


async def _group_updating(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateInstanceGroup
) -> None:
    await _set_group_status(conn, update.cluster, [update.group], "updating")


async def _group_updated(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateInstanceGroup, outcome: Outcome
) -> list[Event]:
    diff = (outcome.outputs.get("update_group") or {}).get("diff") or {}
    if outcome.status == "succeeded" and diff:
        requested = {k: v["requested"] for k, v in diff.items()}
        await conn.execute(
            "UPDATE instance_groups SET spec = spec || $3::jsonb,"
            " count = coalesce(($3::jsonb ->> 'count')::int, count), updated_at = now()"
            " WHERE cluster = $1 AND name = $2",
            update.cluster,
            update.group,
            requested,
        )
    await _set_group_status(conn, update.cluster, [update.group], "InService")
    if outcome.status != "succeeded" or not diff:
        return []
    return [InstanceGroupUpdated(cluster=update.cluster, name=update.group, changes=diff)]


async def _group_deleting(
    conn: asyncpg.Connection, _: uuid.UUID, delete: DeleteInstanceGroup
) -> None:
    await _set_group_status(conn, delete.cluster, [delete.group], "deleting")


async def _group_deleted(
    conn: asyncpg.Connection, _: uuid.UUID, delete: DeleteInstanceGroup, outcome: Outcome
) -> list[Event]:
    if outcome.status not in FINISHED:
        await _set_group_status(conn, delete.cluster, [delete.group], "InService")
        return []
    await conn.execute(
        "DELETE FROM instance_groups WHERE cluster = $1 AND name = $2", delete.cluster, delete.group
    )
    if outcome.status == "noop":
        return []
    return [InstanceGroupDeleted(cluster=delete.cluster, name=delete.group)]


async def _software_updating(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateClusterSoftware
) -> None:
    await _set_group_status(conn, update.cluster, update.spec.instance_groups, "updating_software")


async def _software_updated(
    conn: asyncpg.Connection, _: uuid.UUID, update: UpdateClusterSoftware, outcome: Outcome
) -> list[Event]:
    await _set_group_status(conn, update.cluster, update.spec.instance_groups, "InService")
    if outcome.status != "succeeded":
        return []
    names = (outcome.outputs.get("update_software") or {}).get("instance_groups") or []
    return [ClusterSoftwareUpdated(cluster=update.cluster, instance_groups=list(names))]


HOOKS: dict[str, tuple[Hook | None, FinalHook | None]] = {
    AddInstanceGroup.__name__: (
        starting(AddInstanceGroup, _group_adding),
        finishing(AddInstanceGroup, _group_added),
    ),
    UpdateInstanceGroup.__name__: (
        starting(UpdateInstanceGroup, _group_updating),
        finishing(UpdateInstanceGroup, _group_updated),
    ),
    DeleteInstanceGroup.__name__: (
        starting(DeleteInstanceGroup, _group_deleting),
        finishing(DeleteInstanceGroup, _group_deleted),
    ),
    UpdateClusterSoftware.__name__: (
        starting(UpdateClusterSoftware, _software_updating),
        finishing(UpdateClusterSoftware, _software_updated),
    ),
}
