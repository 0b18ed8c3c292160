"""The SageMaker HyperPod cluster on top of the EKS control plane: create and delete stages.

The CreateCluster request is built by pure functions from the spec and the outputs of the
stages it needs. Insufficient capacity is not an API error for HyperPod: the create is accepted
and the cluster ends `Failed`; its FailureMessage becomes the stage error, with the zones that
offer the instance type as the next step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from cluster_svc.domain import lifecycle
from cluster_svc.domain.control_plane import elapsed_seconds, is_ours, recorded, resource_tags
from shared.contracts.cluster import CapacityType, ClusterSpec, InstanceGroupSpec
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.errors import PermanentError, StageError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

READY = frozenset({"InService", "Updating", "SystemUpdating"})
_INSTANCE_TYPE = re.compile(r"\bml\.[a-z0-9-]+\.[a-z0-9]+\b")
_ZONE_ID = re.compile(r"\b[a-z]{2,5}[0-9]-az[0-9]{1,2}\b")


@dataclass(frozen=True)
class HyperPodCluster:
    """What the stages read of a HyperPod cluster (DescribeCluster)."""

    name: str
    arn: str
    status: str  # Creating | InService | Failed | Deleting | Updating | RollingBack | ...
    failure_message: str | None = None
    created_at: datetime | None = None


class SageMakerPort(Protocol):
    async def describe_cluster(self, name: str) -> HyperPodCluster | None: ...
    async def cluster_tags(self, arn: str) -> dict[str, str]: ...
    async def create_cluster(self, request: dict[str, Any]) -> str: ...
    async def delete_cluster(self, name: str) -> None: ...
    async def offered_zone_ids(self, instance_type: str) -> list[str]: ...


@dataclass(frozen=True)
class ClusterRefs:
    """What the HyperPod cluster is built from: outputs of the stages it needs."""

    eks_cluster_arn: str
    security_group_id: str
    subnet_id: str  # the compute subnet in the cluster's zone
    subnets_by_zone: dict[str, str]  # zone id -> compute subnet, for groups in other zones
    execution_role_arn: str
    lifecycle_script_uri: str

    @classmethod
    def from_context(cls, ctx: StageContext[Any]) -> ClusterRefs:
        compute = ctx.outputs["compute_subnet"]
        subnet_id = compute["subnet_id"]
        by_zone = {compute["availability_zone_id"]: subnet_id, **(compute.get("subnets") or {})}
        return cls(
            eks_cluster_arn=ctx.output("eks_cluster", "cluster_arn"),
            security_group_id=ctx.output("security_group", "security_group_id"),
            subnet_id=subnet_id,
            subnets_by_zone=by_zone,
            execution_role_arn=ctx.output("execution_role", "role_arn"),
            lifecycle_script_uri=ctx.output("bucket", "lifecycle_script_uri"),
        )


# ---- the request ---------------------------------------------------------------------------


def instance_group_request(
    group: InstanceGroupSpec, spec: ClusterSpec, refs: ClusterRefs
) -> dict[str, Any]:
    """One ClusterInstanceGroupSpecification, with only the members the group uses."""
    request: dict[str, Any] = {
        "InstanceGroupName": group.name,
        "InstanceType": group.instance_type,
        "InstanceCount": group.count,
        "ExecutionRole": refs.execution_role_arn,
        "LifeCycleConfig": {
            "SourceS3Uri": refs.lifecycle_script_uri,
            "OnCreate": lifecycle.ON_CREATE,
        },
        "ThreadsPerCore": group.threads_per_core,
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": group.ebs_volume_gb}}],
        "NetworkInterface": {"InterfaceType": group.interface_type.value},
    }
    if group.min_count is not None:
        request["MinInstanceCount"] = group.min_count
    if group.deep_health_checks:
        request["OnStartDeepHealthChecks"] = [c.value for c in group.deep_health_checks]
    if group.capacity_type == CapacityType.TRAINING_PLAN:
        request["TrainingPlanArn"] = group.training_plan_arn
    elif group.capacity_type == CapacityType.SPOT:
        request["CapacityRequirements"] = {"Spot": {}}
    else:
        request["CapacityRequirements"] = {"OnDemand": {}}
    zone = group.availability_zone_id
    if zone is not None and zone != spec.availability_zone_id:
        subnet = refs.subnets_by_zone.get(zone)
        if subnet is None:
            raise PermanentError(
                "ComputeSubnetMissing",
                f"instance group {group.name} is in {zone}, but no compute subnet was made there "
                f"(compute subnets: {', '.join(sorted(refs.subnets_by_zone)) or 'none'})",
                f"remove availability_zone_id from group {group.name} to use "
                f"{spec.availability_zone_id}, or retry once the compute subnet stage covers {zone}",
            )
        request["OverrideVpcConfig"] = {
            "SecurityGroupIds": [refs.security_group_id],
            "Subnets": [subnet],
        }
    kube: dict[str, Any] = {}
    labels = group.kubernetes_labels()  # the MIG config label from mig_profile too
    if labels:
        kube["Labels"] = labels
    if group.taints:
        kube["Taints"] = [
            {"Key": t.key, **({"Value": t.value} if t.value else {}), "Effect": t.effect}
            for t in group.taints
        ]
    if kube:
        request["KubernetesConfig"] = kube
    return request


def cluster_request(spec: ClusterSpec, refs: ClusterRefs) -> dict[str, Any]:
    """SageMaker CreateCluster parameters for an EKS-orchestrated HyperPod cluster."""
    return {
        "ClusterName": spec.name,
        "InstanceGroups": [instance_group_request(g, spec, refs) for g in spec.instance_groups],
        "VpcConfig": {"SecurityGroupIds": [refs.security_group_id], "Subnets": [refs.subnet_id]},
        "Orchestrator": {"Eks": {"ClusterArn": refs.eks_cluster_arn}},
        "NodeRecovery": spec.node_recovery.value,
        "Tags": [{"Key": k, "Value": v} for k, v in resource_tags(spec).items()],
    }


# ---- failures ------------------------------------------------------------------------------


def capacity_hint(message: str, offered: dict[str, list[str]]) -> str:
    """The next step after InsufficientInstanceCapacity: other zones that offer the type."""
    failed_zones = set(_ZONE_ID.findall(message))
    parts = []
    for instance_type, zones in offered.items():
        others = [z for z in zones if z not in failed_zones]
        if others:
            parts.append(f"{instance_type} is offered in {', '.join(others)}")
    where = f" ({'; '.join(parts)})" if parts else ""
    return (
        f"try another Availability Zone{where} or a training plan "
        "(capacity_type training-plan with a plan's ARN)"
    )


def failed_instance_types(message: str, spec: ClusterSpec) -> list[str]:
    named = _INSTANCE_TYPE.findall(message)
    if named:
        return list(dict.fromkeys(named))
    return list(dict.fromkeys(g.instance_type for g in spec.instance_groups))


async def _offered(sagemaker: SageMakerPort, instance_type: str) -> list[str]:
    """Zones offering the type; none when they cannot be read (the failure still reports)."""
    try:
        return await sagemaker.offered_zone_ids(instance_type)
    except StageError:
        return []


async def failure(
    sagemaker: SageMakerPort, cluster: HyperPodCluster, spec: ClusterSpec
) -> PermanentError:
    message = cluster.failure_message or "no FailureMessage was given"
    text = f"HyperPod cluster {cluster.name} failed: {message}"
    if "InsufficientInstanceCapacity" in message or "insufficient capacity" in message.lower():
        offered = {t: await _offered(sagemaker, t) for t in failed_instance_types(message, spec)}
        return PermanentError("InsufficientInstanceCapacity", text, capacity_hint(message, offered))
    return PermanentError(
        "HyperPodClusterFailed",
        text,
        "fix what the message names, then retry the operation: the failed cluster is deleted "
        "and created again",
    )


# ---- stages --------------------------------------------------------------------------------


REPLACING = "replacing_failed_cluster"


def _outputs(cluster: HyperPodCluster) -> dict[str, Any]:
    return {"cluster_arn": cluster.arn, "cluster_name": cluster.name, "created": True}


def create_stages(sagemaker: SageMakerPort) -> list[Stage]:
    async def hyperpod_cluster(ctx: StageContext[CreateCluster]) -> Done | Submitted:
        spec = ctx.cmd.spec
        current = await sagemaker.describe_cluster(spec.name)
        if current is None:
            arn = await sagemaker.create_cluster(
                cluster_request(spec, ClusterRefs.from_context(ctx))
            )
            return Submitted(arn, {"cluster_arn": arn, "cluster_name": spec.name, "created": True})
        if not is_ours(await sagemaker.cluster_tags(current.arn), spec.name):
            raise PermanentError(
                "HyperPodClusterNameTaken",
                f"a HyperPod cluster named {spec.name} already exists ({current.arn}) and was not "
                "created by Hyperpilot for this cluster",
                "choose another cluster name, or import the existing clusters instead",
            )
        if current.status in ("Failed", "Deleting"):
            # A retry after a failure: delete the failed cluster, then create it again once it
            # is gone (the poll does that, so the stage never sleeps).
            if current.status == "Failed":
                await sagemaker.delete_cluster(current.name)
            return Submitted(current.arn, {**_outputs(current), REPLACING: True})
        if current.status in READY:
            return Done(_outputs(current), noop=True)
        return Submitted(current.arn, _outputs(current))

    async def hyperpod_cluster_poll(ctx: StageContext[CreateCluster]) -> Done | Pending:
        spec = ctx.cmd.spec
        current = await sagemaker.describe_cluster(spec.name)
        replacing = bool(ctx.own_outputs.get(REPLACING))
        if current is None:
            if not replacing:
                raise PermanentError(
                    "HyperPodClusterGone",
                    f"HyperPod cluster {spec.name} disappeared while it was being created",
                    "retry the operation to create it again",
                )
            # The failed cluster is gone: create it again (describe-first, so a crash between
            # this call and the next poll cannot create it twice).
            await sagemaker.create_cluster(cluster_request(spec, ClusterRefs.from_context(ctx)))
            return Pending("HyperPod cluster created again after the failed attempt")
        if replacing and current.arn == ctx.external_id:
            # Still the failed cluster (the new one has a new ARN): wait until it is gone.
            return Pending(
                f"waiting for the failed HyperPod cluster to be deleted ({current.status})"
            )
        if current.status == "Failed":
            raise await failure(sagemaker, current, spec)
        if current.status in READY:
            return Done({**_outputs(current), **({REPLACING: False} if replacing else {})})
        return Pending(
            f"HyperPod cluster {current.status} ({elapsed_seconds(current.created_at)} s)"
        )

    return [
        Stage(
            "hyperpod_cluster",
            "Create the HyperPod cluster",
            hyperpod_cluster,
            hyperpod_cluster_poll,
            needs=(
                "eks_cluster",
                "compute_subnet",
                "security_group",
                "execution_role",
                "bucket",
                "dependencies",
            ),
            # "SageMaker HyperPod Cluster State Change" (InService, Failed) ends it
            evented=True,
        )
    ]


def delete_stages(sagemaker: SageMakerPort) -> list[Stage]:
    async def delete_hyperpod(ctx: StageContext[DeleteCluster]) -> Done | Submitted:
        made = recorded(ctx, "hyperpod_cluster")
        name = made.get("cluster_name")
        if not made.get("created") or not name:
            return Done(noop=True)
        current = await sagemaker.describe_cluster(name)
        if current is None:
            return Done(noop=True)
        if not is_ours(await sagemaker.cluster_tags(current.arn), ctx.cmd.name):
            raise PermanentError(
                "HyperPodClusterNotOurs",
                f"HyperPod cluster {name} no longer carries Hyperpilot's tags for this cluster",
                "delete it yourself if it is no longer used; Hyperpilot leaves it alone",
            )
        if current.status != "Deleting":
            await sagemaker.delete_cluster(name)
        return Submitted(current.arn, {"cluster_name": name})

    async def delete_hyperpod_poll(ctx: StageContext[Any]) -> Done | Pending:
        name = (
            ctx.own_outputs.get("cluster_name") or recorded(ctx, "hyperpod_cluster")["cluster_name"]
        )
        current = await sagemaker.describe_cluster(name)
        if current is None:
            return Done({"deleted": name})
        return Pending(f"HyperPod cluster {current.status}")

    return [
        Stage(
            "delete_hyperpod",
            "Delete the HyperPod cluster",
            delete_hyperpod,
            delete_hyperpod_poll,
            needs=("delete_storage",),
        )
    ]
