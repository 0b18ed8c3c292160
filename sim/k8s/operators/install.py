"""Installing an operator or add-on the way the product's installers do: its CRDs, its
controller Deployment or DaemonSet, its CSIDriver. Operators act only after this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.k8s.errors import ApiError
from sim.k8s.operators.crds import ALL_CRDS
from sim.k8s.operators.kueue_crds import KUEUE_CRDS
from sim.k8s.operators.spaces import SPACES_CRDS

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


@dataclass(frozen=True)
class Component:
    crds: tuple[str, ...] = ()
    workloads: tuple[tuple[str, str, str, str], ...] = ()  # (namespace, kind, name, image)
    csi_driver: str | None = None


ECR = "public.ecr.aws"
COMPONENTS: dict[str, Component] = {
    "hyperpod-training-operator": Component(
        ("hyperpodpytorchjobs.sagemaker.amazonaws.com",),
        (
            (
                "aws-hyperpod",
                "Deployment",
                "hp-training-operator-controller-manager",
                f"{ECR}/sagemaker/hyperpod-training-operator:v1.2.0",
            ),
        ),
    ),
    "hyperpod-inference-operator": Component(
        (
            "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
            "jumpstartmodels.inference.sagemaker.aws.amazon.com",
        ),
        (
            (
                "hyperpod-inference-system",
                "Deployment",
                "hyperpod-inference-operator-controller-manager",
                f"{ECR}/sagemaker/hyperpod-inference-operator:v3.2",
            ),
        ),
    ),
    "kuberay-operator": Component(
        ("rayclusters.ray.io", "rayjobs.ray.io"),
        (("kuberay", "Deployment", "kuberay-operator", "quay.io/kuberay/operator:v1.3.0"),),
    ),
    "keda": Component(
        ("scaledobjects.keda.sh",),
        (("keda", "Deployment", "keda-operator", "ghcr.io/kedacore/keda:2.17.1"),),
    ),
    "karpenter": Component(
        ("hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com", "nodepools.karpenter.sh")
    ),
    "aws-mountpoint-s3-csi-driver": Component(
        workloads=(
            (
                "kube-system",
                "DaemonSet",
                "s3-csi-node",
                f"{ECR}/mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver:v1.14.1",
            ),
        ),
        csi_driver="s3.csi.aws.com",
    ),
    "aws-fsx-csi-driver": Component(
        workloads=(
            (
                "kube-system",
                "Deployment",
                "fsx-csi-controller",
                f"{ECR}/fsx-csi-driver/aws-fsx-csi-driver:v1.11.0",
            ),
        ),
        csi_driver="fsx.csi.aws.com",
    ),
    "cert-manager": Component(
        workloads=(
            (
                "cert-manager",
                "Deployment",
                "cert-manager",
                "quay.io/jetstack/cert-manager-controller:v1.18.2",
            ),
            (
                "cert-manager",
                "Deployment",
                "cert-manager-webhook",
                "quay.io/jetstack/cert-manager-webhook:v1.18.2",
            ),
        )
    ),
    "aws-load-balancer-controller": Component(
        workloads=(
            (
                "kube-system",
                "Deployment",
                "aws-load-balancer-controller",
                f"{ECR}/eks/aws-load-balancer-controller:v2.13.2",
            ),
        )
    ),
    "amazon-cloudwatch-observability": Component(
        workloads=(
            (
                "amazon-cloudwatch",
                "DaemonSet",
                "cloudwatch-agent",
                f"{ECR}/cloudwatch-agent/cloudwatch-agent:1.300056",
            ),
        )
    ),
    "metrics-server": Component(
        workloads=(
            (
                "kube-system",
                "Deployment",
                "metrics-server",
                "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
            ),
        )
    ),
    "aws-ebs-csi-driver": Component(
        workloads=(
            (
                "kube-system",
                "Deployment",
                "ebs-csi-controller",
                f"{ECR}/ebs-csi-driver/aws-ebs-csi-driver:v1.41.0",
            ),
        ),
        csi_driver="ebs.csi.aws.com",
    ),
    # the task-governance add-on runs Kueue (its CRDs and controller manager)
    "hyperpod-task-governance": Component(
        tuple(KUEUE_CRDS),
        (
            (
                "kueue-system",
                "Deployment",
                "kueue-controller-manager",
                "registry.k8s.io/kueue/kueue:v0.12.3",
            ),
        ),
    ),
    # SageMaker Spaces: the jupyter-k8s operator (github.com/jupyter-infra/jupyter-k8s)
    "sagemaker-spaces": Component(
        tuple(SPACES_CRDS),
        (
            (
                "jupyter-k8s-system",
                "Deployment",
                "jupyter-k8s-controller-manager",
                f"{ECR}/sagemaker/jupyter-k8s-controller:v0.1.6",
            ),
        ),
    ),
    "hyperpod-observability": Component(
        workloads=(
            (
                "hyperpod-observability",
                "Deployment",
                "hyperpod-observability-collector",
                f"{ECR}/sagemaker/hyperpod-observability:v1.0",
            ),
            # the exporters its collector scrapes on every node (sim.k8s.telemetry answers them)
            (
                "hyperpod-observability",
                "DaemonSet",
                "dcgm-exporter",
                "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
            ),
            (
                "hyperpod-observability",
                "DaemonSet",
                "efa-exporter",
                f"{ECR}/sagemaker/hyperpod-efa-exporter:v1.0",
            ),
        )
    ),
    # the HyperPod dependency Helm chart's default-enabled components
    "hyperpod-dependencies": Component(
        workloads=(
            (
                "kube-system",
                "DaemonSet",
                "nvidia-device-plugin-daemonset",
                "nvcr.io/nvidia/k8s-device-plugin:v0.16.1",
            ),
            (
                "kube-system",
                "DaemonSet",
                "aws-efa-k8s-device-plugin-daemonset",
                f"{ECR}/eks/aws-efa-k8s-device-plugin:v0.5.20",
            ),
            (
                "kube-system",
                "DaemonSet",
                "neuron-device-plugin-daemonset",
                f"{ECR}/neuron/neuron-device-plugin:2.19.16",
            ),
            (
                "aws-hyperpod",
                "DaemonSet",
                "health-monitoring-agent",
                f"{ECR}/sagemaker/health-monitoring-agent:1.0",
            ),
            (
                "kubeflow",
                "Deployment",
                "training-operator",
                "kubeflow/training-operator:v1-855e096",
            ),
            ("kube-system", "Deployment", "mpi-operator", "mpioperator/mpi-operator:0.5"),
        )
    ),
}


# EKS add-on names (as CreateAddon takes them) -> the component that add-on installs
ADDON_COMPONENTS = {
    "amazon-sagemaker-hyperpod-training-operator": "hyperpod-training-operator",
    "amazon-sagemaker-hyperpod-inference": "hyperpod-inference-operator",
    "aws-fsx-csi-driver": "aws-fsx-csi-driver",
    "aws-mountpoint-s3-csi-driver": "aws-mountpoint-s3-csi-driver",
    "cert-manager": "cert-manager",
    "amazon-cloudwatch-observability": "amazon-cloudwatch-observability",
    "metrics-server": "metrics-server",
    "aws-ebs-csi-driver": "aws-ebs-csi-driver",
    "amazon-sagemaker-hyperpod-taskgovernance": "hyperpod-task-governance",
    "amazon-sagemaker-hyperpod-observability": "hyperpod-observability",
    "amazon-sagemaker-spaces": "sagemaker-spaces",
}
# add-ons every EKS cluster already runs (bootstrap creates their workloads)
BUILTIN_ADDONS = frozenset({"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"})


def _ensure(server: ApiServer, obj: dict[str, Any]) -> None:
    try:
        server.apply(obj)
    except ApiError as exc:
        if exc.code != 409:
            raise


def install(server: ApiServer, component: str) -> None:
    """Install a component by its name here or by its EKS add-on name."""
    if component in BUILTIN_ADDONS:
        return
    try:
        spec = COMPONENTS[ADDON_COMPONENTS.get(component, component)]
    except KeyError:
        known = sorted(set(COMPONENTS) | set(ADDON_COMPONENTS) | BUILTIN_ADDONS)
        raise ValueError(f"unknown component {component!r}: one of {known}") from None
    for crd in spec.crds:
        _ensure(server, ALL_CRDS.get(crd) or SPACES_CRDS.get(crd) or KUEUE_CRDS[crd])
    for namespace, kind, name, image in spec.workloads:
        if server.store.get("namespaces", "", namespace) is None:
            _ensure(
                server, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        labels = {"app.kubernetes.io/name": name}
        workload: dict[str, Any] = {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "manager", "image": image}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        }
        if kind == "Deployment":
            workload["replicas"] = 1
        _ensure(
            server,
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": workload,
            },
        )
    if spec.csi_driver:
        _ensure(
            server,
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": spec.csi_driver},
                "spec": {
                    "attachRequired": False,
                    "podInfoOnMount": spec.csi_driver == "s3.csi.aws.com",
                    "volumeLifecycleModes": ["Persistent"],
                },
            },
        )
