"""Compact CRDs of the operators the product installs: structure, types, enums and required
fields of the upstream schemas (no description prose); pod templates stay open objects."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

S: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
N: Schema = {"type": "number"}
B: Schema = {"type": "boolean"}
ANY: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
IOS: Schema = {"x-kubernetes-int-or-string": True}
STRMAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}


def obj(required: tuple[str, ...] = (), **props: Schema) -> Schema:
    schema: Schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    return schema


def arr(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def enum(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


def minimum(schema: Schema, low: int) -> Schema:
    return dict(schema, minimum=low)


CONDITIONS = arr(
    obj(
        ("status", "type"),
        type=S,
        status=S,
        reason=S,
        message=S,
        lastTransitionTime=S,
        lastProbeTime={"type": "string", "nullable": True},
        lastUpdateTime=S,
        observedGeneration=INT,
    )
)
TEMPLATE = ANY  # a core/v1 PodTemplateSpec (validated as a Pod when the operator creates pods)
OBJECT_REF = obj(apiVersion=S, fieldPath=S, kind=S, name=S, namespace=S, resourceVersion=S, uid=S)


def crd(
    group: str,
    kind: str,
    plural: str,
    schema: Schema,
    *,
    versions: tuple[str, ...] = ("v1",),
    scope: str = "Namespaced",
    short_names: tuple[str, ...] = (),
    scale: tuple[str, str, str | None] | None = None,
    columns: tuple[tuple[str, str, str], ...] = (),
    categories: tuple[str, ...] = (),
) -> dict[str, Any]:
    root = obj(apiVersion=S, kind=S, metadata={"type": "object"}, **schema["properties"])
    if "required" in schema:
        root["required"] = schema["required"]
    subresources: dict[str, Any] = {"status": {}}
    if scale:
        subresources["scale"] = {"specReplicasPath": scale[0], "statusReplicasPath": scale[1]}
        if scale[2]:
            subresources["scale"]["labelSelectorPath"] = scale[2]
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    if categories:
        names["categories"] = list(categories)
    printer = [{"name": n, "type": t, "jsonPath": p} for n, t, p in columns]
    printer.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": names,
            "scope": scope,
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": n == 0,
                    "schema": {"openAPIV3Schema": root},
                    "subresources": subresources,
                    "additionalPrinterColumns": printer,
                }
                for n, v in enumerate(versions)
            ],
        },
    }


HYPERPOD_PYTORCH_JOB = crd(
    "sagemaker.amazonaws.com",
    "HyperPodPyTorchJob",
    "hyperpodpytorchjobs",
    obj(
        ("spec",),
        spec=obj(
            ("replicaSpecs",),
            nprocPerNode=IOS,
            replicaSpecs=arr(
                obj(
                    ("name",),
                    name=S,
                    replicas=minimum(INT, 0),
                    maxReplicas=INT,
                    spares=minimum(INT, 0),
                    template=TEMPLATE,
                ),
                minItems=1,
            ),
            runPolicy=obj(
                activeDeadlineSeconds=INT,
                cleanPodPolicy=enum("All", "Running", "None"),
                faultDeadlineSeconds=INT,
                jobMaxRetryCount=minimum(INT, 0),
                logMonitoringConfiguration=arr(
                    obj(
                        ("logPattern", "name"),
                        name=S,
                        logPattern=S,
                        expectedStartCutOffInSeconds=INT,
                        expectedRecurringFrequencyInSeconds=INT,
                        metricEvaluationDataPoints=INT,
                        metricThreshold=INT,
                        operator=S,
                        stopPattern=S,
                    )
                ),
                restartPolicy=obj(
                    ("evalPeriodSeconds",),
                    evalPeriodSeconds=INT,
                    maxFullJobRestarts=INT,
                    numRestartBeforeFullJobRestart=INT,
                    maxNumRepeatOffendersToAvoid=INT,
                    scaleUpSnoozeTimeInSeconds=INT,
                ),
                startupDeadlineSeconds=INT,
                suspend=B,
                ttlSecondsAfterFinished=INT,
                workloadMode=S,
            ),
            elasticPolicy=obj(
                minReplicas=INT,
                maxReplicas=INT,
                replicaIncrementStep=INT,
                replicaDiscreteValues=arr(INT),
                scalingTimeoutInSeconds=INT,
                gracefulShutdownTimeoutInSeconds=INT,
                faultyScaleDownTimeoutInSeconds=INT,
            ),
        ),
        status=obj(
            completionTime=S,
            conditions=CONDITIONS,
            jobPods=arr(OBJECT_REF),
            latestFaultyPodInstanceList=obj(
                restartType=S,
                faultyInstanceIdList=arr(S),
                faultyPodList=arr(S),
                faultyRankList=arr(S),
            ),
            managerPods=OBJECT_REF,
            masterAddr=S,
            masterPort=S,
            restartCount=INT,
            restartStatus=obj(currentEvalPeriod=INT, fullJobRestartCount=INT, restartCount=INT),
            elasticScalingStatus=obj(
                targetReplicas={"type": "object", "additionalProperties": INT},
                lastUpdated=S,
                lastScalingTime=S,
                lastRestartTime=S,
                podsScaled=B,
                isFaultyPodScaleDown=B,
                consecutiveScalingFailures=INT,
            ),
            elasticWorkloadRef=STRMAP,
            startTime=S,
        ),
    ),
    short_names=("hyperpodpytorchjob", "hpj"),
    columns=(
        ("Running", "string", '.status.conditions[?(@.type=="Running")].status'),
        ("Failed", "string", '.status.conditions[?(@.type=="Failed")].status'),
        ("Restarts", "integer", ".status.restartCount"),
    ),
)

_RAY_GROUP = obj(
    rayStartParams=STRMAP,
    template=TEMPLATE,
    serviceType=S,
)
_RAY_WORKER = obj(
    ("groupName",),
    groupName=S,
    replicas=INT,
    minReplicas=INT,
    maxReplicas=INT,
    numOfHosts=INT,
    rayStartParams=STRMAP,
    template=TEMPLATE,
    suspend=B,
)
_RAY_CLUSTER_SPEC = obj(
    ("headGroupSpec",),
    rayVersion=S,
    enableInTreeAutoscaling=B,
    autoscalerOptions=ANY,
    headGroupSpec=_RAY_GROUP,
    workerGroupSpecs=arr(_RAY_WORKER),
    headServiceAnnotations=STRMAP,
    suspend=B,
)
RAY_CLUSTER = crd(
    "ray.io",
    "RayCluster",
    "rayclusters",
    obj(
        spec=_RAY_CLUSTER_SPEC,
        status=obj(
            state=S,
            reason=S,
            conditions=CONDITIONS,
            readyWorkerReplicas=INT,
            availableWorkerReplicas=INT,
            desiredWorkerReplicas=INT,
            minWorkerReplicas=INT,
            maxWorkerReplicas=INT,
            desiredCPU=IOS,
            desiredGPU=IOS,
            desiredMemory=IOS,
            desiredTPU=IOS,
            endpoints=STRMAP,
            head=obj(podIP=S, serviceIP=S, podName=S, serviceName=S),
            lastUpdateTime=S,
            observedGeneration=INT,
        ),
    ),
    versions=("v1",),
    columns=(
        ("Desired Workers", "integer", ".status.desiredWorkerReplicas"),
        ("Status", "string", ".status.state"),
    ),
    categories=("all",),
)
RAY_JOB = crd(
    "ray.io",
    "RayJob",
    "rayjobs",
    obj(
        spec=obj(
            entrypoint=S,
            runtimeEnvYAML=S,
            jobId=S,
            shutdownAfterJobFinishes=B,
            ttlSecondsAfterFinished=INT,
            activeDeadlineSeconds=INT,
            backoffLimit=INT,
            clusterSelector=STRMAP,
            rayClusterSpec=_RAY_CLUSTER_SPEC,
            submissionMode=enum("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"),
            submitterPodTemplate=TEMPLATE,
            entrypointNumCpus=N,
            entrypointNumGpus=N,
            entrypointResources=S,
            suspend=B,
            metadata=STRMAP,
        ),
        status=obj(
            jobId=S,
            rayClusterName=S,
            dashboardURL=S,
            jobStatus=S,
            jobDeploymentStatus=S,
            reason=S,
            message=S,
            startTime=S,
            endTime=S,
            succeeded=INT,
            failed=INT,
            rayClusterStatus=ANY,
            observedGeneration=INT,
        ),
    ),
    columns=(
        ("Job Status", "string", ".status.jobStatus"),
        ("Deployment Status", "string", ".status.jobDeploymentStatus"),
    ),
    categories=("all",),
)

SCALED_OBJECT = crd(
    "keda.sh",
    "ScaledObject",
    "scaledobjects",
    obj(
        ("spec",),
        spec=obj(
            ("scaleTargetRef", "triggers"),
            scaleTargetRef=obj(("name",), apiVersion=S, kind=S, name=S, envSourceContainerName=S),
            minReplicaCount=INT,
            maxReplicaCount=INT,
            idleReplicaCount=INT,
            pollingInterval=INT,
            cooldownPeriod=INT,
            initialCooldownPeriod=INT,
            advanced=ANY,
            fallback=obj(
                ("failureThreshold", "replicas"), failureThreshold=INT, replicas=INT, behavior=S
            ),
            triggers=arr(
                obj(
                    ("metadata", "type"),
                    type=S,
                    name=S,
                    metadata=STRMAP,
                    metricType=enum("AverageValue", "Value", "Utilization"),
                    useCachedMetrics=B,
                    authenticationRef=obj(("name",), name=S, kind=S),
                )
            ),
        ),
        status=obj(
            conditions=CONDITIONS,
            hpaName=S,
            scaleTargetKind=S,
            scaleTargetGVKR=obj(group=S, version=S, kind=S, resource=S),
            originalReplicaCount=INT,
            lastActiveTime=S,
            externalMetricNames=arr(S),
            triggersTypes=S,
            health=ANY,
        ),
    ),
    versions=("v1alpha1",),
    short_names=("so",),
    columns=(
        ("ScaleTargetName", "string", ".spec.scaleTargetRef.name"),
        ("Min", "integer", ".spec.minReplicaCount"),
        ("Max", "integer", ".spec.maxReplicaCount"),
    ),
)

_INFERENCE_STATUS = obj(
    state=enum(
        "DeploymentPending",
        "DeploymentInProgress",
        "DeploymentFailed",
        "DeploymentComplete",
        "DeletionPending",
        "DeletionInProgress",
        "DeletionFailed",
        "DeletionComplete",
    ),
    conditions=CONDITIONS,
    replicas=INT,
    selector=S,
    observedGeneration=INT,
    deploymentStatus=obj(
        name=S,
        deploymentObjectOverallState=S,
        lastUpdated=S,
        message=S,
        reason=S,
        status=ANY,
    ),
    endpoints=ANY,
    metricsStatus=ANY,
    tlsCertificate=ANY,
    dnsStatus=ANY,
)
_AUTOSCALING = obj(
    minReplicaCount=INT,
    maxReplicaCount=INT,
    pollingInterval=INT,
    cooldownPeriod=INT,
    initialCooldownPeriod=INT,
    scaleDownStabilizationTime=INT,
    scaleUpStabilizationTime=INT,
    prometheusTrigger=ANY,
    prometheusTriggerList=arr(ANY),
    cloudWatchTrigger=ANY,
    cloudWatchTriggerList=arr(ANY),
)
_RESOURCES = obj(limits=ANY, requests=ANY, claims=arr(ANY))
INFERENCE_ENDPOINT_CONFIG = crd(
    "inference.sagemaker.aws.amazon.com",
    "InferenceEndpointConfig",
    "inferenceendpointconfigs",
    obj(
        ("spec",),
        spec=obj(
            ("modelName", "modelSourceConfig", "worker"),
            modelName=S,
            modelVersion=S,
            endpointName=S,
            instanceType=S,
            instanceTypes=arr(S),
            replicas=INT,
            InitialReplicaCount=INT,
            modelSourceConfig=obj(
                ("modelSourceType",),
                modelSourceType=enum("fsx", "s3", "huggingface", "kubernetesVolume"),
                modelLocation=S,
                prefetchEnabled=B,
                s3Storage=obj(bucketName=S, region=S),
                fsxStorage=obj(dnsName=S, fileSystemId=S, mountName=S),
                huggingFaceModel=obj(modelId=S, commitSHA=S, tokenSecretRef=ANY),
                kubernetesVolume=ANY,
            ),
            worker=obj(
                ("image", "modelInvocationPort", "modelVolumeMount", "resources"),
                image=S,
                args=arr(S),
                command=arr(S),
                environmentVariables=arr(ANY),
                modelInvocationPort=obj(("containerPort",), containerPort=INT, name=S),
                modelVolumeMount=obj(("mountPath", "name"), mountPath=S, name=S),
                resources=_RESOURCES,
                probes=ANY,
                requestLimits=ANY,
                workingDir=S,
            ),
            autoScalingSpec=_AUTOSCALING,
            intelligentRoutingSpec=obj(
                enabled=B,
                routingStrategy=enum("prefixaware", "kvaware", "session", "roundrobin"),
                autoScalingSpec=ANY,
            ),
            kvCacheSpec=obj(
                enableL1Cache=B,
                enableL2Cache=B,
                l2CacheSpec=obj(l2CacheBackend=S, l2CacheLocalUrl=S),
                cacheConfigFile=S,
            ),
            loadBalancer=ANY,
            metrics=ANY,
            tlsConfig=ANY,
            tags=arr(ANY),
            nodeAffinity=ANY,
            kubernetes=ANY,
            invocationEndpoint=S,
            maxDeployTimeInSeconds=INT,
            dataCapture=ANY,
            dnsConfig=ANY,
            pdSpec=ANY,
        ),
        status=_INFERENCE_STATUS,
    ),
    versions=("v1", "v1alpha1"),
    scale=(".spec.replicas", ".status.replicas", ".status.selector"),
    columns=(("State", "string", ".status.state"),),
)
JUMPSTART_MODEL = crd(
    "inference.sagemaker.aws.amazon.com",
    "JumpStartModel",
    "jumpstartmodels",
    obj(
        ("spec",),
        spec=obj(
            ("model", "server"),
            model=obj(
                ("modelId",),
                modelId=S,
                modelVersion=S,
                modelHubName=S,
                acceptEula=B,
                gatedModelDownloadRoleArn=S,
                additionalConfigs=arr(ANY),
            ),
            server=obj(
                ("instanceType",), instanceType=S, acceleratorPartitionType=S, executionRole=S
            ),
            replicas=INT,
            sageMakerEndpoint=obj(name=S),
            environmentVariables=arr(ANY),
            autoScalingSpec=_AUTOSCALING,
            intelligentRoutingSpec=ANY,
            kvCacheSpec=ANY,
            loadBalancer=ANY,
            metrics=ANY,
            tlsConfig=ANY,
            maxDeployTimeInSeconds=INT,
            dataCapture=ANY,
            dnsConfig=ANY,
        ),
        status=_INFERENCE_STATUS,
    ),
    versions=("v1", "v1alpha1"),
    scale=(".spec.replicas", ".status.replicas", ".status.selector"),
    columns=(("State", "string", ".status.state"),),
)

HYPERPOD_NODE_CLASS = crd(
    "karpenter.sagemaker.amazonaws.com",
    "HyperpodNodeClass",
    "hyperpodnodeclasses",
    obj(
        spec=obj(instanceGroups=arr(S, maxItems=10)),
        status=obj(
            conditions=CONDITIONS,
            instanceGroups=arr(
                obj(
                    name=S,
                    instanceTypes=arr(S),
                    subnets=arr(obj(id=S, zone=S, zoneId=S)),
                )
            ),
        ),
    ),
    scope="Cluster",
    columns=(("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),),
)
NODE_POOL = crd(
    "karpenter.sh",
    "NodePool",
    "nodepools",
    obj(
        ("spec",),
        spec=obj(
            ("template",),
            template=obj(
                ("spec",),
                metadata=obj(labels=STRMAP, annotations=STRMAP),
                spec=obj(
                    ("nodeClassRef", "requirements"),
                    nodeClassRef=obj(("group", "kind", "name"), group=S, kind=S, name=S),
                    requirements=arr(
                        obj(
                            ("key", "operator"),
                            key=S,
                            operator=enum(
                                "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"
                            ),
                            values=arr(S),
                            minValues=INT,
                        )
                    ),
                    taints=arr(ANY),
                    startupTaints=arr(ANY),
                    expireAfter=IOS,
                    terminationGracePeriod=S,
                ),
            ),
            disruption=obj(
                consolidationPolicy=enum("WhenEmpty", "WhenEmptyOrUnderutilized"),
                consolidateAfter=S,
                budgets=arr(ANY),
            ),
            limits=ANY,
            weight=INT,
            replicas=INT,
        ),
        status=obj(
            conditions=CONDITIONS, nodes=INT, resources=ANY, nodeClassObservedGeneration=INT
        ),
    ),
    scope="Cluster",
    columns=(
        ("NodeClass", "string", ".spec.template.spec.nodeClassRef.name"),
        ("Nodes", "string", ".status.resources.nodes"),
    ),
)

ALL_CRDS = {
    "hyperpodpytorchjobs.sagemaker.amazonaws.com": HYPERPOD_PYTORCH_JOB,
    "rayclusters.ray.io": RAY_CLUSTER,
    "rayjobs.ray.io": RAY_JOB,
    "scaledobjects.keda.sh": SCALED_OBJECT,
    "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com": INFERENCE_ENDPOINT_CONFIG,
    "jumpstartmodels.inference.sagemaker.aws.amazon.com": JUMPSTART_MODEL,
    "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com": HYPERPOD_NODE_CLASS,
    "nodepools.karpenter.sh": NODE_POOL,
}
