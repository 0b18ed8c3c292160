"""Managed features: actual state in, the steps that make it equal the request out (pure).

Each feature is a dependency-aware chain, decided by one function per feature from what AWS and
the cluster report now (`Actual`) and what the caller asked (`FeaturesChange`):

- training operator: EKS add-on `amazon-sagemaker-hyperpod-training-operator`, after cert-manager;
  disabling removes that add-on only (cert-manager stays: other features use it).
- inference operator: the operator's manifests (namespace, CRDs, service account, controller),
  after cert-manager; disabling removes the controller and its service account (the CRDs and
  the endpoints made with them stay).
- managed tiered checkpointing: the identity chain (IAM role whose trust is the cluster's OIDC
  provider limited to one service account, its inline policy, the Kubernetes service account
  annotated `eks.amazonaws.com/role-arn`) and `TieredStorageConfig`; disabling turns the config
  off and removes exactly that chain (the OIDC provider belongs to the cluster and stays).
- managed autoscaling: the cluster role (trusted by hyperpod.sagemaker.amazonaws.com),
  `AutoScaling{Mode: Enable, AutoScalerType: Karpenter}` with continuous provisioning, then a
  HyperpodNodeClass over the cluster's instance groups and a NodePool; disabling removes the two
  objects, sets Mode Disable, then removes the cluster role Hyperpilot made (HyperPod assumes it
  only for autoscaling; enabling again makes it again).

Steps are data: AWS calls, objects to apply or remove, and waits. A stage runs the steps in
order up to the first wait, then reads actual state again and decides again, so a redelivered
command repeats nothing that already took effect; the dry-run plan is the same list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_svc.domain.components.addons import eks_addons
from cluster_svc.domain.components.base import (
    ClusterAccess,
    KubeObject,
    is_managed,
    labelled,
    object_ref,
    object_version,
)
from cluster_svc.domain.components.objects import TOLERATE_ALL, container, deployment
from cluster_svc.domain.components.objects import namespace as namespace_object
from cluster_svc.domain.components.objects import service_account as service_account_object
from cluster_svc.domain.components.schema import OPEN, crd
from cluster_svc.domain.identity import CLUSTER_TAG, MANAGED_BY, POLICY_NAME, role_name
from shared.contracts.events import Event
from shared.contracts.features import (
    AUTOSCALING_SCOPE,
    DEFAULT_MEMORY_PERCENTAGE,
    FeaturesChange,
    FeaturesUpdated,
    UpdateFeatures,
)
from shared.contracts.plan import FieldChange, Plan, PlannedCall, PlannedObject
from shared.errors import PermanentError
from shared.stages import Done, Outcome, Pending, Stage, StageContext, Submitted, Workflow

FEATURES = ("training_operator", "inference_operator", "tiered_checkpointing", "autoscaling")

CERT_MANAGER = "cert-manager"
TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"
ADDON_VERSIONS = {c.name: c.version for c in eks_addons()}
ADDON_READY = frozenset({"ACTIVE", "DEGRADED"})
ADDON_FAILED = frozenset({"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})

INFERENCE_COMPONENT = "hyperpod-inference-operator"
INFERENCE_VERSION = "3.2"
INFERENCE_NAMESPACE = "hyperpod-inference-system"
INFERENCE_ACCOUNT = "hyperpod-inference-operator"
INFERENCE_CONTROLLER = "hyperpod-inference-operator-controller-manager"
INFERENCE_IMAGE = "public.ecr.aws/sagemaker/hyperpod-inference-operator:v3.2"

CHECKPOINT_COMPONENT = "tiered-checkpointing"
CHECKPOINT_NAMESPACE = "default"
CHECKPOINT_ACCOUNT = "hyperpod-tiered-checkpointing"
ROLE_ARN_ANNOTATION = "eks.amazonaws.com/role-arn"
STS_AUDIENCE = "sts.amazonaws.com"

AUTOSCALING_COMPONENT = "managed-autoscaling"
KARPENTER_VERSION = "v1"
NODE_CLASS_API = "karpenter.sagemaker.amazonaws.com/v1"
NODE_POOL_API = "karpenter.sh/v1"
KARPENTER_OBJECTS = "hyperpilot"
KARPENTER_CRDS = (
    "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com",
    "nodepools.karpenter.sh",
)
NODE_CLASS_LIMIT = 10  # instance groups one HyperpodNodeClass may name
CRD_API = "apiextensions.k8s.io/v1"
IN_SERVICE = "InService"
VERSION = "2012-10-17"

Ref = tuple[str, str, str, str | None]


# ---- names -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    """Everything a feature's resources are named after, derived from the cluster."""

    cluster: str
    eks_cluster: str
    hyperpod_cluster: str | None
    region: str
    partition: str
    account: str
    oidc_url: str | None  # the issuer without its scheme, as IAM names the provider
    bucket: str | None
    access: ClusterAccess | None = None  # the EKS API endpoint and CA

    @property
    def checkpoint_role(self) -> str:
        return role_name(self.cluster, "ckpt")

    @property
    def autoscaler_role(self) -> str:
        return role_name(self.cluster, "autoscaler")

    def role_arn(self, name: str) -> str:
        return f"arn:{self.partition}:iam::{self.account}:role/{name}"

    @property
    def oidc_provider_arn(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:oidc-provider/{self.oidc_url}"


def names_for(
    *,
    cluster: str,
    eks_cluster: str,
    eks_arn: str,
    hyperpod_cluster: str | None,
    region: str,
    oidc_issuer: str | None,
    bucket: str | None,
    access: ClusterAccess | None = None,
) -> Names:
    parts = eks_arn.split(":")
    return Names(
        cluster=cluster,
        eks_cluster=eks_cluster,
        hyperpod_cluster=hyperpod_cluster,
        region=region,
        partition=parts[1],
        account=parts[4],
        oidc_url=oidc_issuer.removeprefix("https://") if oidc_issuer else None,
        bucket=bucket,
        access=access,
    )


# ---- documents and objects ---------------------------------------------------------------------


def tags(names: Names) -> dict[str, str]:
    return {**MANAGED_BY, CLUSTER_TAG: names.cluster}


def checkpoint_trust(names: Names) -> dict[str, Any]:
    """IRSA: only the checkpointing service account of this cluster may assume the role."""
    url = names.oidc_url
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": names.oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{url}:sub": f"system:serviceaccount:{CHECKPOINT_NAMESPACE}:"
                        f"{CHECKPOINT_ACCOUNT}",
                        f"{url}:aud": STS_AUDIENCE,
                    }
                },
            }
        ],
    }


def checkpoint_policy(names: Names) -> dict[str, Any]:
    """Checkpoints persist from memory to the cluster's bucket: read and write there only."""
    bucket = f"arn:{names.partition}:s3:::{names.bucket}"
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ListCheckpoints",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": bucket,
            },
            {
                "Sid": "ReadWriteCheckpoints",
                "Effect": "Allow",
                "Action": [
                    "s3:AbortMultipartUpload",
                    "s3:DeleteObject",
                    "s3:GetObject",
                    "s3:PutObject",
                ],
                "Resource": f"{bucket}/*",
            },
        ],
    }


def autoscaler_trust() -> dict[str, Any]:
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["hyperpod.sagemaker.amazonaws.com"]},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def autoscaler_policy(names: Names) -> dict[str, Any]:
    """What HyperPod's managed Karpenter does with the cluster role: add and remove nodes of
    this account's HyperPod clusters."""
    return {
        "Version": VERSION,
        "Statement": [
            {
                "Sid": "ScaleInstanceGroups",
                "Effect": "Allow",
                "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
                "Resource": f"arn:{names.partition}:sagemaker:*:{names.account}:cluster/*",
            }
        ],
    }


def checkpoint_service_account(names: Names) -> KubeObject:
    account = service_account_object(
        CHECKPOINT_ACCOUNT,
        CHECKPOINT_NAMESPACE,
        {ROLE_ARN_ANNOTATION: names.role_arn(names.checkpoint_role)},
    )
    return labelled(account, CHECKPOINT_COMPONENT, "1")


def inference_objects() -> list[KubeObject]:
    """The inference operator's chart, rendered: CRDs first, the controller last."""
    endpoint_config = crd(
        "inference.sagemaker.aws.amazon.com",
        "InferenceEndpointConfig",
        "inferenceendpointconfigs",
        OPEN,
        versions=("v1", "v1alpha1"),
    )
    jumpstart = crd(
        "inference.sagemaker.aws.amazon.com",
        "JumpStartModel",
        "jumpstartmodels",
        OPEN,
        versions=("v1", "v1alpha1"),
    )
    controller = deployment(
        INFERENCE_CONTROLLER,
        INFERENCE_NAMESPACE,
        [container("manager", INFERENCE_IMAGE, args=["--leader-elect"])],
        account=INFERENCE_ACCOUNT,
        tolerations=TOLERATE_ALL,
    )
    objects = [
        namespace_object(INFERENCE_NAMESPACE),
        endpoint_config,
        jumpstart,
        service_account_object(INFERENCE_ACCOUNT, INFERENCE_NAMESPACE),
        controller,
    ]
    return [labelled(o, INFERENCE_COMPONENT, INFERENCE_VERSION) for o in objects]


INFERENCE_REMOVED_KINDS = ("Deployment", "ServiceAccount")  # removed on disable, in this order


def node_class(instance_groups: Sequence[str]) -> KubeObject:
    body = {
        "apiVersion": NODE_CLASS_API,
        "kind": "HyperpodNodeClass",
        "metadata": {"name": KARPENTER_OBJECTS},
        "spec": {"instanceGroups": list(instance_groups)},
    }
    return labelled(body, AUTOSCALING_COMPONENT, KARPENTER_VERSION)


def node_pool() -> KubeObject:
    body = {
        "apiVersion": NODE_POOL_API,
        "kind": "NodePool",
        "metadata": {"name": KARPENTER_OBJECTS},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.sagemaker.amazonaws.com",
                        "kind": "HyperpodNodeClass",
                        "name": KARPENTER_OBJECTS,
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "Exists",
                        }
                    ],
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"},
        },
    }
    return labelled(body, AUTOSCALING_COMPONENT, KARPENTER_VERSION)


def crd_ref(name: str) -> Ref:
    return (CRD_API, "CustomResourceDefinition", name, None)


def watched(names: Names) -> list[Ref]:
    """Every Kubernetes object whose state some feature decides on."""
    refs = [object_ref(o) for o in inference_objects()]
    refs.append(object_ref(checkpoint_service_account(names)))
    refs.append(object_ref(node_class(())))
    refs.append(object_ref(node_pool()))
    refs += [crd_ref(n) for n in KARPENTER_CRDS]
    return refs


# ---- actual state ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleActual:
    arn: str
    ours: bool  # tagged as made by Hyperpilot for this cluster
    trust: Mapping[str, Any]
    policy: Mapping[str, Any] | None  # the `hyperpilot` inline policy
    policy_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class HyperPodActual:
    name: str
    status: str
    tiered_mode: str | None = None
    tiered_percentage: int | None = None
    autoscaling_mode: str | None = None
    autoscaler_type: str | None = None
    autoscaling_status: str | None = None
    cluster_role: str | None = None
    provisioning_mode: str | None = None
    node_recovery: str | None = None
    instance_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Actual:
    addons: Mapping[str, str | None] = field(default_factory=dict)  # name -> status (None: absent)
    hyperpod: HyperPodActual | None = None
    objects: Mapping[Ref, KubeObject | None] = field(default_factory=dict)
    roles: Mapping[str, RoleActual | None] = field(default_factory=dict)
    oidc_provider_arn: str | None = None  # IAM's provider of the cluster's issuer

    def object(self, ref: Ref) -> KubeObject | None:
        return self.objects.get(ref)

    def karpenter_served(self) -> bool:
        return all(_established(self.object(crd_ref(n))) for n in KARPENTER_CRDS)


def _established(found: KubeObject | None) -> bool:
    if found is None:
        return False
    conditions = (found.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def addon_enabled(status: str | None) -> bool:
    return status is not None and status != "DELETING"


def training_enabled(actual: Actual) -> bool:
    return addon_enabled(actual.addons.get(TRAINING_ADDON))


def inference_enabled(actual: Actual) -> bool:
    controller = next(o for o in inference_objects() if o["kind"] == "Deployment")
    return actual.object(object_ref(controller)) is not None


def tiered_enabled(actual: Actual) -> bool:
    return actual.hyperpod is not None and actual.hyperpod.tiered_mode == "Enable"


def autoscaling_enabled(actual: Actual) -> bool:
    return actual.hyperpod is not None and actual.hyperpod.autoscaling_mode == "Enable"


# ---- steps -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    service: str  # botocore service name
    operation: str  # botocore operation name
    params: dict[str, Any]


@dataclass(frozen=True)
class Apply:
    obj: KubeObject


@dataclass(frozen=True)
class Remove:
    ref: Ref


@dataclass(frozen=True)
class Wait:
    reason: str


Step = Call | Apply | Remove | Wait


def _same(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> bool:
    return a is not None and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _contains(actual: Any, wanted: Any) -> bool:
    """True when every field of `wanted` is in `actual` with the same value (defaults the API
    server adds are ignored)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            _contains(actual.get(k), v) for k, v in wanted.items()
        )
    return bool(actual == wanted)


def _invalid(field_name: str, message: str, hint: str) -> PermanentError:
    return PermanentError("InvalidFeatureChange", f"{field_name}: {message}", hint)


def addon_steps(names: Names, actual: Actual, addon: str) -> list[Step]:
    """Install an EKS add-on if missing and wait until it serves."""
    status = actual.addons.get(addon)
    if status in ADDON_FAILED:
        raise PermanentError(
            "AddonFailed",
            f"EKS add-on {addon} is {status}",
            f"inspect it with `aws eks describe-addon --cluster-name {names.eks_cluster}"
            f" --addon-name {addon}`, fix the cause, delete the add-on, then retry",
        )
    steps: list[Step] = []
    if status == "DELETING":
        steps.append(Wait(f"EKS add-on {addon} finishes deleting"))
    if status is None or status == "DELETING":
        steps.append(
            Call(
                "eks",
                "CreateAddon",
                {
                    "clusterName": names.eks_cluster,
                    "addonName": addon,
                    "addonVersion": ADDON_VERSIONS[addon],
                    "tags": dict(MANAGED_BY),
                },
            )
        )
    if status not in ADDON_READY:
        steps.append(Wait(f"EKS add-on {addon} is ACTIVE"))
    return steps


def role_steps(
    names: Names,
    actual: Actual,
    role: str,
    trust: dict[str, Any],
    policy: dict[str, Any],
    description: str,
) -> list[Step]:
    found = actual.roles.get(role)
    steps: list[Step] = []
    if found is not None and not found.ours:
        raise PermanentError(
            "RoleNameTaken",
            f"IAM role {role} exists and was not made by Hyperpilot for cluster {names.cluster}",
            f"delete or rename role {role}, then retry",
        )
    if found is None:
        steps.append(
            Call(
                "iam",
                "CreateRole",
                {
                    "RoleName": role,
                    "AssumeRolePolicyDocument": json.dumps(trust),
                    "Description": description,
                    "Tags": [{"Key": k, "Value": v} for k, v in tags(names).items()],
                },
            )
        )
    elif not _same(found.trust, trust):
        steps.append(
            Call(
                "iam",
                "UpdateAssumeRolePolicy",
                {"RoleName": role, "PolicyDocument": json.dumps(trust)},
            )
        )
    if found is None or not _same(found.policy, policy):
        steps.append(
            Call(
                "iam",
                "PutRolePolicy",
                {"RoleName": role, "PolicyName": POLICY_NAME, "PolicyDocument": json.dumps(policy)},
            )
        )
    return steps


def remove_role_steps(actual: Actual, role: str) -> list[Step]:
    """Delete a role Hyperpilot made (inline policies first, as IAM requires); others' stay."""
    found = actual.roles.get(role)
    if found is None or not found.ours:
        return []
    steps: list[Step] = [
        Call("iam", "DeleteRolePolicy", {"RoleName": role, "PolicyName": p})
        for p in found.policy_names
    ]
    steps.append(Call("iam", "DeleteRole", {"RoleName": role}))
    return steps


def _hyperpod(names: Names, actual: Actual, feature: str) -> HyperPodActual:
    if actual.hyperpod is None:
        raise _invalid(
            f"{feature}.enabled",
            f"{feature} is a HyperPod feature and cluster {names.cluster} has no HyperPod cluster",
            "create the cluster with instance groups, or import it with hyperpod_cluster_name",
        )
    if actual.hyperpod.status in ("Failed", "Deleting"):
        raise PermanentError(
            "ClusterNotInService",
            f"HyperPod cluster {actual.hyperpod.name} is {actual.hyperpod.status}",
            "features change on an InService cluster; fix or recreate the cluster first",
        )
    return actual.hyperpod


def update_cluster_steps(hyperpod: HyperPodActual, params: dict[str, Any]) -> list[Step]:
    """UpdateCluster only on an InService cluster, then wait until it has applied the update."""
    steps: list[Step] = []
    if hyperpod.status != IN_SERVICE:
        steps.append(Wait(f"HyperPod cluster {hyperpod.name} is {IN_SERVICE}"))
    steps.append(Call("sagemaker", "UpdateCluster", {"ClusterName": hyperpod.name, **params}))
    steps.append(Wait(f"HyperPod cluster {hyperpod.name} applies the update"))
    return steps


def settle_steps(hyperpod: HyperPodActual) -> list[Step]:
    if hyperpod.status != IN_SERVICE:
        return [Wait(f"HyperPod cluster {hyperpod.name} is {IN_SERVICE}")]
    return []


def training_steps(names: Names, actual: Actual, enabled: bool) -> list[Step]:
    if enabled:
        return addon_steps(names, actual, CERT_MANAGER) + addon_steps(names, actual, TRAINING_ADDON)
    status = actual.addons.get(TRAINING_ADDON)
    if status is None:
        return []
    steps: list[Step] = []
    if status != "DELETING":
        steps.append(
            Call(
                "eks",
                "DeleteAddon",
                {"clusterName": names.eks_cluster, "addonName": TRAINING_ADDON},
            )
        )
    steps.append(Wait(f"EKS add-on {TRAINING_ADDON} is removed"))
    return steps


def inference_steps(names: Names, actual: Actual, enabled: bool) -> list[Step]:
    objects = inference_objects()
    if enabled:
        steps = addon_steps(names, actual, CERT_MANAGER)
        for wanted in objects:
            current = actual.object(object_ref(wanted))
            if current is None or (
                is_managed(current, INFERENCE_COMPONENT)
                and object_version(current) != INFERENCE_VERSION
            ):
                steps.append(Apply(wanted))
        return steps
    steps = []
    for kind in INFERENCE_REMOVED_KINDS:
        for wanted in (o for o in objects if o["kind"] == kind):
            current = actual.object(object_ref(wanted))
            if current is None:
                continue
            if not is_managed(current, INFERENCE_COMPONENT):
                raise _invalid(
                    "inference_operator",
                    f"the inference operator's {kind} {wanted['metadata']['name']} was installed"
                    " by another tool",
                    "remove it with the tool that installed it (helm uninstall, say)",
                )
            steps.append(Remove(object_ref(wanted)))
    return steps


def memory_percentage(hyperpod: HyperPodActual, requested: int | None) -> int:
    if requested is not None:
        return requested
    if hyperpod.tiered_mode == "Enable" and hyperpod.tiered_percentage:
        return hyperpod.tiered_percentage
    return DEFAULT_MEMORY_PERCENTAGE


def tiered_steps(
    names: Names, actual: Actual, enabled: bool | None, percentage: int | None
) -> list[Step]:
    hyperpod = _hyperpod(names, actual, "tiered_checkpointing")
    on = hyperpod.tiered_mode == "Enable"
    if enabled is None and not on:
        raise _invalid(
            "tiered_checkpointing.memory_percentage",
            "tiered checkpointing is disabled, so it has no memory share to change",
            "send enabled: true with memory_percentage",
        )
    want = on if enabled is None else enabled
    sa_ref = object_ref(checkpoint_service_account(names))
    if not want:
        steps: list[Step] = []
        if on:
            steps += update_cluster_steps(hyperpod, {"TieredStorageConfig": {"Mode": "Disable"}})
        current = actual.object(sa_ref)
        if current is not None and is_managed(current, CHECKPOINT_COMPONENT):
            steps.append(Remove(sa_ref))
        steps += remove_role_steps(actual, names.checkpoint_role)
        return steps
    if names.oidc_url is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"EKS cluster {names.eks_cluster} reports no OIDC issuer",
            "tiered checkpointing's service account assumes its role through the cluster's"
            " OIDC provider; enable the issuer on the EKS cluster, then retry",
        )
    if names.bucket is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"cluster {names.cluster} has no S3 bucket known to Hyperpilot",
            "checkpoints persist to the cluster's bucket; use a cluster Hyperpilot created",
        )
    if actual.oidc_provider_arn is None:
        raise _invalid(
            "tiered_checkpointing.enabled",
            f"IAM has no OIDC provider for {names.oidc_url}",
            "register the cluster's issuer with IAM (`eksctl utils associate-iam-oidc-provider`)"
            ", then retry",
        )
    steps = role_steps(
        names,
        actual,
        names.checkpoint_role,
        checkpoint_trust(names),
        checkpoint_policy(names),
        f"Managed tiered checkpointing of Hyperpilot cluster {names.cluster}",
    )
    wanted_sa = checkpoint_service_account(names)
    current = actual.object(sa_ref)
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    if current is None or annotations.get(ROLE_ARN_ANNOTATION) != names.role_arn(
        names.checkpoint_role
    ):
        steps.append(Apply(wanted_sa))
    share = memory_percentage(hyperpod, percentage)
    if not on or hyperpod.tiered_percentage != share:
        steps += update_cluster_steps(
            hyperpod,
            {
                "TieredStorageConfig": {
                    "Mode": "Enable",
                    "InstanceMemoryAllocationPercentage": share,
                }
            },
        )
    else:
        steps += settle_steps(hyperpod)
    return steps


def autoscaling_steps(names: Names, actual: Actual, enabled: bool) -> list[Step]:
    hyperpod = _hyperpod(names, actual, "autoscaling")
    on = hyperpod.autoscaling_mode == "Enable"
    class_ref = object_ref(node_class(()))
    pool_ref = object_ref(node_pool())
    if not enabled:
        steps: list[Step] = []
        for ref in (pool_ref, class_ref):
            current = actual.object(ref)
            if current is not None and is_managed(current, AUTOSCALING_COMPONENT):
                steps.append(Remove(ref))
        if on:
            steps += update_cluster_steps(hyperpod, {"AutoScaling": {"Mode": "Disable"}})
        elif hyperpod.status != IN_SERVICE and actual.roles.get(names.autoscaler_role):
            steps += settle_steps(hyperpod)  # the role goes once HyperPod no longer uses it
        return steps + remove_role_steps(actual, names.autoscaler_role)
    if hyperpod.node_recovery not in (None, "Automatic"):
        raise _invalid(
            "autoscaling.enabled",
            f"managed autoscaling needs NodeRecovery Automatic; cluster {hyperpod.name} has"
            f" {hyperpod.node_recovery}",
            "recreate the cluster with node_recovery Automatic",
        )
    if not hyperpod.instance_groups:
        raise _invalid(
            "autoscaling.enabled",
            f"HyperPod cluster {hyperpod.name} has no instance groups to scale",
            "add an instance group (count 0 is fine: autoscaling scales it up from zero)",
        )
    if len(hyperpod.instance_groups) > NODE_CLASS_LIMIT:
        raise _invalid(
            "autoscaling.enabled",
            f"a HyperpodNodeClass names at most {NODE_CLASS_LIMIT} instance groups; the cluster"
            f" has {len(hyperpod.instance_groups)}",
            "remove instance groups autoscaling should not manage",
        )
    others_role = on and hyperpod.cluster_role not in (None, names.role_arn(names.autoscaler_role))
    steps = (
        []
        if others_role
        else role_steps(
            names,
            actual,
            names.autoscaler_role,
            autoscaler_trust(),
            autoscaler_policy(names),
            f"HyperPod managed autoscaling of Hyperpilot cluster {names.cluster}",
        )
    )
    if not on or hyperpod.autoscaler_type != "Karpenter":
        params: dict[str, Any] = {
            "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"},
            "ClusterRole": hyperpod.cluster_role
            if others_role
            else names.role_arn(names.autoscaler_role),
        }
        if hyperpod.provisioning_mode != "Continuous":
            params["NodeProvisioningMode"] = "Continuous"
        steps += update_cluster_steps(hyperpod, params)
    else:
        steps += settle_steps(hyperpod)
    if not actual.karpenter_served():
        steps.append(Wait("HyperPod serves managed Karpenter's HyperpodNodeClass and NodePool"))
    wanted_class = node_class(sorted(hyperpod.instance_groups))
    if not _contains(actual.object(class_ref), {"spec": wanted_class["spec"]}):
        steps.append(Apply(wanted_class))
    wanted_pool = node_pool()
    if not _contains(actual.object(pool_ref), {"spec": wanted_pool["spec"]}):
        steps.append(Apply(wanted_pool))
    return steps


def feature_steps(names: Names, actual: Actual, change: FeaturesChange, feature: str) -> list[Step]:
    """The steps of one feature of the change (none when it is not part of the change)."""
    if feature == "training_operator" and change.training_operator is not None:
        return training_steps(names, actual, change.training_operator)
    if feature == "inference_operator" and change.inference_operator is not None:
        return inference_steps(names, actual, change.inference_operator)
    if feature == "tiered_checkpointing" and change.tiered_checkpointing is not None:
        tiered = change.tiered_checkpointing
        return tiered_steps(names, actual, tiered.enabled, tiered.memory_percentage)
    if feature == "autoscaling" and change.autoscaling is not None:
        return autoscaling_steps(names, actual, change.autoscaling.enabled)
    return []


# ---- the diff and the plan ---------------------------------------------------------------------


def diff(actual: Actual, change: FeaturesChange) -> dict[str, FieldChange]:
    """Only the requested fields whose actual value differs."""
    result: dict[str, FieldChange] = {}

    def compare(key: str, now: Any, wanted: Any) -> None:
        if wanted is not None and now != wanted:
            result[key] = FieldChange(actual=now, requested=wanted)

    compare("training_operator", training_enabled(actual), change.training_operator)
    compare("inference_operator", inference_enabled(actual), change.inference_operator)
    if change.tiered_checkpointing is not None:
        on = tiered_enabled(actual)
        compare("tiered_checkpointing.enabled", on, change.tiered_checkpointing.enabled)
        hyperpod = actual.hyperpod
        share = hyperpod.tiered_percentage if hyperpod is not None and on else None
        compare(
            "tiered_checkpointing.memory_percentage",
            share,
            change.tiered_checkpointing.memory_percentage
            if change.tiered_checkpointing.memory_percentage is not None
            else (
                DEFAULT_MEMORY_PERCENTAGE
                if change.tiered_checkpointing.enabled and not on
                else None
            ),
        )
    if change.autoscaling is not None:
        compare("autoscaling.enabled", autoscaling_enabled(actual), change.autoscaling.enabled)
    return result


def planned(steps: Sequence[Step]) -> tuple[list[PlannedCall], list[PlannedObject], list[str]]:
    calls: list[PlannedCall] = []
    objects: list[PlannedObject] = []
    notes: list[str] = []
    for step in steps:
        if isinstance(step, Call):
            calls.append(
                PlannedCall(service=step.service, operation=step.operation, params=step.params)
            )
        elif isinstance(step, Apply):
            meta = step.obj["metadata"]
            objects.append(
                PlannedObject(
                    action="apply",
                    api_version=step.obj["apiVersion"],
                    kind=step.obj["kind"],
                    name=meta["name"],
                    namespace=meta.get("namespace"),
                    body=step.obj,
                )
            )
        elif isinstance(step, Remove):
            api_version, kind, name, namespace = step.ref
            objects.append(
                PlannedObject(
                    action="delete",
                    api_version=api_version,
                    kind=kind,
                    name=name,
                    namespace=namespace,
                )
            )
        else:
            notes.append(f"waits until {step.reason}")
    return calls, objects, notes


def plan(names: Names, actual: Actual, change: FeaturesChange) -> Plan:
    """The dry run: the diff and every step each requested feature would take, in order."""
    calls: list[PlannedCall] = []
    objects: list[PlannedObject] = []
    notes: list[str] = []
    any_step = False
    for feature in FEATURES:
        steps = feature_steps(names, actual, change, feature)
        any_step = any_step or bool(steps)
        feature_calls, feature_objects, feature_notes = planned(steps)
        calls += feature_calls
        objects += feature_objects
        notes += [f"{feature}: {n}" for n in feature_notes]
    if change.autoscaling is not None:
        notes.append(f"autoscaling scope: {AUTOSCALING_SCOPE}")
    return Plan(
        command="UpdateFeatures",
        target=f"{names.cluster}/features",
        noop=not any_step,
        diff=diff(actual, change),
        calls=calls,
        objects=objects,
        notes=notes,
    )


def until_wait(steps: Sequence[Step]) -> tuple[list[Step], Wait | None]:
    """The steps to run now (those before the first wait) and that wait."""
    for index, step in enumerate(steps):
        if isinstance(step, Wait):
            return list(steps[:index]), step
    return list(steps), None


# ---- what the panel shows ----------------------------------------------------------------------


def describe(names: Names, actual: Actual) -> dict[str, Any]:
    """The actual state of every feature, as read from AWS and the cluster."""
    hyperpod = actual.hyperpod
    sa = actual.object(object_ref(checkpoint_service_account(names)))
    annotations = ((sa or {}).get("metadata") or {}).get("annotations") or {}
    checkpoint_role = actual.roles.get(names.checkpoint_role)
    autoscaler_role = actual.roles.get(names.autoscaler_role)
    controller = next(o for o in inference_objects() if o["kind"] == "Deployment")
    inference = actual.object(object_ref(controller))
    return {
        "cluster": names.cluster,
        "training_operator": {
            "enabled": training_enabled(actual),
            "addon": TRAINING_ADDON,
            "status": actual.addons.get(TRAINING_ADDON),
            "requires": {CERT_MANAGER: actual.addons.get(CERT_MANAGER)},
        },
        "inference_operator": {
            "enabled": inference_enabled(actual),
            "namespace": INFERENCE_NAMESPACE,
            "version": object_version(inference),
            "installed_by_hyperpilot": inference is not None
            and is_managed(inference, INFERENCE_COMPONENT),
            "requires": {CERT_MANAGER: actual.addons.get(CERT_MANAGER)},
        },
        "tiered_checkpointing": {
            "enabled": tiered_enabled(actual),
            "memory_percentage": hyperpod.tiered_percentage
            if hyperpod is not None and tiered_enabled(actual)
            else None,
            "identity": {
                "role_name": names.checkpoint_role,
                "role_arn": checkpoint_role.arn if checkpoint_role else None,
                "oidc_provider_arn": actual.oidc_provider_arn,
                "service_account": f"{CHECKPOINT_NAMESPACE}/{CHECKPOINT_ACCOUNT}"
                if sa is not None
                else None,
                "role_arn_annotation": annotations.get(ROLE_ARN_ANNOTATION),
            },
        },
        "autoscaling": {
            "enabled": autoscaling_enabled(actual),
            "autoscaler_type": hyperpod.autoscaler_type if hyperpod else None,
            "status": hyperpod.autoscaling_status if hyperpod else None,
            "cluster_role": hyperpod.cluster_role if hyperpod else None,
            "cluster_role_made_by_hyperpilot": autoscaler_role is not None
            and hyperpod is not None
            and hyperpod.cluster_role == autoscaler_role.arn,
            "node_class": _summary(actual.object(object_ref(node_class(())))),
            "node_pool": _summary(actual.object(object_ref(node_pool()))),
            "instance_groups": list(hyperpod.instance_groups) if hyperpod else [],
            "scope": AUTOSCALING_SCOPE,
        },
    }


def _summary(found: KubeObject | None) -> dict[str, Any] | None:
    if found is None:
        return None
    conditions = (found.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    return {"name": found["metadata"]["name"], "spec": found.get("spec"), "ready": ready}


# ---- the workflow ------------------------------------------------------------------------------


class FeaturePort(Protocol):
    """Reads of actual state and the execution of single steps (adapters/features.py)."""

    async def names(self, command: UpdateFeatures) -> Names: ...

    async def observe(self, names: Names) -> Actual: ...

    async def execute(self, names: Names, step: Call | Apply | Remove) -> None: ...


async def advance(
    port: FeaturePort, command: UpdateFeatures, feature: str
) -> tuple[Actual, list[Step], list[Step], Wait | None]:
    """Read, decide, and run the steps before the first wait: one level-triggered pass."""
    names = await port.names(command)
    actual = await port.observe(names)
    steps = feature_steps(names, actual, command.changes, feature)
    now, wait = until_wait(steps)
    for step in now:
        assert not isinstance(step, Wait)
        await port.execute(names, step)
    return actual, steps, now, wait


def feature_stage(port: FeaturePort, feature: str, needs: tuple[str, ...] = ()) -> Stage:
    async def run(ctx: StageContext[UpdateFeatures]) -> Done | Submitted:
        command = ctx.cmd
        actual, steps, now, wait = await advance(port, command, feature)
        found = {k: v.model_dump(mode="json") for k, v in diff(actual, command.changes).items()}
        changed = {k: v for k, v in found.items() if k.split(".")[0] == feature}
        if not steps:
            return Done({"diff": changed}, noop=True)
        return Submitted(
            f"{command.cluster}/features/{feature}",
            {"diff": changed, "steps": [_label(s) for s in now], "waiting": _reason(wait)},
        )

    async def poll(ctx: StageContext[UpdateFeatures]) -> Done | Pending:
        command = ctx.cmd
        _, steps, now, wait = await advance(port, command, feature)
        if not steps:
            return Done()
        done = ", ".join(_label(s) for s in now)
        return Pending("; ".join(p for p in (done, _reason(wait)) if p) or "applying")

    return Stage(feature, TITLES[feature], run, poll, needs=needs)


TITLES = {
    "training_operator": "Training operator (cert-manager first)",
    "inference_operator": "Inference operator (cert-manager first)",
    "tiered_checkpointing": "Managed tiered checkpointing and its identity chain",
    "autoscaling": "Managed autoscaling (Karpenter) over the instance groups",
}


def _label(step: Step) -> str:
    if isinstance(step, Call):
        return f"{step.service}:{step.operation}"
    if isinstance(step, Apply):
        return f"apply {step.obj['kind']} {step.obj['metadata']['name']}"
    if isinstance(step, Remove):
        return f"delete {step.ref[1]} {step.ref[2]}"
    return f"wait: {step.reason}"


def _reason(wait: Wait | None) -> str | None:
    return f"waiting until {wait.reason}" if wait is not None else None


def update_features_workflow(port: FeaturePort) -> Workflow[Any]:
    """One stage per feature; the two that update the HyperPod cluster run one after the other
    (HyperPod takes one update at a time)."""
    return Workflow(
        kind=UpdateFeatures.kind(),
        domain=UpdateFeatures.domain,
        command=UpdateFeatures,
        stages=(
            feature_stage(port, "training_operator"),
            feature_stage(port, "inference_operator"),
            feature_stage(port, "tiered_checkpointing"),
            feature_stage(port, "autoscaling", needs=("tiered_checkpointing",)),
        ),
        on_finish=features_updated,
    )


async def features_updated(conn: object, operation_id: object, outcome: Outcome) -> list[Event]:
    if outcome.status != "succeeded":
        return []
    command = UpdateFeatures.from_payload(outcome.command)
    changed: dict[str, Any] = {}
    for feature in FEATURES:
        changed.update((outcome.outputs.get(feature) or {}).get("diff") or {})
    return [FeaturesUpdated(cluster=command.cluster, changed=changed)]
