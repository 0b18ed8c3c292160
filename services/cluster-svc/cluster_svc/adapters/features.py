"""Managed features against AWS and the cluster: read actual state, run one step.

Reads go through the existing ports (EKS, add-ons, IAM, Kubernetes) plus DescribeCluster of
HyperPod for its TieredStorageConfig, AutoScaling and ClusterRole. A step is one AWS call (by its
botocore operation name, as the plan shows it) or one object applied or deleted; a call whose
effect is already there (a role that exists, an add-on already gone) counts as done, so a
redelivered step is harmless.
"""

from __future__ import annotations

import asyncio
from typing import Any

from botocore import xform_name

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.components.base import COMPONENT_LABEL, ClusterAccess, KubeObject
from cluster_svc.domain.features.actual import Actual, HyperPodActual, RoleActual
from cluster_svc.domain.features.objects import (
    AUTOSCALING_COMPONENT,
    CERT_MANAGER,
    NODE_CLASS_API,
    NODE_POOL_API,
    SPACES_ADDON,
    TRAINING_ADDON,
    Names,
    Ref,
    names_for,
    watched,
)
from cluster_svc.domain.features.observability import (
    OBSERVED_ADDONS,
    WorkspaceActual,
    workspace_name,
)
from cluster_svc.domain.features.steps import Apply, Call, Remove
from cluster_svc.domain.identity import CLUSTER_TAG, MANAGED_BY, POLICY_NAME, is_ours
from shared.contracts.features import UpdateFeatures
from shared.errors import PermanentError, TemporaryError

# (service, operation) -> error codes meaning "the call's effect is already there"
ALREADY = {
    ("iam", "CreateRole"): {"EntityAlreadyExists"},
    ("iam", "DeleteRole"): {"NoSuchEntity"},
    ("iam", "DeleteRolePolicy"): {"NoSuchEntity"},
    ("eks", "CreateAddon"): {"ResourceInUseException"},
    ("eks", "DeleteAddon"): {"ResourceNotFoundException"},
    ("amp", "DeleteWorkspace"): {"ResourceNotFoundException"},
    ("grafana", "DeleteWorkspace"): {"ResourceNotFoundException"},
}


class LiveFeatures:
    """The `FeaturePort` of the features area."""

    def __init__(self, aws: AwsClients, ports: ClusterPorts) -> None:
        self.aws = aws
        self.ports = ports

    async def names(self, command: UpdateFeatures) -> Names:
        return await self.names_of(
            command.cluster,
            command.region,
            command.target.eks_cluster,
            command.target.hyperpod_cluster,
            command.target.bucket,
        )

    async def names_of(
        self,
        cluster: str,
        region: str,
        eks_cluster: str,
        hyperpod_cluster: str | None,
        bucket: str | None,
    ) -> Names:
        eks = await self.ports.eks.describe_cluster(eks_cluster)
        if eks is None:
            raise PermanentError(
                "ResourceNotFoundException",
                f"EKS cluster {eks_cluster} does not exist in {region}",
                "the cluster was deleted outside Hyperpilot; forget it with DELETE"
                f" /api/v1/clusters/{cluster}",
            )
        access = (
            ClusterAccess(eks.name, eks.endpoint, eks.ca_data)
            if eks.endpoint and eks.ca_data
            else None
        )
        return names_for(
            cluster=cluster,
            eks_cluster=eks.name,
            eks_arn=eks.arn,
            hyperpod_cluster=hyperpod_cluster,
            region=region,
            oidc_issuer=eks.oidc_issuer,
            bucket=bucket,
            access=access,
        )

    # ---- reads -------------------------------------------------------------------------------

    async def observe(self, names: Names) -> Actual:
        addons, hyperpod, objects, roles, provider = await asyncio.gather(
            self._addons(names),
            self.hyperpod(names.hyperpod_cluster),
            self._objects(names),
            self._roles(names),
            self._provider(names),
        )
        pools, classes = await asyncio.gather(
            self._managed(names, NODE_POOL_API, "NodePool"),
            self._managed(names, NODE_CLASS_API, "HyperpodNodeClass"),
        )
        observed, workspaces = await asyncio.gather(
            self._observed_addons(names), self._workspaces(names)
        )
        return Actual(
            addons={**addons, **observed},
            hyperpod=hyperpod,
            objects=objects,
            roles=roles,
            oidc_provider_arn=provider,
            pools=pools,
            classes=classes,
            workspaces=workspaces,
        )

    async def _managed(self, names: Names, api_version: str, kind: str) -> dict[str, KubeObject]:
        """The objects of a kind managed autoscaling's component label names, by name."""
        if names.access is None:
            return {}
        kube = self.ports.kube(names.access)
        found = await kube.list_objects(
            api_version, kind, f"{COMPONENT_LABEL}={AUTOSCALING_COMPONENT}"
        )
        return {str(o["metadata"]["name"]): o for o in found}

    async def _addons(self, names: Names) -> dict[str, str | None]:
        wanted = (CERT_MANAGER, TRAINING_ADDON, SPACES_ADDON)
        states = await asyncio.gather(
            *(self.ports.addons.describe(names.eks_cluster, a) for a in wanted)
        )
        return {
            a: (s.status if s is not None else None) for a, s in zip(wanted, states, strict=True)
        }

    async def _observed_addons(self, names: Names) -> dict[str, str | None]:
        states = await asyncio.gather(
            *(self.ports.addons.describe(names.eks_cluster, a) for a in OBSERVED_ADDONS)
        )
        return {
            a: (s.status if s is not None else None)
            for a, s in zip(OBSERVED_ADDONS, states, strict=True)
        }

    async def _workspaces(self, names: Names) -> dict[str, WorkspaceActual | None]:
        """The AMP and Grafana workspaces named for the cluster (aps ListWorkspaces by
        alias, grafana ListWorkspaces by name)."""
        name = workspace_name(names.cluster)
        listed, boards = await asyncio.gather(
            self.aws.call("amp", "list_workspaces", alias=name),
            self.aws.call("grafana", "list_workspaces"),
        )
        amp = None
        for found in listed.get("workspaces") or []:
            described = await self.aws.call(
                "amp", "describe_workspace", workspaceId=found["workspaceId"]
            )
            space = described["workspace"]
            amp = WorkspaceActual(
                id=str(space["workspaceId"]),
                status=str(space["status"]["statusCode"]),
                endpoint=space.get("prometheusEndpoint"),
                ours=is_ours(space.get("tags") or {}, names.cluster),
                arn=space.get("arn"),
            )
        grafana = None
        for board in boards.get("workspaces") or []:
            if board.get("name") == name:
                grafana = WorkspaceActual(
                    id=str(board["id"]),
                    status=str(board["status"]),
                    endpoint=board.get("endpoint"),
                    ours=is_ours(board.get("tags") or {}, names.cluster),
                )
        return {"amp": amp, "grafana": grafana}

    async def hyperpod(self, name: str | None) -> HyperPodActual | None:
        if name is None:
            return None
        try:
            answer = await self.aws.call("sagemaker", "describe_cluster", ClusterName=name)
        except PermanentError as exc:
            if exc.code == "ResourceNotFound":
                return None
            raise
        tiered = answer.get("TieredStorageConfig") or {}
        scaling = answer.get("AutoScaling") or {}
        return HyperPodActual(
            name=str(answer["ClusterName"]),
            status=str(answer["ClusterStatus"]),
            tiered_mode=tiered.get("Mode"),
            tiered_percentage=tiered.get("InstanceMemoryAllocationPercentage"),
            autoscaling_mode=scaling.get("Mode"),
            autoscaler_type=scaling.get("AutoScalerType"),
            autoscaling_status=scaling.get("Status"),
            cluster_role=answer.get("ClusterRole"),
            provisioning_mode=answer.get("NodeProvisioningMode"),
            node_recovery=answer.get("NodeRecovery"),
            instance_groups=tuple(
                str(g["InstanceGroupName"]) for g in answer.get("InstanceGroups") or []
            ),
        )

    async def _objects(self, names: Names) -> dict[Ref, KubeObject | None]:
        if names.access is None:
            return {}
        kube = self.ports.kube(names.access)
        refs = watched(names)
        found = await asyncio.gather(*(kube.get(*ref) for ref in refs))
        return dict(zip(refs, found, strict=True))

    async def _roles(self, names: Names) -> dict[str, RoleActual | None]:
        roles = (names.checkpoint_role, names.autoscaler_role)
        found = await asyncio.gather(*(self._role(names, r) for r in roles))
        return dict(zip(roles, found, strict=True))

    async def _role(self, names: Names, name: str) -> RoleActual | None:
        iam = self.ports.iam
        role = await iam.role(name)
        if role is None:
            return None
        policy, policy_names = await asyncio.gather(
            iam.inline_policy(name, POLICY_NAME), iam.inline_policy_names(name)
        )
        ours = (
            role.tags.get(CLUSTER_TAG) == names.cluster
            and role.tags.get("managed-by") == MANAGED_BY["managed-by"]
        )
        return RoleActual(role.arn, ours, role.trust, policy, tuple(policy_names))

    async def _provider(self, names: Names) -> str | None:
        if names.oidc_url is None:
            return None
        provider = await self.ports.iam.oidc_provider(names.oidc_url)
        return provider.arn if provider is not None else None

    # ---- one step ----------------------------------------------------------------------------

    async def execute(self, names: Names, step: Call | Apply | Remove) -> None:
        if isinstance(step, Call):
            await self.call(step)
            return
        if names.access is None:
            raise PermanentError(
                "NoClusterEndpoint",
                f"EKS cluster {names.eks_cluster} reports no API endpoint",
                "wait until the EKS cluster is ACTIVE, then retry",
            )
        kube = self.ports.kube(names.access)
        if isinstance(step, Apply):
            await kube.apply(step.obj)
        else:
            await kube.delete(*step.ref)

    async def call(self, step: Call) -> Any:
        try:
            return await self.aws.call(step.service, xform_name(step.operation), **step.params)
        except PermanentError as exc:
            if exc.code in ALREADY.get((step.service, step.operation), set()):
                return None
            if step.operation == "UpdateCluster" and exc.code == "ConflictException":
                raise TemporaryError(
                    exc.code, exc.message, "the HyperPod cluster is busy; retried shortly"
                ) from exc
            raise
