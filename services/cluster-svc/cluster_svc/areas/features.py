"""The managed-features area: the UpdateFeatures workflow, its dry run, and the live read
`qry.cluster.features` (the actual state of each feature, read from AWS and the cluster)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.features import LiveFeatures
from cluster_svc.areas import Area
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.features.plan import describe, plan
from cluster_svc.domain.features.stages import update_features_workflow
from shared.contracts.features import FeatureTarget, UpdateFeatures
from shared.contracts.plan import Plan
from shared.contracts.subjects import query_subject
from shared.queries import BadRequest

FEATURES = query_subject("cluster", "features")


def _invalid(exc: ValidationError, what: str) -> BadRequest:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or what
    hint = getattr(first.get("ctx", {}).get("error"), "hint", None)
    return BadRequest(f"{what}.{where}: {first['msg']}", hint or f"send a valid {what}")


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    live = LiveFeatures(aws, ports)

    async def planner(payload: dict[str, Any]) -> Plan:
        try:
            command = UpdateFeatures.from_payload(payload)
        except ValidationError as exc:
            raise _invalid(exc, "command") from exc
        names = await live.names(command)
        return plan(names, await live.observe(names), command.changes)

    async def read(request: dict[str, Any]) -> Any:
        cluster = request.get("cluster")
        if not isinstance(cluster, str) or not cluster:
            raise BadRequest("cluster is required", "send the cluster's name")
        try:
            target = FeatureTarget.from_payload(request.get("target") or {})
        except ValidationError as exc:
            raise _invalid(exc, "target") from exc
        names = await live.names_of(
            cluster,
            str(request.get("region") or aws.region),
            target.eks_cluster,
            target.hyperpod_cluster,
            target.bucket,
        )
        return describe(names, await live.observe(names))

    return Area(
        workflows={UpdateFeatures.__name__: update_features_workflow(live)},
        planners={UpdateFeatures.__name__: planner},
        read_routes={FEATURES: read},
    )
