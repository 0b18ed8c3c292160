"""An in-memory world for the features domain: add-ons, the HyperPod cluster, IAM roles and
Kubernetes objects, changed by the steps the domain decides (and by `settle`, which plays the
asynchronous part: add-ons become ACTIVE, the cluster returns to InService)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from cluster_svc.domain.components.base import KubeObject, object_ref
from cluster_svc.domain.features.actual import Actual, HyperPodActual, RoleActual
from cluster_svc.domain.features.objects import CRD_API, KARPENTER_CRDS, Names, Ref, names_for
from cluster_svc.domain.features.steps import Apply, Call, Remove
from shared.contracts.features import FeaturesChange, FeatureTarget, UpdateFeatures

ACCOUNT = "111122223333"
ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC123"
PROVIDER_ARN = f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC123"


def names(cluster: str = "llm", bucket: str | None = "llm-bucket") -> Names:
    return names_for(
        cluster=cluster,
        eks_cluster=cluster,
        eks_arn=f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/{cluster}",
        hyperpod_cluster=cluster,
        region="us-east-1",
        oidc_issuer=ISSUER,
        bucket=bucket,
    )


def command(changes: dict[str, Any], cluster: str = "llm") -> UpdateFeatures:
    return UpdateFeatures(
        cluster=cluster,
        region="us-east-1",
        target=FeatureTarget(eks_cluster=cluster, hyperpod_cluster=cluster, bucket="llm-bucket"),
        changes=FeaturesChange.model_validate(changes),
    )


def established_crd(name: str) -> KubeObject:
    return {
        "apiVersion": CRD_API,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }


@dataclass
class World:
    addons: dict[str, str | None] = field(default_factory=dict)
    hyperpod: HyperPodActual | None = field(
        default_factory=lambda: HyperPodActual(
            name="llm", status="InService", node_recovery="Automatic", instance_groups=("gpu",)
        )
    )
    objects: dict[Ref, KubeObject] = field(default_factory=dict)
    roles: dict[str, RoleActual] = field(default_factory=dict)
    provider: str | None = PROVIDER_ARN
    calls: list[str] = field(default_factory=list)  # every mutation, in order
    karpenter_with_autoscaling: bool = True  # HyperPod installs Karpenter's CRDs when enabled

    def actual(self) -> Actual:
        return Actual(
            addons=dict(self.addons),
            hyperpod=self.hyperpod,
            objects=dict(self.objects),
            roles=dict(self.roles),
            oidc_provider_arn=self.provider,
        )

    def settle(self) -> None:
        for name, status in list(self.addons.items()):
            if status == "CREATING":
                self.addons[name] = "ACTIVE"
            elif status == "DELETING":
                del self.addons[name]
        if self.hyperpod is not None and self.hyperpod.status == "Updating":
            self.hyperpod = replace(self.hyperpod, status="InService")
            if self.hyperpod.autoscaling_mode == "Enable" and self.karpenter_with_autoscaling:
                for crd in KARPENTER_CRDS:
                    self.objects[(CRD_API, "CustomResourceDefinition", crd, None)] = (
                        established_crd(crd)
                    )

    def execute(self, step: Call | Apply | Remove) -> None:
        if isinstance(step, Apply):
            self.calls.append(f"apply {step.obj['kind']}")
            self.objects[object_ref(step.obj)] = json.loads(json.dumps(step.obj))
            return
        if isinstance(step, Remove):
            self.calls.append(f"delete {step.ref[1]}")
            self.objects.pop(step.ref, None)
            return
        self.calls.append(step.operation)
        p = step.params
        if step.operation == "CreateAddon":
            self.addons[p["addonName"]] = "CREATING"
        elif step.operation == "DeleteAddon":
            self.addons[p["addonName"]] = "DELETING"
        elif step.operation == "CreateRole":
            self.roles[p["RoleName"]] = RoleActual(
                arn=f"arn:aws:iam::{ACCOUNT}:role/{p['RoleName']}",
                ours=True,
                trust=json.loads(p["AssumeRolePolicyDocument"]),
                policy=None,
            )
        elif step.operation == "PutRolePolicy":
            role = self.roles[p["RoleName"]]
            self.roles[p["RoleName"]] = replace(
                role,
                policy=json.loads(p["PolicyDocument"]),
                policy_names=(p["PolicyName"],),
            )
        elif step.operation == "DeleteRolePolicy":
            role = self.roles[p["RoleName"]]
            self.roles[p["RoleName"]] = replace(role, policy=None, policy_names=())
        elif step.operation == "DeleteRole":
            self.roles.pop(p["RoleName"])
        elif step.operation == "UpdateCluster":
            assert self.hyperpod is not None and self.hyperpod.status == "InService"
            changes: dict[str, Any] = {"status": "Updating"}
            if "TieredStorageConfig" in p:
                tiered = p["TieredStorageConfig"]
                changes["tiered_mode"] = tiered["Mode"]
                changes["tiered_percentage"] = tiered.get("InstanceMemoryAllocationPercentage")
            if "AutoScaling" in p:
                changes["autoscaling_mode"] = p["AutoScaling"]["Mode"]
                changes["autoscaler_type"] = p["AutoScaling"].get("AutoScalerType")
            if "ClusterRole" in p:
                changes["cluster_role"] = p["ClusterRole"]
            if "NodeProvisioningMode" in p:
                changes["provisioning_mode"] = p["NodeProvisioningMode"]
            self.hyperpod = replace(self.hyperpod, **changes)
        else:
            raise AssertionError(f"unexpected call {step.operation}")


class FakePort:
    """The `FeaturePort` over a `World`."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.reads = 0

    async def names(self, command: UpdateFeatures) -> Names:
        return names(command.cluster)

    async def observe(self, _names: Names) -> Actual:
        self.reads += 1
        return self.world.actual()

    async def execute(self, _names: Names, step: Call | Apply | Remove) -> None:
        self.world.execute(step)
