"""The gateway's read model: the rows the routes read, typed, each loaded one way.

A route asks for a cluster by name (`cluster`, 404 when unknown), then for what its work needs
of it (`usable`, `hyperpod`, `reachable`: 409 with the way out when the cluster cannot do it
yet); jobs and endpoints are read the same way (`job`, `endpoint`), and each record answers its
own JSON (`read`).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import asyncpg

from gateway import keyset
from gateway.errors import ApiError
from shared.contracts.features import FeatureTarget
from shared.contracts.inference import summary

USABLE = ("active", "imported")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _id(value: uuid.UUID | None) -> str | None:
    return str(value) if value else None


def unknown(name: str) -> ApiError:
    return ApiError(
        404, "not_found", f"cluster {name} is not known here", hint="GET /api/v1/clusters"
    )


@dataclass(frozen=True, slots=True)
class HyperPodRefs:
    """What a command on a cluster's HyperPod cluster names: the cluster, region and names."""

    cluster: str
    region: str
    hyperpod_cluster: str
    resources: dict[str, Any]
    zone: str | None

    def command(self) -> dict[str, str]:
        return {
            "cluster": self.cluster,
            "hyperpod_cluster": self.hyperpod_cluster,
            "region": self.region,
        }


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    """A row of `clusters`."""

    name: str
    region: str
    status: str
    managed: bool
    spec: dict[str, Any]
    resources: dict[str, Any]
    eks_cluster_arn: str | None
    hyperpod_cluster_arn: str | None
    endpoint: str | None
    kubernetes_recorded: bool
    operation_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: asyncpg.Record) -> ClusterRecord:
        recorded = row["endpoint"] is not None and row["ca_data"] is not None
        columns = (f for f in cls.__slots__ if f != "kubernetes_recorded")
        return cls(**{f: row[f] for f in columns}, kubernetes_recorded=recorded)

    @property
    def created_resources(self) -> dict[str, Any]:
        """What Hyperpilot's create recorded (nothing for an imported cluster)."""
        return self.resources if self.managed else {}

    def usable(self, purpose: str) -> ClusterRecord:
        """The cluster, if active or imported; else 409 saying `purpose` waits for it."""
        if self.status not in USABLE:
            raise ApiError(
                409,
                "cluster_not_ready",
                f"cluster {self.name} is {self.status}; {purpose}",
                hint="wait for the cluster's operation to finish"
                + (f" (GET /api/v1/operations/{self.operation_id})" if self.operation_id else ""),
            )
        return self

    def hyperpod(self) -> HyperPodRefs:
        """A usable cluster's HyperPod cluster, by the name its create or import recorded."""
        self.usable("instance groups change only on an active cluster")
        created = self.created_resources
        hyperpod = (created.get("hyperpod_cluster") or {}).get("cluster_name") or (
            self.spec.get("name") if self.managed else self.spec.get("hyperpod_cluster_name")
        )
        if not hyperpod:
            raise ApiError(
                409,
                "no_hyperpod_cluster",
                f"cluster {self.name} has no HyperPod cluster",
                hint="import the cluster again with hyperpod_cluster_name",
            )
        zone = self.spec.get("availability_zone_id") if self.managed else None
        return HyperPodRefs(self.name, self.region, hyperpod, created, zone)

    def nodes(self) -> dict[str, str]:
        """What a node command names: the cluster with HyperPod, as the describe recorded it."""
        if self.status not in USABLE or not self.hyperpod_cluster_arn:
            raise ApiError(
                409,
                "cluster_not_ready",
                f"cluster {self.name} is {self.status} and has "
                + ("a" if self.hyperpod_cluster_arn else "no")
                + " HyperPod cluster; nodes are managed on an active cluster with HyperPod",
                hint=f"wait for its create operation to finish (GET /api/v1/clusters/{self.name})",
            )
        return {
            "cluster": self.name,
            "region": self.region,
            "hyperpod_cluster": self.hyperpod_cluster_arn,
        }

    def node_query(self, **extra: Any) -> dict[str, Any]:
        """What cluster-svc's node reads name."""
        refs = self.nodes()
        eks = str(self.eks_cluster_arn or "").rsplit("/", 1)[-1]
        return {
            "cluster": self.name,
            "hyperpod_cluster": refs["hyperpod_cluster"],
            "eks_cluster": eks,
            **extra,
        }

    def reachable(self) -> ClusterRecord:
        """Known, and its Kubernetes API recorded: any status will do for a read (a cluster
        whose create failed after its EKS control plane came up is worth diagnosing too)."""
        if not self.kubernetes_recorded:
            raise ApiError(
                409,
                "cluster_not_ready",
                f"cluster {self.name} is {self.status} and its Kubernetes API is not recorded yet",
                hint=f"wait for its EKS control plane (GET /api/v1/clusters/{self.name} shows"
                " the operation)",
            )
        return self

    def feature_target(self) -> FeatureTarget:
        """Where the cluster's features live: the names its create (or import) recorded."""
        if self.managed:
            named = self.resources
            eks = (named.get("eks_cluster") or {}).get("cluster_name") or self.name
            hyperpod = (named.get("hyperpod_cluster") or {}).get("cluster_name") or self.name
            bucket = (named.get("bucket") or {}).get("bucket")
            return FeatureTarget(eks_cluster=eks, hyperpod_cluster=hyperpod, bucket=bucket)
        return FeatureTarget(
            eks_cluster=self.spec.get("eks_cluster_name") or self.name,
            hyperpod_cluster=self.spec.get("hyperpod_cluster_name"),
        )

    def read(self, active: str | None) -> dict[str, Any]:
        """The cluster as the API answers it (ClusterRead)."""
        out = asdict(self)
        del out["resources"], out["kubernetes_recorded"]
        out.update(
            active=self.name == active,
            operation_id=_id(self.operation_id),
            created_at=_iso(self.created_at),
            updated_at=_iso(self.updated_at),
        )
        return out


async def find_cluster(conn: asyncpg.Connection, name: str) -> ClusterRecord | None:
    row = await conn.fetchrow("SELECT * FROM clusters WHERE name = $1", name)
    return None if row is None else ClusterRecord.of(row)


async def clusters(conn: asyncpg.Connection) -> list[ClusterRecord]:
    """Every cluster, oldest first."""
    rows = await conn.fetch("SELECT * FROM clusters ORDER BY created_at, name")
    return [ClusterRecord.of(r) for r in rows]


async def clusters_page(
    conn: asyncpg.Connection, after: tuple[datetime, str] | None, limit: int
) -> tuple[list[ClusterRecord], int]:
    """The clusters after `after` (created_at, name), oldest first, at most limit + 1 of them
    (one more says there is a next page), and how many there are in all."""
    rows, total = await keyset.page(conn, "clusters", ("created_at", "name"), after, limit)
    return [ClusterRecord.of(r) for r in rows], total


async def cluster(pool: asyncpg.Pool, name: str) -> ClusterRecord:
    """The cluster known by this name; 404 if none."""
    async with pool.acquire() as conn:
        found = await find_cluster(conn, name)
    if found is None:
        raise unknown(name)
    return found


async def kubernetes_api(pool: asyncpg.Pool, cluster: ClusterRecord) -> tuple[str, str]:
    """A reachable cluster's Kubernetes API endpoint and certificate authority (base64 PEM)."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT endpoint, ca_data FROM clusters WHERE name = $1", cluster.reachable().name
        )
    if row is None or row["endpoint"] is None or row["ca_data"] is None:
        raise unknown(cluster.name)
    return str(row["endpoint"]), str(row["ca_data"])


async def active_cluster(conn: asyncpg.Connection) -> str | None:
    name: str | None = await conn.fetchval("SELECT name FROM active_cluster")
    return name


async def named_or_active(pool: asyncpg.Pool, name: str | None) -> str:
    """The cluster a request names, or the active one; 400 when neither is there."""
    if name is not None:
        return name
    async with pool.acquire() as conn:
        active = await active_cluster(conn)
    if active is None:
        raise ApiError(
            400,
            "no_cluster",
            "no cluster named and none is active",
            hint="add ?cluster=<name>, or PUT /api/v1/clusters/active",
        )
    return active


@dataclass(frozen=True, slots=True)
class InstanceGroupRecord:
    """A row of `instance_groups`."""

    name: str
    instance_type: str
    count: int
    status: str
    spec: dict[str, Any]
    updated_at: datetime

    @classmethod
    def of(cls, row: asyncpg.Record) -> InstanceGroupRecord:
        return cls(*(row[f] for f in cls.__slots__))

    def read(self, *, with_updated: bool = True) -> dict[str, Any]:
        out = asdict(self)
        if with_updated:
            out["updated_at"] = _iso(self.updated_at)
        else:
            del out["updated_at"]
        return out


async def instance_groups(conn: asyncpg.Connection, cluster: str) -> list[InstanceGroupRecord]:
    rows = await conn.fetch(
        "SELECT * FROM instance_groups WHERE cluster = $1 ORDER BY name", cluster
    )
    return [InstanceGroupRecord.of(r) for r in rows]


async def instance_groups_page(
    conn: asyncpg.Connection, cluster: str, after: tuple[str] | None, limit: int
) -> tuple[list[InstanceGroupRecord], int]:
    """The cluster's instance groups after `after` (name), by name, at most limit + 1, and how
    many the cluster has. The primary key (cluster, name) is the index."""
    rows, total = await keyset.page(
        conn, "instance_groups", ("name",), after, limit, where="cluster = $1", args=(cluster,)
    )
    return [InstanceGroupRecord.of(r) for r in rows], total


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A row of `jobs`."""

    cluster: str
    name: str
    recipe: str
    kind: str
    api_version: str
    namespace: str
    status: str
    restarts: int
    budget: int | None
    faulty_pods: list[Any]
    pods: list[Any]
    reason: str | None
    message: str | None
    spec: dict[str, Any]
    operation_id: uuid.UUID | None
    created_at: datetime | None
    updated_at: datetime | None

    def read(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            created_at=_iso(self.created_at),
            updated_at=_iso(self.updated_at),
            operation_id=_id(self.operation_id),
            restart_budget={"used": self.restarts, "allowed": self.budget},
        )
        return out


JOB_COLUMNS = ", ".join(JobRecord.__slots__)


async def jobs(pool: asyncpg.Pool, cluster: str) -> list[JobRecord]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE cluster = $1 ORDER BY created_at, name", cluster
        )
    return [JobRecord(*r) for r in rows]


# The statuses a job ends in (the partial index jobs_active holds the others).
FINISHED_JOB = ("succeeded", "failed", "cancelled")


async def jobs_page(
    pool: asyncpg.Pool,
    cluster: str,
    after: tuple[datetime, str] | None,
    limit: int,
    *,
    active: bool = False,
    recipe: str | None = None,
) -> tuple[list[JobRecord], int]:
    """The cluster's jobs after `after` (created_at, name), oldest first, at most limit + 1
    (one more says there is a next page), and how many match in all; only those not finished
    (`active`), only those of one recipe. The reads walk the index jobs_by_created (migration
    0019), whatever the page."""
    where = "cluster = $1"
    args: list[Any] = [cluster]
    if active:
        where += " AND status <> ALL($2::text[])"
        args.append(list(FINISHED_JOB))
    if recipe is not None:
        args.append(recipe)
        where += f" AND recipe = ${len(args)}"
    async with pool.acquire() as conn:
        rows, total = await keyset.page(
            conn,
            "jobs",
            ("created_at", "name"),
            after,
            limit,
            columns=JOB_COLUMNS,
            where=where,
            args=args,
        )
    return [JobRecord(*r) for r in rows], total


async def job(pool: asyncpg.Pool, cluster: str, name: str) -> JobRecord:
    """The job by this name on the cluster; 404 if none."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE cluster = $1 AND name = $2", cluster, name
        )
    if row is None:
        raise ApiError(
            404,
            "not_found",
            f"job {name} is not known on cluster {cluster}",
            hint=f"GET /api/v1/clusters/{cluster}/jobs",
        )
    return JobRecord(*row)


@dataclass(frozen=True, slots=True)
class EndpointRecord:
    """A row of `endpoints`."""

    cluster: str
    name: str
    namespace: str
    kind: str
    spec: dict[str, Any]
    objects: list[Any]
    status: str
    replicas: int
    ready_replicas: int
    address: str | None
    message: str | None
    operation_id: uuid.UUID | None
    created_at: datetime | None
    updated_at: datetime | None

    def read(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(
            created_at=_iso(self.created_at),
            updated_at=_iso(self.updated_at),
            operation_id=_id(self.operation_id),
        )
        out.update({k: v for k, v in summary(self.spec).items() if k not in out})
        return out


ENDPOINT_COLUMNS = ", ".join(EndpointRecord.__slots__)


async def endpoints(pool: asyncpg.Pool, cluster: str | None) -> list[EndpointRecord]:
    """The endpoints of a cluster (the active one if None), or of every cluster ("*")."""
    async with pool.acquire() as conn:
        if cluster == "*":
            rows = await conn.fetch(
                f"SELECT {ENDPOINT_COLUMNS} FROM endpoints ORDER BY cluster, name"
            )
        else:
            rows = await conn.fetch(
                f"SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE cluster = $1 ORDER BY name",
                cluster or await active_cluster(conn),
            )
    return [EndpointRecord(*r) for r in rows]


async def endpoints_page(
    pool: asyncpg.Pool, cluster: str | None, after: tuple[str, str] | None, limit: int
) -> tuple[list[EndpointRecord], int]:
    """A page of `endpoints` (a cluster's, the active one's if None, every cluster's with "*")
    after `after` (cluster, name), in that order, at most limit + 1 of them (one more says there
    is a next page), and how many the list has. The primary key (cluster, name) is the index."""
    async with pool.acquire() as conn:
        every = cluster == "*"
        named = None if every else cluster or await active_cluster(conn)
        rows, total = await keyset.page(
            conn,
            "endpoints",
            ("cluster", "name"),
            after,
            limit,
            columns=ENDPOINT_COLUMNS,
            where="TRUE" if every else "cluster = $1",
            args=() if every else (named,),
        )
    return [EndpointRecord(*r) for r in rows], total


async def endpoint(pool: asyncpg.Pool, cluster: str, name: str) -> EndpointRecord:
    """The endpoint by this name on the cluster; 404 if none."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            f"SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE cluster = $1 AND name = $2",
            cluster,
            name,
        )
    if row is None:
        raise ApiError(
            404,
            "not_found",
            f"endpoint {name} is not known on cluster {cluster}",
            hint=f"GET /api/v1/endpoints?cluster={cluster}",
        )
    return EndpointRecord(*row)
