"""What EKS offers: Kubernetes versions, managed add-ons and their versions, access policies."""

from __future__ import annotations

import json
from typing import Any

KUBERNETES_VERSIONS = ["1.30", "1.31", "1.32", "1.33"]
DEFAULT_VERSION = "1.33"

# add-on name -> (type, publisher, [versions newest first])
ADDONS: dict[str, tuple[str, str, list[str]]] = {
    "vpc-cni": ("networking", "eks", ["v1.20.0-eksbuild.1", "v1.19.6-eksbuild.1"]),
    "coredns": ("networking", "eks", ["v1.12.2-eksbuild.4", "v1.11.4-eksbuild.14"]),
    "kube-proxy": ("networking", "eks", ["v1.33.0-eksbuild.2", "v1.32.3-eksbuild.7"]),
    "eks-pod-identity-agent": ("security", "eks", ["v1.3.7-eksbuild.2", "v1.3.5-eksbuild.2"]),
    "aws-ebs-csi-driver": ("storage", "eks", ["v1.45.0-eksbuild.2", "v1.44.0-eksbuild.1"]),
    "aws-fsx-csi-driver": ("storage", "eks", ["v1.5.0-eksbuild.1", "v1.4.0-eksbuild.1"]),
    "aws-mountpoint-s3-csi-driver": (
        "storage",
        "eks",
        ["v1.15.0-eksbuild.1", "v1.14.1-eksbuild.1"],
    ),
    "amazon-cloudwatch-observability": (
        "observability",
        "eks",
        ["v4.1.0-eksbuild.1", "v4.0.1-eksbuild.1"],
    ),
    "metrics-server": ("observability", "eks", ["v0.7.2-eksbuild.4", "v0.7.2-eksbuild.3"]),
    "cert-manager": ("security", "eks", ["v1.18.2-eksbuild.2", "v1.17.2-eksbuild.1"]),
    "amazon-sagemaker-hyperpod-taskgovernance": (
        "machine-learning",
        "eks",
        ["v1.2.0-eksbuild.1", "v1.1.3-eksbuild.1"],
    ),
    "amazon-sagemaker-hyperpod-observability": (
        "observability",
        "eks",
        ["v1.0.2-eksbuild.1", "v1.0.1-eksbuild.1"],
    ),
    "amazon-sagemaker-hyperpod-training-operator": (
        "machine-learning",
        "eks",
        ["v1.1.0-eksbuild.1", "v1.0.1-eksbuild.1"],
    ),
    # SageMaker Spaces (IDEs and notebooks on HyperPod EKS clusters); the HyperPod CLI's space
    # template v1.1 needs add-on 0.1.6 or later (hyperpod_space_template MIN_ADDON_VERSION)
    "amazon-sagemaker-spaces": ("machine-learning", "eks", ["v0.1.6-eksbuild.1"]),
}

# What an add-on needs installed first. The HyperPod training operator's webhook certificates
# are cert-manager resources: "Install the cert-manager add-on ... before installing the
# training operator" (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-install.html).
ADDON_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "amazon-sagemaker-hyperpod-training-operator": ("cert-manager",),
    # the jupyter-k8s operator's admission webhooks are served with cert-manager certificates
    "amazon-sagemaker-spaces": ("cert-manager",),
}

_OBJECT: dict[str, Any] = {"type": "object"}
_STRINGS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
# The members most EKS add-on configuration schemas share (DescribeAddonConfiguration returns
# one JSON schema per add-on version; each names its keys and forbids the rest).
_COMMON: dict[str, Any] = {
    "affinity": _OBJECT,
    "nodeSelector": _STRINGS,
    "podAnnotations": _STRINGS,
    "podLabels": _STRINGS,
    "priorityClassName": {"type": "string"},
    "replicaCount": {"type": "integer", "minimum": 0},
    "resources": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"limits": _STRINGS, "requests": _STRINGS},
    },
    "tolerations": {"type": "array", "items": _OBJECT},
}
_OWN: dict[str, dict[str, Any]] = {
    "vpc-cni": {
        "env": _STRINGS,
        "init": _OBJECT,
        "nodeAgent": _OBJECT,
        "enableNetworkPolicy": {"type": "string", "enum": ["true", "false"]},
        "enableWindowsIpam": {"type": "string", "enum": ["true", "false"]},
    },
    "coredns": {
        "autoScaling": _OBJECT,
        "corefile": {"type": "string"},
        "podDisruptionBudget": _OBJECT,
        "topologySpreadConstraints": {"type": "array", "items": _OBJECT},
    },
    "aws-ebs-csi-driver": {"controller": _OBJECT, "node": _OBJECT, "sidecars": _OBJECT},
    "aws-fsx-csi-driver": {"controller": _OBJECT, "node": _OBJECT},
    "amazon-cloudwatch-observability": {
        "agent": _OBJECT,
        "containerLogs": _OBJECT,
        "manager": _OBJECT,
    },
    "cert-manager": {"cainjector": _OBJECT, "webhook": _OBJECT},
}


def addon_configuration_schema(addon: str) -> dict[str, Any]:
    """The JSON schema `configurationValues` of `addon` must satisfy."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {**_COMMON, **_OWN.get(addon, {})},
    }


def addon_configuration_schema_text(addon: str) -> str:
    return json.dumps(addon_configuration_schema(addon), separators=(",", ":"))


ACCESS_POLICIES = [
    "AmazonEKSAdminPolicy",
    "AmazonEKSAdminViewPolicy",
    "AmazonEKSClusterAdminPolicy",
    "AmazonEKSEditPolicy",
    "AmazonEKSViewPolicy",
    "AmazonSagemakerHyperpodClusterPolicy",
    "AmazonSagemakerHyperpodControllerPolicy",
    "AmazonSagemakerHyperpodSystemNamespacePolicy",
]


def access_policy_arn(name: str) -> str:
    return f"arn:aws:eks::aws:cluster-access-policy/{name}"


def access_policy_arns() -> list[str]:
    return [access_policy_arn(name) for name in ACCESS_POLICIES]


def addon_versions(addon: str, kubernetes_version: str | None = None) -> list[dict[str, Any]]:
    """DescribeAddonVersions' `addonVersions` for one add-on: the newest is the default."""
    _, _, versions = ADDONS[addon]
    wanted = [kubernetes_version] if kubernetes_version else KUBERNETES_VERSIONS
    return [
        {
            "addonVersion": version,
            "architecture": ["amd64", "arm64"],
            "computeTypes": ["ec2", "hyperpod"],
            "compatibilities": [
                {"clusterVersion": v, "platformVersions": ["*"], "defaultVersion": i == 0}
                for v in wanted
            ],
            "requiresConfiguration": False,
            "requiresIamPermissions": addon
            in ("aws-ebs-csi-driver", "aws-fsx-csi-driver", "vpc-cni"),
        }
        for i, version in enumerate(versions)
    ]


def default_addon_version(addon: str) -> str:
    return ADDONS[addon][2][0]
