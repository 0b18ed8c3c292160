"""The Kubernetes objects an endpoint is made of: pure functions of its spec.

- container: a Deployment of the serving container and a Service (LoadBalancer for `external`,
  ClusterIP for `internal`); a `model_pool` is a Deployment of warm workers labelled
  `hyperpilot.dev/model=unassigned`, and one Service per model selects the workers whose label
  names that model, so a worker moves between models by its label alone. With autoscaling, a
  KEDA ScaledObject on the engine's Prometheus metrics owns the workers' replicas.
- sglang: workers, the SGLang router (service discovery of the workers by label, cache-aware
  routing) with its ServiceAccount and Role, the router's Service, and a KEDA ScaledObject on
  the router's Prometheus metrics.
- managed / jumpstart: one InferenceEndpointConfig or JumpStartModel (with TLS, DNS and data
  capture when asked; CloudWatch triggers on a managed one); the operator does the rest.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from shared.boundary import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    label_value,
    model_id,
    object_name,
    priority_class_object,
    team_queue,
)
from shared.contracts.inference import (
    CloudWatchTrigger,
    DataCaptureSpec,
    EndpointSpec,
    KvCacheSpec,
    PdRole,
    PdSpec,
    TlsSpec,
    workers_deployment,
)
from shared.validation import RuleViolation

KubeObject = dict[str, Any]

ENDPOINT_LABEL = "hyperpilot.dev/endpoint"
ROLE_LABEL = "hyperpilot.dev/role"
POOL_LABEL = "hyperpilot.dev/pool"
MODEL_LABEL = "hyperpilot.dev/model"
UNASSIGNED = "unassigned"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
INFERENCE_API = "inference.sagemaker.aws.amazon.com/v1"
KEDA_API = "keda.sh/v1alpha1"
ROUTER_IMAGE = "lmsysorg/sglang-router:v0.1.9"
ROUTER_METRICS_PORT = 29000
LAUNCHERS = {
    "vllm": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
    "sglang": ["python3", "-m", "sglang.launch_server"],
}
MODEL_FLAGS = {"vllm": "--model", "sglang": "--model-path"}
# The paths of a model server a request may be sent to (through the service proxy).
INVOKE_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/invocations")


def _meta(spec: EndpointSpec, name: str, labels: dict[str, str] | None = None) -> KubeObject:
    return {
        "name": name,
        "namespace": spec.namespace,
        "labels": {ENDPOINT_LABEL: spec.name, "app.kubernetes.io/managed-by": "hyperpilot"}
        | (labels or {}),
    }


def workers_name(spec: EndpointSpec) -> str:
    return workers_deployment(spec.name, spec.kind)


class PoolModel(NamedTuple):
    """One model of a pool: the value of its workers' model label and its Service's name."""

    label: str
    service: str


def pool_model(spec: EndpointSpec, model: str, field: str = "model") -> PoolModel:
    """The label a pool's worker is given to serve `model` and the name of the Service that
    selects those workers, `<endpoint>-<model>`: both from here, so they always agree. `model`
    is a model id that is also a part of a Kubernetes name (lowercase letters, digits and '-')
    and the Service's name a DNS-1123 label; anything else (a path, an escape, a '/', a second
    endpoint's name, `unassigned`) is refused with RuleViolation naming `field`."""
    model_id(model, field)
    if model == UNASSIGNED:
        raise RuleViolation(
            f"{field} {UNASSIGNED!r} marks the pool's workers that serve no model",
            "name the model the worker serves, e.g. qwen",
        )
    return PoolModel(label_value(model, field), object_name(spec.name, model, field=field))


def service_name(spec: EndpointSpec, model: str | None = None) -> str:
    """The Service an endpoint is reached through (a pool's: one per model, `pool_model`)."""
    if spec.kind == "managed" or spec.kind == "jumpstart":
        return object_name(spec.name, "routing", "service", field="name")
    if spec.service == "model_pool" and model is not None:
        return pool_model(spec, model).service
    return spec.name


def serving_port(spec: EndpointSpec) -> int:
    if spec.kind == "sglang":
        return spec.router.port if spec.router else 30000
    if spec.kind == "jumpstart":
        return 8080
    if spec.kind == "managed":
        return 8080
    assert spec.container is not None
    return spec.container.port_or_default()


def server_command(spec: EndpointSpec) -> tuple[list[str], list[str]]:
    """The command and args of the serving container. The GPU count is the spec's `gpus`:
    nothing here derives it from the command line."""
    container = spec.container
    assert container is not None
    if container.engine == "custom":
        return list(container.command), list(container.args)
    port = container.port_or_default()
    args = [MODEL_FLAGS[container.engine], container.model] if container.model else []
    args += ["--host", "0.0.0.0", "--port", str(port)]
    if container.engine == "sglang" and (spec.kind == "sglang" or spec.autoscaling):
        args += ["--enable-metrics"]
    return list(container.command) or LAUNCHERS[container.engine], args + list(container.args)


def _worker_labels(spec: EndpointSpec) -> dict[str, str]:
    if spec.service == "model_pool":
        return {POOL_LABEL: spec.name}
    return {ENDPOINT_LABEL: spec.name, ROLE_LABEL: "worker"}


def _env(spec: EndpointSpec) -> list[KubeObject]:
    assert spec.container is not None
    env: list[KubeObject] = [{"name": k, "value": v} for k, v in sorted(spec.container.env.items())]
    if spec.container.hf_token_secret:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {
                    "secretKeyRef": {"name": spec.container.hf_token_secret, "key": "token"}
                },
            }
        )
    return env


def _placement(spec: EndpointSpec) -> KubeObject:
    """One instance type: a node selector. Several: a node affinity that requires one of them
    and prefers them in order (weights 100, 80, 60, ...)."""
    types = spec.instance_types()
    if len(types) == 1:
        return {"nodeSelector": {INSTANCE_TYPE_LABEL: spec.instance_type}}

    def term(values: list[str]) -> KubeObject:
        return {
            "matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": values}]
        }

    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(types)]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100 - 20 * rank, "preference": term([t])}
                    for rank, t in enumerate(types)
                ],
            }
        }
    }


def worker_deployment(spec: EndpointSpec) -> KubeObject:
    assert spec.container is not None
    command, args = server_command(spec)
    port = spec.container.port_or_default()
    selector = _worker_labels(spec)
    pod_labels = selector | {ENDPOINT_LABEL: spec.name, ROLE_LABEL: "worker"}
    if spec.service == "model_pool":
        pod_labels[MODEL_LABEL] = UNASSIGNED
    governed = governance_labels(spec)
    pod_labels |= governed
    amounts = spec.accelerators()
    container: KubeObject = {
        "name": "server",
        "image": spec.container.image_or_default(),
        "command": command,
        "args": args,
        "ports": [{"name": "http", "containerPort": port}],
        "env": _env(spec),
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
    }
    pod_spec: KubeObject = {
        **_placement(spec),
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container],
    }
    if spec.volumes:
        pod_spec["volumes"] = [
            {
                "name": object_name("storage", str(i), field="volumes"),
                "persistentVolumeClaim": {"claimName": v.claim, "readOnly": v.read_only},
            }
            for i, v in enumerate(spec.volumes)
        ]
        container["volumeMounts"] = [
            {
                "name": object_name("storage", str(i), field="volumes"),
                "mountPath": v.mount_path,
                "readOnly": v.read_only,
            }
            for i, v in enumerate(spec.volumes)
        ]
    deployment_spec: KubeObject = {
        "selector": {"matchLabels": selector},
        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
    }
    if spec.autoscaling is None:
        deployment_spec["replicas"] = spec.replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(spec, workers_name(spec), {ROLE_LABEL: "worker", **governed}),
        "spec": deployment_spec,
    }


def governance_labels(spec: EndpointSpec) -> dict[str, str]:
    """With a team: the labels task governance's Kueue reads on the workers' Deployment and
    pods (the team's LocalQueue, the priority class); none without."""
    if spec.team is None:
        return {}
    labels = {QUEUE_LABEL: team_queue(spec.team)}
    if spec.priority is not None:
        labels[PRIORITY_LABEL] = priority_class_object(spec.priority)
    return labels


def _service(
    spec: EndpointSpec, name: str, selector: dict[str, str], port: int, external: bool
) -> KubeObject:
    meta = _meta(spec, name)
    body: KubeObject = {
        "type": "LoadBalancer" if external else "ClusterIP",
        "selector": selector,
        "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
    }
    if external:
        meta["annotations"] = {
            "service.beta.kubernetes.io/aws-load-balancer-type": "external",
            "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
            "service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing",
        }
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": body}


def pool_service(spec: EndpointSpec, model: str) -> KubeObject:
    """The Service of one model of a pool: the workers whose model label names it."""
    names = pool_model(spec, model)
    return _service(
        spec,
        names.service,
        {POOL_LABEL: spec.name, MODEL_LABEL: names.label},
        serving_port(spec),
        external=False,
    )


def _router_objects(spec: EndpointSpec) -> list[KubeObject]:
    router = spec.router
    port = router.port if router else 30000
    policy = router.policy if router else "cache_aware"
    assert spec.container is not None
    worker_port = spec.container.port_or_default()
    account = object_name(spec.name, "router", field="name")
    labels = {ENDPOINT_LABEL: spec.name, ROLE_LABEL: "router"}
    selector = f"{ENDPOINT_LABEL}={spec.name}"
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(spec, account),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(spec, account),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(spec, account),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": spec.namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(spec, account, {ROLE_LABEL: "router"}),
            "spec": {
                "replicas": router.replicas if router else 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": account,
                        "containers": [
                            {
                                "name": "router",
                                "image": ROUTER_IMAGE,
                                "command": ["python3", "-m", "sglang_router.launch_router"],
                                "args": [
                                    "--host",
                                    "0.0.0.0",
                                    "--port",
                                    str(port),
                                    "--policy",
                                    policy,
                                    "--service-discovery",
                                    "--selector",
                                    f"{selector}",
                                    f"{ROLE_LABEL}=worker",
                                    "--service-discovery-port",
                                    str(worker_port),
                                    "--service-discovery-namespace",
                                    spec.namespace,
                                    "--prometheus-host",
                                    "0.0.0.0",
                                    "--prometheus-port",
                                    str(ROUTER_METRICS_PORT),
                                ],
                                "ports": [
                                    {"name": "http", "containerPort": port},
                                    {"name": "metrics", "containerPort": ROUTER_METRICS_PORT},
                                ],
                                "readinessProbe": {
                                    "httpGet": {"path": "/health", "port": port},
                                    "periodSeconds": 10,
                                },
                            }
                        ],
                    },
                },
            },
        },
        _service(
            spec,
            spec.name,
            labels,
            port,
            external=bool(router and router.service == "external"),
        ),
    ]


# Prometheus metrics of each server: (running requests, queued requests, requests served).
ENGINE_METRICS = {
    "vllm": (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:request_success_total",
    ),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:num_requests_total"),
    "router": (
        "sgl_router_running_requests",
        "sgl_router_queued_requests",
        "sgl_router_requests_total",
    ),
}
GPU_UTIL_METRIC = "DCGM_FI_DEV_GPU_UTIL"


def _trigger(name: str, address: str, query: str, threshold: float) -> KubeObject:
    return {
        "type": "prometheus",
        "name": name,
        "metadata": {"serverAddress": address, "query": query, "threshold": _number(threshold)},
    }


def scaled_object(spec: EndpointSpec) -> KubeObject:
    """KEDA scales the workers of a self-managed endpoint, each trigger a Prometheus query
    summed over the endpoint's pods and divided by its per-worker target: running requests and
    queue depth (the SGLang router's, or the engine's own), the request rate when
    `requests_per_second` is set, the GPU utilization of the workers when `gpu_utilization` is."""
    scaling = spec.autoscaling
    assert scaling is not None and spec.container is not None
    address = scaling.prometheus_address
    workers = workers_name(spec)
    if spec.kind == "sglang":
        running, queued, served = ENGINE_METRICS["router"]
        old = f'job="{spec.name}-router",namespace="{spec.namespace}"'
        rate = f'namespace="{spec.namespace}",endpoint="{spec.name}",role="router"'
    else:
        running, queued, served = ENGINE_METRICS[spec.container.engine]
        old = rate = f'namespace="{spec.namespace}",endpoint="{spec.name}"'
    triggers = [
        _trigger(
            "requests-per-replica",
            address,
            f"sum({running}{{{old}}})",
            scaling.requests_per_replica,
        ),
        _trigger("queue-depth", address, f"sum({queued}{{{old}}})", scaling.queue_depth),
    ]
    if scaling.requests_per_second is not None:
        window = f"{scaling.rate_window_seconds}s"
        query = f"sum(rate({served}{{{rate}}}[{window}]))"
        triggers.append(
            _trigger("requests-per-second", address, query, scaling.requests_per_second)
        )
    if scaling.gpu_utilization is not None:
        query = f'sum({GPU_UTIL_METRIC}{{namespace="{spec.namespace}",pod=~"{workers}-.*"}})'
        triggers.append(_trigger("gpu-utilization", address, query, scaling.gpu_utilization))
    return {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": _meta(spec, spec.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workers},
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": triggers,
        },
    }


def _number(value: float) -> str:
    return f"{value:g}"


def _autoscaling(spec: EndpointSpec) -> KubeObject | None:
    managed = spec.managed
    if managed is None or managed.autoscaling is None:
        return None
    scaling = managed.autoscaling
    return {
        "minReplicaCount": scaling.min_replicas,
        "maxReplicaCount": scaling.max_replicas,
        "prometheusTrigger": {
            "name": object_name(spec.name, "requests", field="name"),
            "serverAddress": scaling.prometheus_address,
            "query": f'sum(rate(http_requests_total{{endpoint="{spec.name}"}}[1m]))',
            "targetValue": scaling.requests_per_replica,
            "metricType": "Value",
        },
    } | (
        {"cloudWatchTriggerList": [_cloudwatch(t) for t in managed.cloudwatch_triggers]}
        if managed.cloudwatch_triggers
        else {}
    )


def _cloudwatch(trigger: CloudWatchTrigger) -> KubeObject:
    return {
        "name": trigger.name,
        "namespace": trigger.namespace,
        "metricName": trigger.metric_name,
        "dimensions": [{"name": k, "value": v} for k, v in sorted(trigger.dimensions.items())],
        "targetValue": trigger.target_value,
        "metricStat": trigger.stat,
        "metricType": trigger.metric_type,
        "metricCollectionPeriod": trigger.period_seconds,
    }


def _pd_role(role: PdRole, spec: EndpointSpec, instance_types: list[str]) -> KubeObject:
    amounts = spec.accelerators(role.gpus)
    body: KubeObject = {
        "replicas": role.replicas,
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
    }
    if role.args:
        body["args"] = list(role.args)
    if len(instance_types) == 1:
        body["nodeSelector"] = {INSTANCE_TYPE_LABEL: instance_types[0]}
    return body


def _pd_spec(spec: EndpointSpec, pd: PdSpec) -> KubeObject:
    """pdSpec: the prefill and decode Deployments the operator makes, each role's replicas,
    GPUs and extra vLLM args, the token threshold of remote prefill and same-AZ placement."""
    types = spec.instance_types()
    return {
        "prefillSpec": _pd_role(pd.prefill, spec, types),
        "decodingSpec": _pd_role(pd.decode, spec, types),
        "routingThreshold": pd.routing_threshold,
        "topologySpec": {"sameAZ": pd.same_az},
    }


def _tls_and_capture(tls: TlsSpec | None, capture: DataCaptureSpec | None) -> KubeObject:
    """tlsConfig (an ACM certificate for a domain, or where the self-signed one is kept),
    dnsConfig (the Route 53 zone of the domain's record) and dataCapture (each tier asked for),
    as both operator kinds take them."""
    body: KubeObject = {}
    if tls is not None:
        config: KubeObject = {}
        if tls.acm_certificate_arn is not None:
            config["customCertificateConfig"] = {
                "acmArn": tls.acm_certificate_arn,
                "domainName": tls.domain_name,
            }
        if tls.certificate_s3_uri is not None:
            config["tlsCertificateOutputS3Uri"] = tls.certificate_s3_uri
        body["tlsConfig"] = config
        if tls.hosted_zone_id is not None:
            body["dnsConfig"] = {"hostedZoneId": tls.hosted_zone_id}
    if capture is not None:
        tier: KubeObject = {
            "enabled": True,
            "initialSamplingPercentage": capture.sampling_percentage,
            "captureOptions": [{"captureMode": mode} for mode in capture.capture],
        }
        if capture.kms_key_id is not None:
            tier["kmsKeyId"] = capture.kms_key_id
        data: KubeObject = {"s3Uri": capture.s3_uri} if capture.s3_uri else {}
        if capture.sagemaker_endpoint:
            data["sagemakerEndpoint"] = tier
        if capture.load_balancer:
            data["loadBalancer"] = {"enabled": True}
        if capture.model_pod:
            data["modelPod"] = tier
        body["dataCapture"] = data
    return body


def _cache_and_routing(kv_cache: KvCacheSpec | None, strategy: str | None) -> KubeObject:
    """kvCacheSpec (L1 on the instance, L2 in the tiered-storage backend) and
    intelligentRoutingSpec, as both operator kinds take them."""
    body: KubeObject = {}
    if kv_cache is not None:
        kv: KubeObject = {"enableL1Cache": kv_cache.l1, "enableL2Cache": kv_cache.l2}
        if kv_cache.l2:
            kv["l2CacheSpec"] = {"l2CacheBackend": kv_cache.l2_backend}
        body["kvCacheSpec"] = kv
    if strategy is not None:
        body["intelligentRoutingSpec"] = {"enabled": True, "routingStrategy": strategy}
    return body


def endpoint_config(spec: EndpointSpec) -> KubeObject:
    """An InferenceEndpointConfig for the HyperPod inference operator."""
    managed = spec.managed
    assert managed is not None
    source = managed.model_source
    source_config: KubeObject = {"modelSourceType": source.type}
    if source.type == "s3":
        source_config["s3Storage"] = {
            "bucketName": source.s3_bucket,
            "region": source.region or "us-east-1",
        }
    elif source.type == "fsx":
        fsx: KubeObject = {"fileSystemId": source.fsx_file_system_id}
        if source.fsx_mount_name:
            fsx["mountName"] = source.fsx_mount_name
        source_config["fsxStorage"] = fsx
    else:
        source_config["huggingFaceModel"] = {"modelId": source.hf_model_id}
    if source.model_location:
        source_config["modelLocation"] = source.model_location
    amounts = spec.accelerators()
    body: KubeObject = {
        "modelName": managed.model_name,
        "endpointName": spec.name,
        **(
            {"instanceTypes": spec.instance_types()}
            if spec.fallback_instance_types
            else {"instanceType": spec.instance_type}
        ),
        "replicas": spec.replicas,
        "modelSourceConfig": source_config,
        "worker": {
            "image": (spec.container.image_or_default() if spec.container else "")
            or "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124",
            "modelInvocationPort": {"containerPort": 8080, "name": "http"},
            "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
            "resources": {"requests": dict(amounts), "limits": dict(amounts)},
            "environmentVariables": [
                {"name": "OPTION_ROLLING_BATCH", "value": "vllm"},
                {"name": "SM_MODEL_ID", "value": managed.model_name},
            ],
        },
        "loadBalancer": {"healthCheckPath": managed.health_check_path},
        "metrics": {"enabled": managed.metrics},
    }
    body.update(_cache_and_routing(managed.kv_cache, managed.routing_strategy))
    body.update(_tls_and_capture(managed.tls, managed.data_capture))
    if managed.disaggregation is not None:
        body["pdSpec"] = _pd_spec(spec, managed.disaggregation)
    scaling = _autoscaling(spec)
    if scaling is not None:
        body["autoScalingSpec"] = scaling
    return {
        "apiVersion": INFERENCE_API,
        "kind": "InferenceEndpointConfig",
        "metadata": _meta(spec, spec.name),
        "spec": body,
    }


def jumpstart_model(spec: EndpointSpec) -> KubeObject:
    js = spec.jumpstart
    assert js is not None
    model: KubeObject = {"modelId": js.model_id, "acceptEula": js.accept_eula}
    if js.model_version:
        model["modelVersion"] = js.model_version
    return {
        "apiVersion": INFERENCE_API,
        "kind": "JumpStartModel",
        "metadata": _meta(spec, spec.name),
        "spec": {
            "model": model,
            "server": {"instanceType": spec.instance_type},
            "replicas": spec.replicas,
            "sageMakerEndpoint": {"name": spec.name},
            **_cache_and_routing(js.kv_cache, js.routing_strategy),
            **_tls_and_capture(js.tls, js.data_capture),
        },
    }


def render(spec: EndpointSpec) -> list[KubeObject]:
    """Every object of the endpoint, in the order they are applied."""
    if spec.kind == "managed":
        return [endpoint_config(spec)]
    if spec.kind == "jumpstart":
        return [jumpstart_model(spec)]
    if spec.kind == "sglang":
        objects = [worker_deployment(spec), *_router_objects(spec)]
        if spec.autoscaling is not None:
            objects.append(scaled_object(spec))
        return objects
    objects = [worker_deployment(spec)]
    if spec.autoscaling is not None:
        objects.append(scaled_object(spec))
    if spec.service != "model_pool":
        objects.append(
            _service(
                spec,
                spec.name,
                _worker_labels(spec),
                serving_port(spec),
                external=spec.service == "external",
            )
        )
    return objects


def ref(obj: KubeObject) -> dict[str, str]:
    return {"api_version": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"]}


def scale_target(spec: EndpointSpec) -> tuple[str, str, str]:
    """(apiVersion, kind, name) of the object whose replicas `scale` changes."""
    if spec.kind == "managed":
        return INFERENCE_API, "InferenceEndpointConfig", spec.name
    if spec.kind == "jumpstart":
        return INFERENCE_API, "JumpStartModel", spec.name
    return "apps/v1", "Deployment", workers_name(spec)
