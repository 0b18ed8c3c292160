"""KEDA (chart keda 2.17.1, the version HyperPod's inference operator depends on): the
ScaledObject CRD in compact form (keda.sh/v1alpha1), RBAC, the operator and its metrics API
server in the `keda` namespace."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.objects import container, deployment, rbac, rule
from cluster_svc.domain.components.schema import (
    BOOLEAN,
    INTEGER,
    OPEN,
    STRING,
    STRING_MAP,
    array,
    crd,
    enum,
    obj,
)

NAMESPACE = "keda"
VERSION = "2.17.1"

SCALED_OBJECT_CRD = crd(
    "keda.sh",
    "ScaledObject",
    "scaledobjects",
    obj(
        ("scaleTargetRef", "triggers"),
        advanced=obj(
            horizontalPodAutoscalerConfig=obj(behavior=OPEN, name=STRING),
            restoreToOriginalReplicaCount=BOOLEAN,
            scalingModifiers=obj(
                activationTarget=STRING,
                formula=STRING,
                metricType=enum("AverageValue", "Value"),
                target=STRING,
            ),
        ),
        cooldownPeriod=INTEGER,
        fallback=obj(
            ("failureThreshold", "replicas"),
            behavior=enum(
                "static",
                "currentReplicas",
                "currentReplicasIfHigher",
                "currentReplicasIfLower",
                "scalingModifiers",
                default="static",
            ),
            failureThreshold=INTEGER,
            replicas=INTEGER,
        ),
        idleReplicaCount=INTEGER,
        initialCooldownPeriod=INTEGER,
        maxReplicaCount=INTEGER,
        minReplicaCount=INTEGER,
        pollingInterval=INTEGER,
        scaleTargetRef=obj(
            ("name",), apiVersion=STRING, envSourceContainerName=STRING, kind=STRING, name=STRING
        ),
        triggers=array(
            obj(
                ("metadata", "type"),
                authenticationRef=obj(
                    ("name",),
                    kind=enum("TriggerAuthentication", "ClusterTriggerAuthentication"),
                    name=STRING,
                ),
                metadata=STRING_MAP,
                metricType=STRING,
                name=STRING,
                type=STRING,
                useCachedMetrics=BOOLEAN,
            )
        ),
    ),
    versions=("v1alpha1",),
    short_names=("so",),
    columns=(
        ("ScaleTargetKind", "string", ".status.scaleTargetKind"),
        ("ScaleTargetName", "string", ".spec.scaleTargetRef.name"),
        ("Min", "integer", ".spec.minReplicaCount"),
        ("Max", "integer", ".spec.maxReplicaCount"),
    ),
)


def keda() -> Component:
    return Component(
        name="keda",
        kind="manifests",
        version=VERSION,
        namespace=NAMESPACE,
        requires=("namespaces",),
        manifests=(
            SCALED_OBJECT_CRD,
            *rbac(
                "keda-operator",
                NAMESPACE,
                [
                    rule(
                        [""],
                        ["configmaps", "secrets", "pods", "services", "limitranges"],
                        ["get", "list", "watch"],
                    ),
                    rule([""], ["events"], ["create", "patch"]),
                    rule(["*"], ["*/scale"], ["get", "list", "watch", "patch", "update"]),
                    rule(["apps"], ["deployments", "statefulsets"], ["get", "list", "watch"]),
                    rule(["autoscaling"], ["horizontalpodautoscalers"], ["*"]),
                    rule(["batch"], ["jobs"], ["*"]),
                    rule(["keda.sh"], ["*"], ["*"]),
                    rule(["coordination.k8s.io"], ["leases"], ["*"]),
                    rule(["external.metrics.k8s.io"], ["*"], ["*"]),
                ],
            ),
            deployment(
                "keda-operator",
                NAMESPACE,
                [
                    container(
                        "keda-operator",
                        f"ghcr.io/kedacore/keda:{VERSION}",
                        command=["/keda"],
                        args=["--leader-elect", "--zap-log-level=info"],
                        env=[{"name": "WATCH_NAMESPACE", "value": ""}],
                        ports=[{"containerPort": 8080, "name": "http"}],
                    )
                ],
                account="keda-operator",
            ),
            deployment(
                "keda-operator-metrics-apiserver",
                NAMESPACE,
                [
                    container(
                        "keda-operator-metrics-apiserver",
                        f"ghcr.io/kedacore/keda-metrics-apiserver:{VERSION}",
                        command=["/keda-adapter"],
                        args=["--secure-port=6443", "--logtostderr=true"],
                        ports=[{"containerPort": 6443, "name": "https"}],
                    )
                ],
                account="keda-operator",
            ),
        ),
    )
