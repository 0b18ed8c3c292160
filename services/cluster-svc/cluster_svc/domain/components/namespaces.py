"""The namespaces the other components and HyperPod workloads live in."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.objects import namespace

VERSION = "1.0.0"
NAMES = (
    "aws-hyperpod",
    "hyperpod",
    "kubeflow",
    "ray-system",
    "keda",
    "hyperpod-inference-system",
)


def namespaces() -> Component:
    return Component(
        name="namespaces",
        kind="manifests",
        version=VERSION,
        namespace="",
        manifests=tuple(namespace(name) for name in NAMES),
    )
