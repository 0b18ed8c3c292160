"""Device plugins from the HyperPod dependency chart: they advertise `nvidia.com/gpu` and
`vpc.amazonaws.com/efa` on HyperPod nodes. DaemonSets in kube-system, limited by node affinity
to the instance types that have the devices, so they wait harmlessly until such nodes join."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.hyperpod_chart import NVIDIA_INSTANCE_TYPES
from cluster_svc.domain.components.objects import (
    container,
    daemon_set,
    host_path,
    instance_type_affinity,
    mount,
)

NAMESPACE = "kube-system"
NVIDIA_CHART_VERSION = "0.16.1"
EFA_CHART_VERSION = "0.5.20"

EFA_INSTANCE_TYPES = [
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge",
    "ml.p6e-gb200.36xlarge",
    "ml.g5.8xlarge",
    "ml.g5.12xlarge",
    "ml.g5.16xlarge",
    "ml.g5.24xlarge",
    "ml.g5.48xlarge",
    "ml.g6.8xlarge",
    "ml.g6.12xlarge",
    "ml.g6.16xlarge",
    "ml.g6.24xlarge",
    "ml.g6.48xlarge",
    "ml.g6e.8xlarge",
    "ml.g6e.12xlarge",
    "ml.g6e.16xlarge",
    "ml.g6e.24xlarge",
    "ml.g6e.48xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    "ml.trn2.48xlarge",
]

DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


def nvidia_device_plugin() -> Component:
    return Component(
        name="nvidia-device-plugin",
        kind="manifests",
        version=NVIDIA_CHART_VERSION,
        namespace=NAMESPACE,
        manifests=(
            daemon_set(
                "nvidia-device-plugin",
                NAMESPACE,
                [
                    container(
                        "nvidia-device-plugin-ctr",
                        f"nvcr.io/nvidia/k8s-device-plugin:v{NVIDIA_CHART_VERSION}",
                        env=[{"name": "FAIL_ON_INIT_ERROR", "value": "false"}],
                        mounts=[mount("device-plugin", DEVICE_PLUGIN_DIR)],
                        security={
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    )
                ],
                affinity=instance_type_affinity(NVIDIA_INSTANCE_TYPES),
                tolerations=[
                    {"key": "CriticalAddonsOnly", "operator": "Exists"},
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Exists"},
                ],
                volumes=[host_path("device-plugin", DEVICE_PLUGIN_DIR)],
                priority_class="system-node-critical",
            ),
        ),
    )


def efa_device_plugin() -> Component:
    return Component(
        name="aws-efa-k8s-device-plugin",
        kind="manifests",
        version=EFA_CHART_VERSION,
        namespace=NAMESPACE,
        manifests=(
            daemon_set(
                "aws-efa-k8s-device-plugin",
                NAMESPACE,
                [
                    container(
                        "aws-efa-k8s-device-plugin",
                        "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/"
                        f"aws-efa-k8s-device-plugin:v{EFA_CHART_VERSION}",
                        requests={"cpu": "10m", "memory": "20Mi"},
                        mounts=[
                            mount("device-plugin", DEVICE_PLUGIN_DIR),
                            mount("infiniband-volume", "/dev/infiniband/"),
                        ],
                        security={
                            "privileged": True,
                            "allowPrivilegeEscalation": True,
                            "runAsUser": 0,
                            "runAsNonRoot": False,
                        },
                    )
                ],
                affinity=instance_type_affinity(EFA_INSTANCE_TYPES),
                tolerations=[{"operator": "Exists"}],
                volumes=[
                    host_path("device-plugin", DEVICE_PLUGIN_DIR),
                    host_path("infiniband-volume", "/dev/infiniband/"),
                ],
                priority_class="system-node-critical",
                host_network=True,
            ),
        ),
    )
