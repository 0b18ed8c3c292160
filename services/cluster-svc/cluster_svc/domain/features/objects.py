"""The documents (trust and permission policies) and Kubernetes objects the features make."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster_svc.domain.components.base import KubeObject, labelled, object_ref
from cluster_svc.domain.components.objects import TOLERATE_ALL, container, deployment
from cluster_svc.domain.components.objects import namespace as namespace_object
from cluster_svc.domain.components.objects import service_account as service_account_object
from cluster_svc.domain.components.schema import OPEN, crd
from cluster_svc.domain.features.names import (
    AUTOSCALING_COMPONENT,
    CHECKPOINT_ACCOUNT,
    CHECKPOINT_COMPONENT,
    CHECKPOINT_NAMESPACE,
    CRD_API,
    INFERENCE_ACCOUNT,
    INFERENCE_COMPONENT,
    INFERENCE_CONTROLLER,
    INFERENCE_IMAGE,
    INFERENCE_NAMESPACE,
    INFERENCE_VERSION,
    KARPENTER_CRDS,
    KARPENTER_OBJECTS,
    KARPENTER_VERSION,
    NODE_CLASS_API,
    NODE_POOL_API,
    ROLE_ARN_ANNOTATION,
    STS_AUDIENCE,
    VERSION,
    Names,
    Ref,
)
from cluster_svc.domain.identity import CLUSTER_TAG, MANAGED_BY


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
