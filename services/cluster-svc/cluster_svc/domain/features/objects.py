"""What a cluster's managed features are called (the fixed names and versions, and `Names`,
derived from the cluster) and what they make: the trust and permission policies and the
Kubernetes objects."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cluster_svc.domain.components.addons import eks_addons
from cluster_svc.domain.components.base import ClusterAccess, KubeObject, labelled, object_ref
from cluster_svc.domain.components.objects import TOLERATE_ALL, container, deployment
from cluster_svc.domain.components.objects import namespace as namespace_object
from cluster_svc.domain.components.objects import service_account as service_account_object
from cluster_svc.domain.components.schema import OPEN, crd
from cluster_svc.domain.features.hami import hami_refs
from cluster_svc.domain.identity import role_name
from shared.contracts.features import NodePoolSpec

FEATURES = (
    "training_operator",
    "inference_operator",
    "tiered_checkpointing",
    "autoscaling",
    "spaces",
    "observability",
    "container_insights",
    "hami",
)

CERT_MANAGER = "cert-manager"

TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"

# SageMaker Spaces (IDEs and notebooks): an EKS add-on whose jupyter-k8s operator serves
# workspace.jupyter.org/v1alpha1; the HyperPod CLI's space template v1.1 needs 0.1.6 or later
SPACES_ADDON = "amazon-sagemaker-spaces"

SPACES_VERSION = "v0.1.6-eksbuild.1"

ADDON_VERSIONS = {c.name: c.version for c in eks_addons()} | {SPACES_ADDON: SPACES_VERSION}

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


def node_class(instance_groups: Sequence[str], name: str = KARPENTER_OBJECTS) -> KubeObject:
    body = {
        "apiVersion": NODE_CLASS_API,
        "kind": "HyperpodNodeClass",
        "metadata": {"name": name},
        "spec": {"instanceGroups": list(instance_groups)},
    }
    return labelled(body, AUTOSCALING_COMPONENT, KARPENTER_VERSION)


def node_pool(pool: NodePoolSpec | None = None) -> KubeObject:
    """A NodePool over its HyperpodNodeClass of the same name: the default one (`hyperpilot`,
    over every group), or a declared pool with its weight, GPU limit and consolidation."""
    name = pool.name if pool else KARPENTER_OBJECTS
    spec: KubeObject = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.sagemaker.amazonaws.com",
                    "kind": "HyperpodNodeClass",
                    "name": name,
                },
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "Exists",
                    }
                ],
            }
        },
        "disruption": {
            "consolidationPolicy": pool.consolidation if pool else "WhenEmpty",
            "consolidateAfter": pool.consolidate_after if pool else "5m",
        },
    }
    if pool is not None and pool.weight is not None:
        spec["weight"] = pool.weight
    if pool is not None and pool.gpu_limit is not None:
        spec["limits"] = {"nvidia.com/gpu": str(pool.gpu_limit)}
    body = {
        "apiVersion": NODE_POOL_API,
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
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
    refs += hami_refs()
    return refs
