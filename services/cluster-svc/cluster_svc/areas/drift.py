"""The drift watcher (domain/drift.py): a level-triggered comparison of each active cluster's
record with its actual state, within a declared AWS call budget, and its reads.

Each observation of a cluster makes 1 SageMaker DescribeCluster call plus 1 EKS DescribeAddon
call per EKS add-on of the dependency set (5 today): 6 AWS calls, and 1 more per storage claim
(S3 HeadBucket, or FSx DescribeFileSystems of its id): 7 for a cluster with its own bucket only;
1 more per managed feature recorded on (the Spaces add-on, the checkpointing and autoscaler roles).
Manifest components and the claims' PVs and PVCs are read from the cluster's Kubernetes API
(not AWS). A cluster is observed every DRIFT_WATCH_SECONDS (default 900 s: 28 AWS calls per
hour for an idle cluster with its own bucket only), and never more often than its budget
DRIFT_AWS_CALLS_PER_CLUSTER_HOUR (default 28) allows for what its last observation cost (a
cluster with one more claim, 8 calls, every 1,029 s).

The budget is a `WatchBudget` (shared/aws_budget.py, bucket `watch:drift:<cluster>`), the
shared token bucket the node watcher spends from too: any replica's observation takes its
foreseen calls (the last observation's cost) before it runs, or the cluster is skipped this
pass; calls beyond the foreseen, and a refresh's (asked for by a user, never refused), are
charged after, so the next passes wait for them.

Read routes: `qry.cluster.drift` (`cluster`): the stored differences and watch figures;
`qry.cluster.drift_refresh` (`cluster`): observe now, then answer as `drift`;
`qry.cluster.drift_accept` (`cluster`, `fields`, `principal`, `source`): write the actual values
into the record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import asyncpg
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.dependencies import AddonApi, AddonState, Reconciler, Target, dependency_set
from cluster_svc.domain.drift import (
    FEATURE_ADDONS,
    FEATURE_ROLES,
    Actual,
    ActualClaim,
    ActualComponent,
    ActualGroup,
    RecordedClaim,
    due,
)
from cluster_svc.domain.identity import role_name
from cluster_svc.records.drift import (
    DriftTarget,
    accept_actual,
    drift_of,
    drift_targets,
    record_drift,
)
from shared.aws_budget import WatchBudget
from shared.contracts.subjects import query_subject
from shared.errors import StageError
from shared.logging import get_logger
from shared.queries import BadRequest
from shared.regions import region_scope
from shared.service import ServiceRuntime

log = get_logger("cluster_svc.drift")

DRIFT = query_subject("cluster", "drift")
REFRESH = query_subject("cluster", "drift_refresh")
ACCEPT = query_subject("cluster", "drift_accept")
# A first observation's foreseen cost (DescribeCluster, 5 add-ons, 1 claim), before one counted it.
FORESEEN_CALLS = 7


class DriftSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    drift_watch_seconds: float = Field(
        900.0, gt=0, description="How often the drift watcher observes each active cluster"
    )
    drift_aws_calls_per_cluster_hour: float = Field(
        28.0, gt=0, description="The most AWS calls the drift watcher makes per cluster per hour"
    )


class CountedAddons:
    """The add-on reads of one observation, counted (each is one DescribeAddon call)."""

    def __init__(self, addons: AddonApi) -> None:
        self.addons = addons
        self.calls = 0

    async def describe(self, cluster: str, name: str) -> AddonState | None:
        self.calls += 1
        return await self.addons.describe(cluster, name)

    async def versions(self, name: str, kubernetes_version: str) -> list[str]:
        raise AssertionError("the drift watcher only reads")

    async def create(self, cluster: str, name: str, version: str, request_token: str) -> None:
        raise AssertionError("the drift watcher only reads")

    async def update(self, cluster: str, name: str, version: str) -> None:
        raise AssertionError("the drift watcher only reads")

    async def delete(self, cluster: str, name: str) -> None:
        raise AssertionError("the drift watcher only reads")


def build(aws: AwsClients, ports: ClusterPorts, runtime: ServiceRuntime) -> Area:
    sagemaker = SageMakerClusters(aws)
    settings = DriftSettings()

    async def observe(target: DriftTarget) -> Actual:
        with region_scope(target.region):  # the cluster's region, not the default one
            return await observe_in_region(target)

    async def observe_in_region(target: DriftTarget) -> Actual:
        described = await sagemaker.describe_cluster_groups(target.recorded.hyperpod_cluster)
        calls = 1
        groups = None
        if described is not None:
            groups = {
                name: ActualGroup(
                    str(g.get("InstanceType")),
                    int(g.get("TargetCount", g.get("CurrentCount", 0))),
                )
                for name, g in described.groups.items()
            }
        components = None
        if target.access is not None:
            counted = CountedAddons(ports.addons)
            access = target.access
            reconciler = Reconciler(
                dependency_set(access.name, target.region), ports.kube(access), counted
            )
            try:
                observed, _ = await reconciler.observe(Target(access.name, "", ""))
                components = {
                    name: ActualComponent(seen.version, seen.state)
                    for name, seen in observed.items()
                }
            except StageError as exc:
                log.info("components not observable", cluster=access.name, error=str(exc))
            calls += counted.calls
        features = None
        if target.recorded.features and target.access is not None:
            features, feature_calls = await observe_features(target)
            calls += feature_calls
        claims = None
        if target.access is not None and target.recorded.claims:
            claims = await observe_claims(target.access, target.recorded.claims)
            calls += len(target.recorded.claims)
        return Actual(
            hyperpod_status=described.status if described else None,
            groups=groups,
            components=components,
            aws_calls=calls,
            claims=claims,
            features=features,
        )

    async def observe_features(target: DriftTarget) -> tuple[dict[str, bool] | None, int]:
        """Each feature recorded on: its add-on (DescribeAddon) or role (GetRole), 1 call."""
        assert target.access is not None
        found: dict[str, bool] = {}
        calls = 0
        try:
            for name, enabled in target.recorded.features.items():
                if not enabled:
                    continue
                calls += 1
                if name in FEATURE_ADDONS:
                    state = await ports.addons.describe(target.access.name, FEATURE_ADDONS[name])
                    found[name] = state is not None
                else:
                    role = role_name(target.recorded.cluster, FEATURE_ROLES[name])
                    found[name] = await ports.iam.role(role) is not None
        except StageError as exc:
            log.info("features not observable", cluster=target.recorded.cluster, error=str(exc))
            return None, calls
        return found, calls

    async def observe_claims(
        access: ClusterAccess, recorded: Mapping[str, RecordedClaim]
    ) -> dict[str, ActualClaim] | None:
        """Each claim's PVC and PV (Kubernetes) and its bucket or file system (1 AWS call)."""
        kube = ports.kube(access)
        found: dict[str, ActualClaim] = {}
        try:
            for name, claim in recorded.items():
                pvc = await kube.get("v1", "PersistentVolumeClaim", name, "default")
                pv = (
                    await kube.get("v1", "PersistentVolume", claim.volume) if claim.volume else None
                )
                if claim.kind == "s3" and claim.bucket:
                    source: bool | None = await ports.buckets.exists(claim.bucket)
                elif claim.file_system_id:
                    fs = await ports.fsx.describe(claim.file_system_id)
                    source = fs is not None and fs.lifecycle != "DELETING"
                else:
                    source = None
                found[name] = ActualClaim(pvc is not None, pv is not None, source)
        except StageError as exc:
            log.info("storage claims not observable", cluster=access.name, error=str(exc))
            return None
        return found

    budget = WatchBudget(runtime.pool, "drift", settings.drift_aws_calls_per_cluster_hour)

    async def observe_and_record(pool: asyncpg.Pool, target: DriftTarget) -> int:
        cluster = target.recorded.cluster
        foreseen = target.last_calls or FORESEEN_CALLS
        if not await budget.spend(cluster, foreseen):
            log.info("drift observation skipped: AWS call budget spent", cluster=cluster)
            return 0
        try:
            actual = await observe(target)
        except StageError as exc:
            log.info("cluster not observable", cluster=cluster, error=str(exc))
            return 0
        await budget.charge(cluster, actual.aws_calls - foreseen)
        return await record_drift(pool, target, actual)

    async def watch_once(pool: asyncpg.Pool) -> int:
        now = time.time()
        targets = [
            t
            for t in await drift_targets(pool)
            if due(
                t.last_observed,
                t.last_calls,
                now,
                settings.drift_watch_seconds,
                settings.drift_aws_calls_per_cluster_hour,
            )
        ]
        return sum(await asyncio.gather(*(observe_and_record(pool, t) for t in targets)))

    async def watcher(service: ServiceRuntime) -> None:
        while True:
            try:
                await watch_once(service.pool)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("drift watch pass failed", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(min(settings.drift_watch_seconds, 30.0))

    def cluster_of(request: dict[str, Any]) -> str:
        value = request.get("cluster")
        if not isinstance(value, str) or not value:
            raise BadRequest("cluster is required", "ask through GET /api/v1/clusters/{name}/drift")
        return value

    async def drift(request: dict[str, Any]) -> dict[str, Any]:
        return await drift_of(runtime.pool, cluster_of(request))

    async def refresh(request: dict[str, Any]) -> dict[str, Any]:
        name = cluster_of(request)
        targets = await drift_targets(runtime.pool, name)
        observed = False
        for target in targets:
            actual = await observe(target)
            # Asked for: made at once, its calls charged to the watcher's budget.
            await budget.charge(target.recorded.cluster, actual.aws_calls)
            await record_drift(runtime.pool, target, actual)
            observed = True
        answer = await drift_of(runtime.pool, name)
        answer["refreshed"] = observed
        if not observed:
            answer["note"] = (
                "not observed: the cluster is not active with a HyperPod cluster, or one of its"
                " operations is running (its change is not a drift); try again once it ends"
            )
        return answer

    async def accept(request: dict[str, Any]) -> dict[str, Any]:
        name = cluster_of(request)
        fields = request.get("fields")
        if fields is not None and not (
            isinstance(fields, list) and all(isinstance(f, str) for f in fields)
        ):
            raise BadRequest(
                "fields: a list of drifted field names", "GET /api/v1/clusters/{name}/drift"
            )
        if fields is not None:
            drifted = {d["field"] for d in (await drift_of(runtime.pool, name))["differences"]}
            unknown = sorted(set(fields) - drifted)
            if unknown:
                raise BadRequest(
                    f"fields: {', '.join(unknown)} not drifted on cluster {name}",
                    f"accept fields GET /api/v1/clusters/{name}/drift lists"
                    " (refresh first if AWS changed since)",
                )
        accepted = await accept_actual(
            runtime.pool,
            name,
            fields,
            str(request.get("principal") or "unknown"),
            str(request.get("source") or "rest"),
        )
        return {**await drift_of(runtime.pool, name), "accepted": accepted}

    return Area(
        read_routes={DRIFT: drift, REFRESH: refresh, ACCEPT: accept},
        companions=(watcher,),
    )
