"""The drift watcher's reads and writes: the clusters it watches with their records, the
`cluster_drift` rows of each observation and their events (one transaction per cluster), and
the accept action, which writes the actual values into the record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.drift import (
    Actual,
    Difference,
    Recorded,
    RecordedClaim,
    RecordedGroup,
    differences,
    drift_changes,
    recorded_features,
)
from shared.contracts.drift import DriftAccepted
from shared.operations import append_event
from shared.storage_claims import cluster_claims

_LOCK = "hyperpilot.drift:"


@dataclass(frozen=True)
class DriftTarget:
    """An active cluster with a HyperPod cluster, its record, and how the watcher reaches it."""

    recorded: Recorded
    region: str
    access: ClusterAccess | None
    last_observed: float | None  # epoch seconds
    last_calls: int


async def drift_targets(pool: asyncpg.Pool, name: str | None = None) -> list[DriftTarget]:
    """The clusters to observe (or the one named): active, with a HyperPod cluster, and no
    operation of theirs pending or running (its change is not a drift)."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT c.name, c.region, c.resources, c.endpoint, c.ca_data, c.eks_cluster_arn,"
            " extract(epoch FROM w.observed_at) AS observed, w.aws_calls"
            " FROM clusters c LEFT JOIN cluster_drift_watch w ON w.cluster = c.name"
            " WHERE c.status = 'active' AND c.managed AND c.hyperpod_cluster_arn IS NOT NULL"
            " AND ($1::text IS NULL OR c.name = $1)"
            " AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.target_type = 'cluster'"
            " AND o.target_id = c.name AND o.status IN ('pending', 'running'))",
            name,
        )
        targets = []
        for row in rows:
            groups = await conn.fetch(
                "SELECT name, instance_type, count FROM instance_groups WHERE cluster = $1",
                row["name"],
            )
            components = await conn.fetch(
                "SELECT component, version, status FROM cluster_components WHERE cluster = $1",
                row["name"],
            )
            claims = [c for c in await cluster_claims(conn, row["name"]) if c.status == "available"]
            features = await _recorded_features(conn, row["name"])
            resources = dict(row["resources"] or {})
            hyperpod = (resources.get("hyperpod_cluster") or {}).get("cluster_name") or row["name"]
            access = None
            if row["endpoint"] and row["ca_data"] and row["eks_cluster_arn"]:
                eks_name = str(row["eks_cluster_arn"]).rsplit("/", 1)[-1]
                access = ClusterAccess(eks_name, row["endpoint"], row["ca_data"])
            targets.append(
                DriftTarget(
                    recorded=Recorded(
                        cluster=row["name"],
                        hyperpod_cluster=str(hyperpod),
                        groups={
                            g["name"]: RecordedGroup(g["name"], g["instance_type"], g["count"])
                            for g in groups
                        },
                        components={
                            c["component"]: {"version": c["version"], "status": c["status"]}
                            for c in components
                        },
                        features=features,
                        claims={
                            c.claim: RecordedClaim(
                                c.claim, c.kind, c.source, c.bucket, c.file_system_id, c.volume
                            )
                            for c in claims
                        },
                    ),
                    region=row["region"],
                    access=access,
                    last_observed=float(row["observed"]) if row["observed"] is not None else None,
                    last_calls=int(row["aws_calls"] or 0),
                )
            )
    return targets


async def stored_drift(conn: asyncpg.Connection, cluster: str) -> dict[str, Difference]:
    rows = await conn.fetch(
        "SELECT field, recorded, actual FROM cluster_drift WHERE cluster = $1", cluster
    )
    return {r["field"]: Difference(r["recorded"], r["actual"]) for r in rows}


async def record_drift(pool: asyncpg.Pool, target: DriftTarget, actual: Actual) -> int:
    """Store one observation's differences and append the events they imply; returns their
    number. A lock per cluster makes concurrent watchers report each change once; a cluster
    forgotten meanwhile records nothing."""
    cluster = target.recorded.cluster
    current = differences(target.recorded, actual)
    try:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", _LOCK + cluster)
            changes = drift_changes(cluster, await stored_drift(conn, cluster), current)
            if changes.resolved:
                await conn.execute(
                    "DELETE FROM cluster_drift WHERE cluster = $1 AND field = ANY($2::text[])",
                    cluster,
                    changes.resolved,
                )
            await conn.executemany(
                "INSERT INTO cluster_drift (cluster, field, recorded, actual) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (cluster, field) DO UPDATE SET recorded = $3, actual = $4,"
                " detected_at = now()",
                [(cluster, f, d.recorded, d.actual) for f, d in changes.upsert.items()],
            )
            await conn.execute(
                "INSERT INTO cluster_drift_watch (cluster, observed_at, aws_calls, calls_total)"
                " VALUES ($1, now(), $2::int, $2::int) ON CONFLICT (cluster) DO UPDATE SET"
                " observed_at = now(), aws_calls = $2::int, passes = cluster_drift_watch.passes + 1,"
                " calls_total = cluster_drift_watch.calls_total + $2::int",
                cluster,
                actual.aws_calls,
            )
            for event in changes.events:
                await append_event(
                    conn, operation_id=None, domain="cluster", event=event, principal="cluster-svc"
                )
    except asyncpg.ForeignKeyViolationError:
        return 0
    return len(changes.events)


async def drift_of(pool: asyncpg.Pool, cluster: str) -> dict[str, Any]:
    """The cluster's differences and its watch figures, as REST answers them."""
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT field, recorded, actual, detected_at FROM cluster_drift WHERE cluster = $1"
            " ORDER BY field",
            cluster,
        )
        watch = await conn.fetchrow(
            "SELECT observed_at, aws_calls, passes, calls_total FROM cluster_drift_watch"
            " WHERE cluster = $1",
            cluster,
        )
    return {
        "cluster": cluster,
        "drifted": bool(rows),
        "differences": [
            {
                "field": r["field"],
                "recorded": r["recorded"],
                "actual": r["actual"],
                "detected_at": r["detected_at"].isoformat(),
            }
            for r in rows
        ],
        "observed_at": watch["observed_at"].isoformat() if watch else None,
        "aws_calls_last_observation": watch["aws_calls"] if watch else None,
        "observations": watch["passes"] if watch else 0,
        "aws_calls_total": watch["calls_total"] if watch else 0,
    }


async def accept_actual(
    pool: asyncpg.Pool, cluster: str, fields: list[str] | None, principal: str, source: str
) -> dict[str, dict[str, Any]]:
    """Write the actual values of the drifted fields (all when `fields` is None) into the
    record, drop those differences and append DriftAccepted; returns what was accepted."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", _LOCK + cluster)
        stored = await stored_drift(conn, cluster)
        chosen = {f: d for f, d in stored.items() if fields is None or f in fields}
        for name, diff in chosen.items():
            await _write_actual(conn, cluster, name, diff)
        if chosen:
            await conn.execute(
                "DELETE FROM cluster_drift WHERE cluster = $1 AND field = ANY($2::text[])",
                cluster,
                list(chosen),
            )
            await append_event(
                conn,
                operation_id=None,
                domain="cluster",
                event=DriftAccepted(
                    cluster=cluster, fields={f: d.to_json() for f, d in chosen.items()}
                ),
                principal=principal,
                source=source,
            )
    return {f: d.to_json() for f, d in chosen.items()}


async def _write_actual(
    conn: asyncpg.Connection, cluster: str, name: str, diff: Difference
) -> None:
    kind, _, rest = name.partition(".")
    if kind == "instance_groups":
        group, _, attribute = rest.rpartition(".")
        if attribute == "count":
            await conn.execute(
                "UPDATE instance_groups SET count = $3, spec = jsonb_set(spec, '{count}',"
                " to_jsonb($3::int)), updated_at = now() WHERE cluster = $1 AND name = $2",
                cluster,
                group,
                int(diff.actual),
            )
        elif attribute == "instance_type":
            await conn.execute(
                "UPDATE instance_groups SET instance_type = $3, spec = jsonb_set(spec,"
                " '{instance_type}', to_jsonb($3::text)), updated_at = now()"
                " WHERE cluster = $1 AND name = $2",
                cluster,
                group,
                str(diff.actual),
            )
        elif attribute == "present" and diff.actual is False:
            await conn.execute(
                "DELETE FROM instance_groups WHERE cluster = $1 AND name = $2", cluster, group
            )
        elif attribute == "present":
            found = dict(diff.actual)
            spec = {"name": group, **found}
            await conn.execute(
                "INSERT INTO instance_groups (cluster, name, instance_type, count, spec, status)"
                " VALUES ($1, $2, $3, $4, $5, 'InService') ON CONFLICT (cluster, name) DO NOTHING",
                cluster,
                group,
                found["instance_type"],
                int(found["count"]),
                spec,
            )
    elif kind == "components":
        actual = dict(diff.actual or {})
        await conn.execute(
            "UPDATE cluster_components SET status = $3, version = $4, message = $5,"
            " updated_at = now() WHERE cluster = $1 AND component = $2",
            cluster,
            rest,
            "missing" if actual.get("status") == "absent" else str(actual.get("status")),
            str(actual.get("version") or ""),
            "accepted as found by the drift watcher",
        )
    elif kind == "storage":
        await _forget_claim(conn, cluster, rest.rpartition(".")[0])
    elif kind == "hyperpod_cluster":
        await conn.execute(
            "UPDATE clusters SET status = 'hyperpod_missing', updated_at = now() WHERE name = $1",
            cluster,
        )


async def _forget_claim(conn: asyncpg.Connection, cluster: str, claim: str) -> None:
    """Accepting a storage claim's drift (its PVC, PV, bucket or file system gone): the record
    no longer has the claim. An added claim's row goes; the cluster's own claim is dropped from
    the create's record (nothing in AWS or Kubernetes is touched)."""
    deleted = await conn.execute(
        "DELETE FROM cluster_storage WHERE cluster = $1 AND claim = $2", cluster, claim
    )
    if deleted != "DELETE 0":
        return
    for key in ("pvc_name", "fsx_pvc_name"):
        await conn.execute(
            "UPDATE clusters SET resources = jsonb_set(resources, ARRAY['storage', $3::text],"
            " 'null'::jsonb), updated_at = now() WHERE name = $1"
            " AND resources->'storage'->>$3::text = $2",
            cluster,
            claim,
            key,
        )


async def _recorded_features(conn: asyncpg.Connection, cluster: str) -> dict[str, bool]:
    """The watched features' recorded state, from this cluster's FeaturesUpdated and
    DriftAccepted events (the features area keeps no table of its own)."""
    rows = await conn.fetch(
        "SELECT type, payload FROM events WHERE type IN ('FeaturesUpdated', 'DriftAccepted')"
        " AND payload->>'cluster' = $1 ORDER BY seq",
        cluster,
    )
    updates: list[dict[str, Any]] = []
    accepted: list[str] = []
    for row in rows:
        payload = dict(row["payload"] or {})
        if row["type"] == "FeaturesUpdated":
            updates.append(dict(payload.get("changed") or {}))
            named = {key.split(".")[0] for key in updates[-1]}
            accepted = [a for a in accepted if a not in named]
        else:
            accepted += [
                str(f).split(".")[1]
                for f in payload.get("fields") or {}
                if str(f).startswith("features.")
            ]
    return recorded_features(updates, accepted)
