"""The storage claims of a cluster, read one way: the one function anything that mounts storage
(jobs, endpoints, model downloads, development spaces) calls to learn what a cluster offers.

A created cluster's own bucket is the claim `s3-claim` (and its FSx for Lustre, when the create
made one, `fsx-claim`), recorded in the create's stage outputs; every claim added later is a row
of `cluster_storage`.
"""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from shared.contracts.storage import DEFAULT_CLAIM, StorageClaim

FSX_DEFAULT_CLAIM = "fsx-claim"
# What a claim of FSx for Lustre keeps of its file system (its mount, and what prices it)
FSX_DETAILS = ("dns_name", "mount_name", "capacity_gib", "deployment_type", "throughput_per_tib")


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value) if isinstance(value, dict) else {}


def default_claims(managed: bool, resources: dict[str, Any]) -> list[StorageClaim]:
    """The claims a cluster's create made (none for an imported cluster)."""
    if not managed:
        return []
    storage = resources.get("storage") or {}
    if not storage.get("pvc_name"):
        return []
    claims = [
        StorageClaim(
            claim=str(storage["pvc_name"]),
            kind="s3",
            source="default",
            bucket=(resources.get("bucket") or {}).get("bucket"),
            volume=storage.get("pv_name"),
        )
    ]
    fsx = resources.get("fsx") or {}
    if storage.get("fsx_pvc_name") and fsx.get("file_system_id"):
        claims.append(
            StorageClaim(
                claim=str(storage["fsx_pvc_name"]),
                kind="fsx",
                source="default",
                file_system_id=fsx["file_system_id"],
                volume=storage.get("fsx_pv_name"),
                details={k: fsx[k] for k in FSX_DETAILS if fsx.get(k)},
            )
        )
    return claims


async def cluster_claims(conn: asyncpg.Connection, cluster: str) -> list[StorageClaim]:
    """Every storage claim of `cluster`: its own first, then the added ones by name. An unknown
    cluster has none."""
    row = await conn.fetchrow("SELECT managed, resources FROM clusters WHERE name = $1", cluster)
    if row is None:
        return []
    claims = default_claims(bool(row["managed"]), _json(row["resources"]))
    rows = await conn.fetch(
        "SELECT claim, kind, source, status, bucket, file_system_id, volume, details"
        " FROM cluster_storage WHERE cluster = $1 ORDER BY claim",
        cluster,
    )
    claims += [
        StorageClaim(
            claim=r["claim"],
            kind=r["kind"],
            source=r["source"],
            status=r["status"],
            bucket=r["bucket"],
            file_system_id=r["file_system_id"],
            volume=r["volume"],
            details=_json(r["details"]),
        )
        for r in rows
    ]
    return claims


__all__ = [
    "DEFAULT_CLAIM",
    "FSX_DEFAULT_CLAIM",
    "FSX_DETAILS",
    "cluster_claims",
    "default_claims",
]
