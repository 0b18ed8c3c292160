"""Kubeflow's training operator (PyTorchJob) and MPI operator (MPIJob), as the HyperPod
dependency chart ships them: the CRDs in compact form, RBAC and the controller Deployments."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.objects import (
    container,
    deployment,
    namespace,
    rbac,
    rule,
)
from cluster_svc.domain.components.schema import (
    BOOLEAN,
    INTEGER,
    OPEN,
    REPLICA_SPEC,
    RUN_POLICY,
    STRING,
    array,
    crd,
    enum,
    map_of,
    obj,
)

TRAINING_NAMESPACE = "kubeflow"
TRAINING_CHART_VERSION = "0.1.0"  # chart of kubeflow/training-operator v1.7.0
MPI_NAMESPACE = "mpi-operator"
MPI_CHART_VERSION = "0.1.0"  # chart of kubeflow/mpi-operator v0.5.0

PYTORCH_JOB_CRD = crd(
    "kubeflow.org",
    "PyTorchJob",
    "pytorchjobs",
    obj(
        ("pytorchReplicaSpecs",),
        pytorchReplicaSpecs=map_of(REPLICA_SPEC),
        runPolicy=RUN_POLICY,
        nprocPerNode=STRING,
        elasticPolicy=obj(
            maxReplicas=INTEGER,
            maxRestarts=INTEGER,
            metrics=array(OPEN),
            minReplicas=INTEGER,
            nProcPerNode=INTEGER,
            rdzvBackend=STRING,
            rdzvConf=array(obj(key=STRING, value=STRING)),
            rdzvHost=STRING,
            rdzvId=STRING,
            rdzvPort=INTEGER,
            standalone=BOOLEAN,
        ),
    ),
    columns=(("State", "string", ".status.conditions[-1:].type"),),
    scale=(".spec.pytorchReplicaSpecs.Worker.replicas", ".status.replicaStatuses.Worker.active"),
)

MPI_JOB_CRD = crd(
    "kubeflow.org",
    "MPIJob",
    "mpijobs",
    obj(
        ("mpiReplicaSpecs",),
        mpiReplicaSpecs=map_of(REPLICA_SPEC),
        runPolicy=RUN_POLICY,
        launcherCreationPolicy={"type": "string", "default": "AtStartup"},
        mpiImplementation=enum("OpenMPI", "Intel", "MPICH", default="OpenMPI"),
        runLauncherAsWorker={"type": "boolean", "default": False},
        slotsPerWorker={"type": "integer", "default": 1},
        sshAuthMountPath={"type": "string", "default": "/root/.ssh"},
    ),
    versions=("v2beta1",),
)

_JOB_WORKLOADS = [
    rule([""], ["pods", "services", "configmaps", "secrets", "serviceaccounts"], ["*"]),
    rule([""], ["events"], ["create", "patch", "update"]),
    rule(["rbac.authorization.k8s.io"], ["roles", "rolebindings"], ["*"]),
    rule(["scheduling.volcano.sh", "scheduling.x-k8s.io"], ["podgroups"], ["*"]),
    rule(["coordination.k8s.io"], ["leases"], ["*"]),
    rule(["autoscaling"], ["horizontalpodautoscalers"], ["*"]),
]


def training_operators() -> Component:
    plurals = ["pytorchjobs", "tfjobs", "mxjobs", "xgboostjobs", "paddlejobs"]
    return Component(
        name="training-operators",
        kind="manifests",
        version=TRAINING_CHART_VERSION,
        namespace=TRAINING_NAMESPACE,
        requires=("namespaces",),
        manifests=(
            PYTORCH_JOB_CRD,
            *rbac(
                "training-operator",
                TRAINING_NAMESPACE,
                [
                    *_JOB_WORKLOADS,
                    rule(
                        ["kubeflow.org"],
                        [
                            *plurals,
                            *(f"{p}/status" for p in plurals),
                            *(f"{p}/finalizers" for p in plurals),
                        ],
                        ["*"],
                    ),
                ],
            ),
            deployment(
                "training-operator",
                TRAINING_NAMESPACE,
                [
                    container(
                        "training-operator",
                        "kubeflow/training-operator:v1-855e096",
                        command=["/manager"],
                        args=["--enable-scheme=pytorch"],
                        ports=[{"containerPort": 8080}],
                    )
                ],
                account="training-operator",
            ),
        ),
    )


def mpi_operator() -> Component:
    return Component(
        name="mpi-operator",
        kind="manifests",
        version=MPI_CHART_VERSION,
        namespace=MPI_NAMESPACE,
        requires=("namespaces",),
        manifests=(
            namespace(MPI_NAMESPACE),
            MPI_JOB_CRD,
            *rbac(
                "mpi-operator",
                MPI_NAMESPACE,
                [
                    *_JOB_WORKLOADS,
                    rule(["batch"], ["jobs"], ["*"]),
                    rule(
                        ["kubeflow.org"], ["mpijobs", "mpijobs/status", "mpijobs/finalizers"], ["*"]
                    ),
                ],
            ),
            deployment(
                "mpi-operator",
                MPI_NAMESPACE,
                [
                    container(
                        "mpi-operator",
                        "mpioperator/mpi-operator:0.5.0",
                        args=["-alsologtostderr", "--lock-namespace=mpi-operator"],
                    )
                ],
                account="mpi-operator",
            ),
        ),
    )
