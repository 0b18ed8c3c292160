"""The cluster workflows, composed from each area's stages (see docs/cluster-lifecycle.md).

create: preflight -> (network, roles, bucket) -> EKS -> (OIDC, access entries) -> dependencies
        -> HyperPod -> storage, with independent stages concurrent;
delete: the same in reverse dependency order, removing only what create recorded as made;
import: read-only describes of an existing EKS (and HyperPod) cluster;
reconcile dependencies: the create's `dependencies` stage, run again against the cluster as it
        is (a second run changes nothing and ends `noop`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cluster_svc.domain import (
    claims,
    control_plane,
    dependencies,
    fsx,
    hyperpod,
    identity,
    inspection,
    network,
)
from cluster_svc.domain.components.base import KubeFactory
from shared.contracts.commands import CreateCluster, DeleteCluster, ImportCluster
from shared.contracts.dependencies import ReconcileDependencies
from shared.errors import PermanentError
from shared.stages import Done, Stage, StageContext, Workflow


@dataclass(frozen=True)
class ClusterPorts:
    ec2: network.Ec2
    iam: identity.Iam
    eks: control_plane.EksPort
    buckets: control_plane.LifecycleBuckets
    sagemaker: hyperpod.SageMakerPort
    fsx: fsx.FsxPort
    kube: KubeFactory
    addons: dependencies.AddonApi
    inspector: inspection.InspectionReads


def with_needs(stages: Iterable[Stage], extra: Mapping[str, tuple[str, ...]]) -> tuple[Stage, ...]:
    """Add cross-area needs to stages built by their own areas (duplicates dropped)."""
    result = []
    for stage in stages:
        needs = tuple(dict.fromkeys((*stage.needs, *extra.get(stage.name, ()))))
        result.append(replace(stage, needs=needs))
    return tuple(result)


def create_cluster_workflow(ports: ClusterPorts) -> Workflow[Any]:
    stages = [
        *inspection.create_stages(ports.inspector),
        *network.create_stages(ports.ec2),
        *identity.create_stages(ports.iam),
        *control_plane.create_stages(ports.eks, ports.buckets),
        *dependencies.create_stages(ports.kube, ports.addons),
        *hyperpod.create_stages(ports.sagemaker),
        *fsx.create_stages(ports.fsx),
    ]
    # Nothing is created before the preflight checks pass.
    roots = {s.name: ("preflight",) for s in stages if not s.needs and s.name != "preflight"}
    return Workflow(
        kind=CreateCluster.kind(),
        domain=CreateCluster.domain,
        command=CreateCluster,
        stages=with_needs(stages, {**roots, "storage": ("fsx",)}),
    )


# Reverse dependency order: what uses a resource goes before it.
DELETE_NEEDS: dict[str, tuple[str, ...]] = {
    "delete_hyperpod": ("delete_storage",),
    "delete_fsx": ("delete_storage", "delete_hyperpod"),
    "delete_dependencies": ("delete_hyperpod", "delete_storage"),
    "delete_eks": ("delete_dependencies", "delete_hyperpod", "delete_fsx", "delete_claims"),
    "delete_claims": ("delete_hyperpod",),
    "delete_oidc_provider": ("delete_eks",),
    "delete_compute_subnet": ("delete_hyperpod", "delete_fsx", "delete_claims"),
    "delete_security_group": ("delete_eks", "delete_hyperpod", "delete_fsx", "delete_claims"),
    "delete_network": ("delete_eks", "delete_compute_subnet", "delete_security_group"),
    "delete_roles": ("delete_eks", "delete_hyperpod", "delete_oidc_provider"),
    "delete_bucket": ("delete_hyperpod", "delete_storage"),
    "delete_feature_roles": ("delete_hyperpod", "delete_eks"),
}


# Roles the managed features make (tiered checkpointing, autoscaling) while the cluster lives.
FEATURE_ROLE_SUFFIXES = ("ckpt", "autoscaler")


def delete_feature_roles_stage(iam: identity.Iam) -> Stage:
    """Remove the roles managed features made for this cluster (tagged as ours), so deleting a
    cluster with features still on leaves nothing behind."""

    async def run(ctx: StageContext[DeleteCluster]) -> Done:
        cluster = ctx.cmd.name
        removed = []
        for suffix in FEATURE_ROLE_SUFFIXES:
            name = identity.role_name(cluster, suffix)
            role = await iam.role(name)
            if role is not None and identity.is_ours(role.tags, cluster):
                await identity.remove_role(iam, name)
                removed.append(name)
        return Done({"removed": removed}, noop=not removed)

    return Stage("delete_feature_roles", "Delete the roles managed features made", run)


def delete_cluster_workflow(ports: ClusterPorts, extra: Iterable[Stage] = ()) -> Workflow[Any]:
    """`extra`: other areas' delete stages (an adopted cluster's access entries)."""
    stages = [
        *dependencies.delete_stages(ports.kube, ports.addons),
        *hyperpod.delete_stages(ports.sagemaker),
        *fsx.delete_stages(ports.fsx),
        *control_plane.delete_stages(ports.eks, ports.buckets),
        *identity.delete_stages(ports.iam),
        *network.delete_stages(ports.ec2),
        delete_feature_roles_stage(ports.iam),
        claims.delete_claims_stage(ports.buckets, ports.fsx, ports.kube, ports.eks),
        *extra,
    ]
    return Workflow(
        kind=DeleteCluster.kind(),
        domain=DeleteCluster.domain,
        command=DeleteCluster,
        stages=with_needs(stages, DELETE_NEEDS),
    )


def import_cluster_workflow(ports: ClusterPorts) -> Workflow[Any]:
    """Read-only: an imported cluster's resources are never touched, only remembered."""

    async def describe_eks(ctx: StageContext[ImportCluster]) -> Done:
        name = ctx.cmd.spec.eks_cluster_name
        cluster = await ports.eks.describe_cluster(name)
        if cluster is None:
            raise PermanentError(
                "ResourceNotFoundException",
                f"no EKS cluster named {name} in this account and region",
                "list importable clusters with GET /api/v1/inspect/clusters",
            )
        if cluster.status != "ACTIVE":
            raise PermanentError(
                "ClusterNotActive",
                f"EKS cluster {name} is {cluster.status}",
                "import it once it is ACTIVE",
            )
        return Done(_eks_outputs(cluster))

    async def describe_hyperpod(ctx: StageContext[ImportCluster]) -> Done:
        name = ctx.cmd.spec.hyperpod_cluster_name
        if name is None:
            return Done(noop=True)
        cluster = await ports.sagemaker.describe_cluster(name)
        if cluster is None:
            raise PermanentError(
                "ResourceNotFound",
                f"no HyperPod cluster named {name} in this account and region",
                "list importable clusters with GET /api/v1/inspect/clusters",
            )
        return Done(
            {"cluster_arn": cluster.arn, "cluster_name": cluster.name, "status": cluster.status}
        )

    return Workflow(
        kind=ImportCluster.kind(),
        domain=ImportCluster.domain,
        command=ImportCluster,
        stages=(
            Stage("describe_eks", "Read the EKS cluster", describe_eks),
            Stage("describe_hyperpod", "Read the HyperPod cluster", describe_hyperpod),
        ),
    )


def _eks_outputs(cluster: control_plane.EksCluster) -> dict[str, Any]:
    return {
        "cluster_arn": cluster.arn,
        "cluster_name": cluster.name,
        "endpoint": cluster.endpoint,
        "ca_data": cluster.ca_data,
        "oidc_issuer": cluster.oidc_issuer,
    }


def reconcile_dependencies_workflow(ports: ClusterPorts) -> Workflow[Any]:
    async def eks_cluster(ctx: StageContext[ReconcileDependencies]) -> Done:
        name = ctx.cmd.spec.name
        cluster = await ports.eks.describe_cluster(name)
        if cluster is None or cluster.status != "ACTIVE":
            raise PermanentError(
                "ClusterNotActive",
                f"EKS cluster {name} is {cluster.status if cluster else 'gone'}",
                "reconcile once the cluster is ACTIVE",
            )
        return Done(_eks_outputs(cluster), noop=True)

    def recorded(stage: str) -> Stage:
        async def run(ctx: StageContext[ReconcileDependencies]) -> Done:
            return Done(dict(ctx.cmd.resources.get(stage, {})), noop=True)

        return Stage(stage, f"Read the recorded {stage.replace('_', ' ')}", run)

    reconcile = next(
        s for s in dependencies.create_stages(ports.kube, ports.addons) if s.name == "dependencies"
    )
    return Workflow(
        kind=ReconcileDependencies.kind(),
        domain=ReconcileDependencies.domain,
        command=ReconcileDependencies,
        stages=(
            Stage("eks_cluster", "Read the EKS cluster", eks_cluster),
            recorded("access_entries"),
            recorded("oidc_provider"),
            reconcile,
        ),
    )
