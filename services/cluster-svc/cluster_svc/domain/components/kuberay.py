"""KubeRay (chart kuberay-operator 1.7.0): the RayCluster and RayJob CRDs in compact form (the
ray.io/v1 schemas of KubeRay v1.7.0), RBAC and the operator Deployment in ray-system."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.objects import container, deployment, rbac, rule
from cluster_svc.domain.components.schema import (
    BOOLEAN,
    INTEGER,
    NUMBER,
    OPEN,
    STRING,
    STRING_MAP,
    array,
    crd,
    enum,
    obj,
)

NAMESPACE = "ray-system"
VERSION = "1.7.0"

HEAD_GROUP = obj(
    ("template",),
    enableIngress=BOOLEAN,
    headService=OPEN,
    labels=STRING_MAP,
    rayStartParams=STRING_MAP,
    resources=STRING_MAP,
    serviceType=STRING,
    template=OPEN,
)
WORKER_GROUP = obj(
    ("groupName", "maxReplicas", "minReplicas", "template"),
    groupName=STRING,
    idleTimeoutSeconds=INTEGER,
    labels=STRING_MAP,
    maxReplicas={"type": "integer", "default": 2147483647},
    minReplicas={"type": "integer", "default": 0},
    numOfHosts={"type": "integer", "default": 1},
    priority={"type": "integer", "default": 0},
    rayStartParams=STRING_MAP,
    replicas={"type": "integer", "default": 0},
    resources=STRING_MAP,
    scaleStrategy=OPEN,
    suspend=BOOLEAN,
    template=OPEN,
)
RAY_CLUSTER_SPEC = obj(
    ("headGroupSpec",),
    authOptions=obj(enableK8sTokenAuth=BOOLEAN, mode=enum("disabled", "token"), secretName=STRING),
    autoscalerOptions=OPEN,
    enableInTreeAutoscaling=BOOLEAN,
    gcsFaultToleranceOptions=OPEN,
    headGroupSpec=HEAD_GROUP,
    headServiceAnnotations=STRING_MAP,
    historyServerOptions=OPEN,
    managedBy=STRING,
    networkPolicy=OPEN,
    rayVersion=STRING,
    suspend=BOOLEAN,
    tlsOptions=obj(enabled=BOOLEAN),
    upgradeStrategy=obj(type=enum("Recreate", "None")),
    workerGroupSpecs=array(WORKER_GROUP),
)

RAY_CLUSTER_CRD = crd(
    "ray.io",
    "RayCluster",
    "rayclusters",
    RAY_CLUSTER_SPEC,
    columns=(
        ("Desired Workers", "integer", ".status.desiredWorkerReplicas"),
        ("Status", "string", ".status.state"),
    ),
)

RAY_JOB_CRD = crd(
    "ray.io",
    "RayJob",
    "rayjobs",
    obj(
        activeDeadlineSeconds=INTEGER,
        backoffLimit={"type": "integer", "default": 0},
        clusterSelector=STRING_MAP,
        deletionStrategy=OPEN,
        entrypoint=STRING,
        entrypointNumCpus=NUMBER,
        entrypointNumGpus=NUMBER,
        entrypointResources=STRING,
        jobId=STRING,
        managedBy=STRING,
        metadata=OPEN,
        preRunningDeadlineSeconds=INTEGER,
        rayClusterSpec=RAY_CLUSTER_SPEC,
        runtimeEnvYAML=STRING,
        shutdownAfterJobFinishes=BOOLEAN,
        submissionMode={"type": "string", "default": "K8sJobMode"},
        submitterConfig=obj(backoffLimit=INTEGER),
        submitterPodTemplate=OPEN,
        suspend=BOOLEAN,
        ttlSecondsAfterFinished={"type": "integer", "default": 0},
    ),
    columns=(
        ("Job Status", "string", ".status.jobStatus"),
        ("Deployment Status", "string", ".status.jobDeploymentStatus"),
    ),
)


def kuberay_operator() -> Component:
    return Component(
        name="kuberay-operator",
        kind="manifests",
        version=VERSION,
        namespace=NAMESPACE,
        requires=("namespaces",),
        manifests=(
            RAY_CLUSTER_CRD,
            RAY_JOB_CRD,
            *rbac(
                "kuberay-operator",
                NAMESPACE,
                [
                    rule([""], ["pods", "services", "serviceaccounts", "configmaps"], ["*"]),
                    rule([""], ["events"], ["create", "patch", "update"]),
                    rule([""], ["endpoints", "secrets"], ["get", "list", "watch", "create"]),
                    rule(["batch"], ["jobs"], ["*"]),
                    rule(
                        ["networking.k8s.io"],
                        ["ingresses", "ingressclasses", "networkpolicies"],
                        ["*"],
                    ),
                    rule(["rbac.authorization.k8s.io"], ["roles", "rolebindings"], ["*"]),
                    rule(["coordination.k8s.io"], ["leases"], ["*"]),
                    rule(
                        ["ray.io"],
                        [
                            "rayclusters",
                            "rayclusters/status",
                            "rayclusters/finalizers",
                            "rayjobs",
                            "rayjobs/status",
                            "rayjobs/finalizers",
                        ],
                        ["*"],
                    ),
                ],
            ),
            deployment(
                "kuberay-operator",
                NAMESPACE,
                [
                    container(
                        "kuberay-operator",
                        f"quay.io/kuberay/operator:v{VERSION}",
                        command=["/manager"],
                        args=["--feature-gates=RayClusterStatusConditions=true"],
                        ports=[{"containerPort": 8080, "name": "http"}],
                        requests={"cpu": "100m", "memory": "512Mi"},
                        limits={"cpu": "100m", "memory": "512Mi"},
                    )
                ],
                account="kuberay-operator",
            ),
        ),
    )
