"""Installing an operator or add-on the way the product's installers do: its CRDs, its
controller Deployment or DaemonSet, its CSIDriver. Operators act only after this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.k8s.errors import ApiError
from sim.k8s.operators.crds import ALL_CRDS

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

# component -> (namespace, workload kind, workload name, image, CRDs, CSI driver)
COMPONENTS: dict[str, tuple[str, str, str, str, tuple[str, ...], str | None]] = {
    "hyperpod-training-operator": (
        "aws-hyperpod",
        "Deployment",
        "hp-training-operator-controller-manager",
        "public.ecr.aws/sagemaker/hyperpod-training-operator:v1.2.0",
        ("hyperpodpytorchjobs.sagemaker.amazonaws.com",),
        None,
    ),
    "hyperpod-inference-operator": (
        "hyperpod-inference-system",
        "Deployment",
        "hyperpod-inference-operator-controller-manager",
        "public.ecr.aws/sagemaker/hyperpod-inference-operator:v3.2",
        (
            "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
            "jumpstartmodels.inference.sagemaker.aws.amazon.com",
        ),
        None,
    ),
    "kuberay-operator": (
        "kuberay",
        "Deployment",
        "kuberay-operator",
        "quay.io/kuberay/operator:v1.3.0",
        ("rayclusters.ray.io", "rayjobs.ray.io"),
        None,
    ),
    "keda": (
        "keda",
        "Deployment",
        "keda-operator",
        "ghcr.io/kedacore/keda:2.17.1",
        ("scaledobjects.keda.sh",),
        None,
    ),
    "karpenter": (
        "",
        "",
        "",
        "",
        ("hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com", "nodepools.karpenter.sh"),
        None,
    ),
    "aws-mountpoint-s3-csi-driver": (
        "kube-system",
        "DaemonSet",
        "s3-csi-node",
        "public.ecr.aws/mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver:v1.14.1",
        (),
        "s3.csi.aws.com",
    ),
    "aws-fsx-csi-driver": (
        "kube-system",
        "Deployment",
        "fsx-csi-controller",
        "public.ecr.aws/fsx-csi-driver/aws-fsx-csi-driver:v1.11.0",
        (),
        "fsx.csi.aws.com",
    ),
}


def _ensure(server: ApiServer, obj: dict[str, Any]) -> None:
    try:
        server.apply(obj)
    except ApiError as exc:
        if exc.code != 409:
            raise


def install(server: ApiServer, component: str) -> None:
    try:
        namespace, kind, name, image, crds, driver = COMPONENTS[component]
    except KeyError:
        raise ValueError(f"unknown component {component!r}: one of {sorted(COMPONENTS)}") from None
    for crd in crds:
        _ensure(server, ALL_CRDS[crd])
    if namespace and server.store.get("namespaces", "", namespace) is None:
        _ensure(server, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    if kind:
        labels = {"app.kubernetes.io/name": name}
        spec: dict[str, Any] = {
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
            spec["replicas"] = 1
        _ensure(
            server,
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": spec,
            },
        )
    if driver:
        _ensure(
            server,
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": driver},
                "spec": {
                    "attachRequired": False,
                    "podInfoOnMount": driver == "s3.csi.aws.com",
                    "volumeLifecycleModes": ["Persistent"],
                },
            },
        )
