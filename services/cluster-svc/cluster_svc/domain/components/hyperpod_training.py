"""The HyperPodPyTorchJob CRD (sagemaker.amazonaws.com/v1).

The EKS add-on `amazon-sagemaker-hyperpod-training-operator` owns this CRD where it installs it;
no public CRD file exists, so this compact schema is derived from the HyperPod SDK's model
(nprocPerNode, replicaSpecs, runPolicy with restart and log-monitoring settings, elasticPolicy).
It is applied only where the CRD is missing: an existing CRD without Hyperpilot's labels
belongs to its installer and is left alone (see `dependencies.observe_manifests`).
"""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.schema import (
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    OPEN,
    STRING,
    array,
    crd,
    obj,
)

VERSION = "1.1.0"  # the training-operator add-on release the schema follows

HYPERPOD_PYTORCH_JOB_CRD = crd(
    "sagemaker.amazonaws.com",
    "HyperPodPyTorchJob",
    "hyperpodpytorchjobs",
    obj(
        ("replicaSpecs",),
        nprocPerNode=INT_OR_STRING,
        replicaSpecs=array(
            obj(
                ("name",),
                name=STRING,
                replicas=INTEGER,
                maxReplicas=INTEGER,
                spares=INTEGER,
                template=OPEN,
            )
        ),
        runPolicy=obj(
            activeDeadlineSeconds=INTEGER,
            cleanPodPolicy=STRING,
            faultDeadlineSeconds=INTEGER,
            jobMaxRetryCount=INTEGER,
            logMonitoringConfiguration=array(
                obj(
                    ("logPattern", "name"),
                    name=STRING,
                    logPattern=STRING,
                    expectedRecurringFrequencyInSeconds=INTEGER,
                    expectedStartCutOffInSeconds=INTEGER,
                    metricEvaluationDataPoints=INTEGER,
                    metricThreshold=INTEGER,
                    operator=STRING,
                    stopPattern=STRING,
                )
            ),
            restartPolicy=obj(
                ("evalPeriodSeconds",),
                evalPeriodSeconds=INTEGER,
                maxFullJobRestarts=INTEGER,
                numRestartBeforeFullJobRestart=INTEGER,
                maxNumRepeatOffendersToAvoid=INTEGER,
                scaleUpSnoozeTimeInSeconds=INTEGER,
            ),
            startupDeadlineSeconds=INTEGER,
            suspend=BOOLEAN,
            ttlSecondsAfterFinished=INTEGER,
            workloadMode=STRING,
        ),
        elasticPolicy=obj(
            minReplicas=INTEGER,
            maxReplicas=INTEGER,
            replicaIncrementStep=INTEGER,
            replicaDiscreteValues=array(INTEGER),
            scalingTimeoutInSeconds=INTEGER,
            gracefulShutdownTimeoutInSeconds=INTEGER,
            faultyScaleDownTimeoutInSeconds=INTEGER,
        ),
    ),
    columns=(("Status", "string", ".status.conditions[-1:].type"),),
)


def hyperpod_pytorch_job_crd() -> Component:
    return Component(
        name="hyperpod-pytorchjob-crd",
        kind="manifests",
        version=VERSION,
        namespace="",
        requires=("amazon-sagemaker-hyperpod-training-operator",),
        manifests=(HYPERPOD_PYTORCH_JOB_CRD,),
    )
