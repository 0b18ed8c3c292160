"""The managed features' fixed names and versions, and `Names`: what one cluster's features
are called in AWS and Kubernetes."""

from __future__ import annotations

from dataclasses import dataclass

from cluster_svc.domain.components.addons import eks_addons
from cluster_svc.domain.components.base import ClusterAccess
from cluster_svc.domain.identity import role_name

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
