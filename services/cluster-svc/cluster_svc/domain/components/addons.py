"""The EKS managed add-ons of the dependency set. EKS installs, upgrades and reports on these;
Hyperpilot only asks for a version and reads the status back."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component


def addon(name: str, version: str, namespace: str, requires: tuple[str, ...] = ()) -> Component:
    return Component(
        name=name, kind="eks-addon", version=version, namespace=namespace, requires=requires
    )


def eks_addons() -> list[Component]:
    return [
        addon("cert-manager", "v1.18.2-eksbuild.2", "cert-manager"),
        addon("aws-mountpoint-s3-csi-driver", "v1.15.0-eksbuild.1", "kube-system"),
        addon("aws-fsx-csi-driver", "v1.5.0-eksbuild.1", "kube-system"),
        addon(
            "amazon-sagemaker-hyperpod-training-operator",
            "v1.1.0-eksbuild.1",
            "aws-hyperpod",
            requires=("cert-manager",),
        ),
        addon("amazon-cloudwatch-observability", "v4.1.0-eksbuild.1", "amazon-cloudwatch"),
    ]
