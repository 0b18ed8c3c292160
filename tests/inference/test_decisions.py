"""The pure decisions: rendered objects, the plan from actual state (noop when it matches),
the rules that need the cluster, and the status read from the objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inference_svc.domain.plan import (
    ClusterFacts,
    assign_plan,
    delete_plan,
    deploy_plan,
    differences,
    scale_plan,
)
from inference_svc.domain.render import render
from inference_svc.domain.status import observe_deployment, observe_operator
from shared.contracts.inference import EndpointSpec
from shared.errors import PermanentError

TYPE = "ml.g5.8xlarge"


def make(**overrides: Any) -> EndpointSpec:
    body: dict[str, Any] = {
        "name": "chat",
        "instance_type": TYPE,
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    body.update(overrides)
    return EndpointSpec.model_validate(body)


def facts(
    actual: list[dict[str, Any]] | None = None, served: set[str] | None = None
) -> ClusterFacts:
    return ClusterFacts(
        cluster="c1",
        gpus_by_instance_type={TYPE: 4},
        served=frozenset(served or set()),
        actual={(o["kind"], o["metadata"]["name"]): o for o in actual or []},
    )


def as_served(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the API server returns it: defaults and status added."""
    served = copy.deepcopy(obj)
    served["metadata"] |= {"uid": "u1", "resourceVersion": "7", "generation": 1}
    if served["kind"] == "Deployment":
        pod = served["spec"]["template"]["spec"]
        pod["restartPolicy"] = "Always"
        pod["containers"][0]["imagePullPolicy"] = "IfNotPresent"
        served["spec"]["strategy"] = {"type": "RollingUpdate"}
        served["status"] = {"availableReplicas": 1}
    return served


def kinds(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objects]


def test_container_endpoint_renders_a_deployment_and_its_service() -> None:
    internal, external = render(make()), render(make(service="external"))
    assert kinds(internal) == [("Deployment", "chat"), ("Service", "chat")]
    container = internal[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert container["args"][:2] == ["--model", "Qwen/Qwen3-0.6B"]
    assert internal[1]["spec"]["type"] == "ClusterIP"
    assert external[1]["spec"]["type"] == "LoadBalancer"
    assert (
        "service.beta.kubernetes.io/aws-load-balancer-scheme"
        in external[1]["metadata"]["annotations"]
    )


def test_a_pool_selects_its_workers_by_pool_and_starts_them_unassigned() -> None:
    (deployment,) = render(make(service="model_pool", replicas=2))
    assert deployment["spec"]["selector"]["matchLabels"] == {"hyperpilot.dev/pool": "chat"}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["hyperpilot.dev/model"] == "unassigned"


def test_sglang_renders_router_rbac_and_scaled_object() -> None:
    spec = make(
        kind="sglang",
        container={"engine": "sglang", "model": "m"},
        autoscaling={"min_replicas": 1, "max_replicas": 3, "requests_per_replica": 5},
    )
    objects = render(spec)
    assert kinds(objects) == [
        ("Deployment", "chat-workers"),
        ("ServiceAccount", "chat-router"),
        ("Role", "chat-router"),
        ("RoleBinding", "chat-router"),
        ("Deployment", "chat-router"),
        ("Service", "chat"),
        ("ScaledObject", "chat"),
    ]
    assert "replicas" not in objects[0]["spec"]  # KEDA owns the workers' replicas
    scaled = objects[-1]["spec"]
    assert scaled["scaleTargetRef"]["name"] == "chat-workers"
    assert [t["metadata"]["threshold"] for t in scaled["triggers"]] == ["5", "5"]


def test_managed_renders_an_inference_endpoint_config_with_its_required_fields() -> None:
    (config,) = render(
        make(
            kind="managed",
            container=None,
            managed={
                "model_name": "m",
                "model_source": {"type": "huggingface", "hf_model_id": "Qwen/Qwen3-0.6B"},
                "kv_cache": {"l2": True},
                "routing_strategy": "kvaware",
            },
        )
    )
    body = config["spec"]
    assert {"modelName", "modelSourceConfig", "worker"} <= set(body)
    assert {"image", "modelInvocationPort", "modelVolumeMount", "resources"} <= set(body["worker"])
    assert body["modelSourceConfig"]["huggingFaceModel"] == {"modelId": "Qwen/Qwen3-0.6B"}
    assert body["kvCacheSpec"]["l2CacheSpec"] == {"l2CacheBackend": "tieredstorage"}
    assert body["intelligentRoutingSpec"] == {"enabled": True, "routingStrategy": "kvaware"}


def test_deploy_plan_applies_what_is_missing_and_nothing_when_actual_matches() -> None:
    spec = make()
    first = deploy_plan(spec, facts())
    assert not first.noop and len(first.objects) == 2
    same = deploy_plan(spec, facts([as_served(o) for o in render(spec)]))
    assert same.noop and same.objects == [] and same.diff == {}


def test_deploy_plan_diff_names_only_the_changed_field() -> None:
    actual = [as_served(o) for o in render(make())]
    plan = deploy_plan(make(replicas=3), facts(actual))
    assert [o.kind for o in plan.objects] == ["Deployment"]
    assert plan.diff["Deployment/chat.spec.replicas"].model_dump() == {"actual": 1, "requested": 3}


@pytest.mark.parametrize(
    ("spec", "served", "field"),
    [
        (make(instance_type="ml.p5.48xlarge"), set(), "instance_type"),
        (make(gpus=8), set(), "gpus"),
        (
            make(kind="jumpstart", container=None, jumpstart={"model_id": "m"}),
            {"ScaledObject"},
            "kind",
        ),
        (
            make(
                kind="sglang",
                container={"engine": "sglang", "model": "m"},
                autoscaling={"min_replicas": 1},
            ),
            set(),
            "autoscaling",
        ),
    ],
)
def test_rules_on_actual_state_name_the_field(
    spec: EndpointSpec, served: set[str], field: str
) -> None:
    with pytest.raises(PermanentError) as info:
        deploy_plan(spec, facts(served=served))
    assert info.value.code == "InvalidEndpoint"
    assert info.value.message.startswith(f"{field}: ") and info.value.hint


def test_a_vllm_endpoint_scales_on_qps_queue_and_gpu_utilization() -> None:
    spec = make(
        autoscaling={
            "max_replicas": 6,
            "requests_per_second": 2,
            "rate_window_seconds": 30,
            "gpu_utilization": 70,
        }
    )
    deployment, scaled, service = render(spec)
    assert "replicas" not in deployment["spec"] and service["kind"] == "Service"
    assert scaled["kind"] == "ScaledObject"
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "chat",
    }
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 6)
    triggers = {t["name"]: t["metadata"] for t in scaled["spec"]["triggers"]}
    labels = 'namespace="default",endpoint="chat"'
    assert {name: (t["query"], t["threshold"]) for name, t in triggers.items()} == {
        "requests-per-replica": (f"sum(vllm:num_requests_running{{{labels}}})", "10"),
        "queue-depth": (f"sum(vllm:num_requests_waiting{{{labels}}})", "5"),
        "requests-per-second": (f"sum(rate(vllm:request_success_total{{{labels}}}[30s]))", "2"),
        "gpu-utilization": (
            'sum(DCGM_FI_DEV_GPU_UTIL{namespace="default",pod=~"chat-.*"})',
            "70",
        ),
    }
    sglang = make(container={"engine": "sglang", "model": "m"}, autoscaling={})
    worker = render(sglang)[0]["spec"]["template"]["spec"]["containers"][0]
    assert "--enable-metrics" in worker["args"]
    with pytest.raises(PermanentError, match="KEDA scales"):
        scale_plan(spec, "c1", as_served(deployment), 2)
    with pytest.raises(PermanentError, match="autoscaling: KEDA is not installed"):
        deploy_plan(spec, facts())
    notes = deploy_plan(spec, facts(served={"ScaledObject"})).notes
    assert any("DCGM_FI_DEV_GPU_UTIL" in note for note in notes)


def test_the_sglang_router_rate_trigger_counts_the_router() -> None:
    spec = make(
        kind="sglang",
        container={"engine": "sglang", "model": "m"},
        autoscaling={"requests_per_second": 4},
    )
    scaled = render(spec)[-1]
    rate = next(t for t in scaled["spec"]["triggers"] if t["name"] == "requests-per-second")
    assert rate["metadata"]["query"] == (
        'sum(rate(sgl_router_requests_total{namespace="default",endpoint="chat",role="router"}'
        "[60s]))"
    )


def test_several_instance_types_are_required_as_a_set_and_preferred_in_order() -> None:
    spec = make(fallback_instance_types=["ml.g6.12xlarge", "ml.p4d.24xlarge"])
    pod = render(spec)[0]["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    affinity = pod["affinity"]["nodeAffinity"]
    required = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    key = "node.kubernetes.io/instance-type"
    assert required == [
        {
            "matchExpressions": [
                {
                    "key": key,
                    "operator": "In",
                    "values": [TYPE, "ml.g6.12xlarge", "ml.p4d.24xlarge"],
                }
            ]
        }
    ]
    preferred = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert [(p["weight"], p["preference"]["matchExpressions"][0]["values"]) for p in preferred] == [
        (100, [TYPE]),
        (80, ["ml.g6.12xlarge"]),
        (60, ["ml.p4d.24xlarge"]),
    ]
    managed = make(
        kind="managed",
        container=None,
        fallback_instance_types=["ml.g6.12xlarge"],
        managed={"model_name": "m", "model_source": {"type": "s3", "s3_bucket": "models"}},
    )
    (config,) = render(managed)
    assert config["spec"]["instanceTypes"] == [TYPE, "ml.g6.12xlarge"]
    assert "instanceType" not in config["spec"]


def test_every_instance_type_of_the_list_is_checked_against_the_cluster() -> None:
    cluster = ClusterFacts(
        cluster="c1", gpus_by_instance_type={TYPE: 4, "ml.g5.xlarge": 1}, served=frozenset()
    )
    assert not deploy_plan(make(fallback_instance_types=["ml.g5.xlarge"]), cluster).noop
    with pytest.raises(PermanentError) as info:
        deploy_plan(make(fallback_instance_types=["ml.g5.xlarge", "ml.g6.2xlarge"]), cluster)
    assert info.value.message.startswith("fallback_instance_types.1: ml.g6.2xlarge is not")
    assert "ml.g5.8xlarge, ml.g5.xlarge" in str(info.value.hint)
    with pytest.raises(PermanentError) as info:
        deploy_plan(make(gpus=2, fallback_instance_types=["ml.g5.xlarge"]), cluster)
    assert info.value.message.startswith("fallback_instance_types.0: 2 GPUs per replica exceed")


ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


def test_managed_tls_dns_data_capture_and_cloudwatch_triggers_render_into_the_config() -> None:
    spec = make(
        kind="managed",
        container=None,
        managed={
            "model_name": "m",
            "model_source": {"type": "s3", "s3_bucket": "models"},
            "autoscaling": {"min_replicas": 1, "max_replicas": 4},
            "tls": {
                "acm_certificate_arn": ARN,
                "domain_name": "chat.example.com",
                "hosted_zone_id": "Z0123456789ABC",
            },
            "data_capture": {
                "s3_uri": "s3://captures/chat",
                "load_balancer": True,
                "capture": ["Input"],
                "sampling_percentage": 20,
            },
            "cloudwatch_triggers": [
                {
                    "name": "invocations",
                    "namespace": "AWS/SageMaker",
                    "metric_name": "Invocations",
                    "dimensions": {"EndpointName": "chat", "VariantName": "AllTraffic"},
                    "target_value": 100,
                    "stat": "Sum",
                }
            ],
        },
    )
    (config,) = render(spec)
    body = config["spec"]
    assert body["tlsConfig"] == {
        "customCertificateConfig": {"acmArn": ARN, "domainName": "chat.example.com"}
    }
    assert body["dnsConfig"] == {"hostedZoneId": "Z0123456789ABC"}
    assert body["dataCapture"] == {
        "s3Uri": "s3://captures/chat",
        "loadBalancer": {"enabled": True},
        "modelPod": {
            "enabled": True,
            "initialSamplingPercentage": 20,
            "captureOptions": [{"captureMode": "Input"}],
        },
    }
    assert body["autoScalingSpec"]["cloudWatchTriggerList"] == [
        {
            "name": "invocations",
            "namespace": "AWS/SageMaker",
            "metricName": "Invocations",
            "dimensions": [
                {"name": "EndpointName", "value": "chat"},
                {"name": "VariantName", "value": "AllTraffic"},
            ],
            "targetValue": 100.0,
            "metricStat": "Sum",
            "metricType": "Average",
            "metricCollectionPeriod": 300,
        }
    ]
    assert "prometheusTrigger" in body["autoScalingSpec"]
    jumpstart = make(
        kind="jumpstart",
        container=None,
        jumpstart={
            "model_id": "m",
            "tls": {"certificate_s3_uri": "s3://certs/js"},
            "data_capture": {"sagemaker_endpoint": True, "model_pod": False},
        },
    )
    js = render(jumpstart)[0]["spec"]
    assert js["tlsConfig"] == {"tlsCertificateOutputS3Uri": "s3://certs/js"}
    assert "dnsConfig" not in js
    assert list(js["dataCapture"]) == ["sagemakerEndpoint"]


def disaggregated(**pd: Any) -> EndpointSpec:
    return make(
        kind="managed",
        container=None,
        gpus=2,
        managed={
            "model_name": "m",
            "model_source": {"type": "s3", "s3_bucket": "models"},
            "disaggregation": pd,
        },
    )


def test_disaggregated_prefill_and_decode_render_into_pd_spec() -> None:
    spec = disaggregated(
        prefill={"replicas": 2, "args": ["--max-num-seqs", "16"]},
        decode={"replicas": 3, "gpus": 4},
        routing_threshold=0,
    )
    (config,) = render(spec)
    key = "node.kubernetes.io/instance-type"
    assert config["spec"]["pdSpec"] == {
        "prefillSpec": {
            "replicas": 2,
            "resources": {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}},
            "args": ["--max-num-seqs", "16"],
            "nodeSelector": {key: TYPE},
        },
        "decodingSpec": {
            "replicas": 3,
            "resources": {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}},
            "nodeSelector": {key: TYPE},
        },
        "routingThreshold": 0,
        "topologySpec": {"sameAZ": True},
    }
    assert not deploy_plan(spec, facts(served={"InferenceEndpointConfig"})).noop
    with pytest.raises(PermanentError) as info:
        deploy_plan(disaggregated(decode={"gpus": 8}), facts(served={"InferenceEndpointConfig"}))
    assert info.value.message.startswith("managed.disaggregation.decode.gpus: 8 GPUs")


def test_scale_plan() -> None:
    spec = make()
    deployment = as_served(render(spec)[0])
    assert scale_plan(spec, "c1", deployment, 1).noop
    plan = scale_plan(spec, "c1", deployment, 3)
    assert plan.diff["replicas"].model_dump() == {"actual": 1, "requested": 3}
    assert plan.objects[0].body == {"spec": {"replicas": 3}}
    keda = make(kind="sglang", container={"engine": "sglang", "model": "m"}, autoscaling={})
    with pytest.raises(PermanentError, match="KEDA scales"):
        scale_plan(keda, "c1", deployment, 2)
    with pytest.raises(PermanentError) as info:
        scale_plan(spec, "c1", None, 2)
    assert info.value.code == "EndpointNotFound"


def pod(model: str, pool: str = "chat") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "chat-abc",
            "uid": "u",
            "labels": {"hyperpilot.dev/pool": pool, "hyperpilot.dev/model": model},
        }
    }


def test_assign_plan_relabels_once_and_makes_the_model_service() -> None:
    spec = make(service="model_pool", replicas=2)
    plan = assign_plan(spec, "c1", pod("unassigned"), "qwen", service_exists=False)
    assert [(o.action, o.kind) for o in plan.objects] == [("patch", "Pod"), ("apply", "Service")]
    assert plan.objects[0].body == {"metadata": {"labels": {"hyperpilot.dev/model": "qwen"}}}
    assert assign_plan(spec, "c1", pod("qwen"), "qwen", service_exists=True).noop
    back = assign_plan(spec, "c1", pod("qwen"), None, service_exists=False)
    assert back.objects[0].body == {"metadata": {"labels": {"hyperpilot.dev/model": "unassigned"}}}
    with pytest.raises(PermanentError, match="not a worker of pool"):
        assign_plan(spec, "c1", pod("qwen", pool="other"), "m", service_exists=True)
    with pytest.raises(PermanentError, match="not a model pool"):
        assign_plan(make(), "c1", pod("qwen"), "m", service_exists=True)


def test_delete_plan_deletes_in_reverse_order_and_is_a_noop_when_gone() -> None:
    spec = make()
    plan = delete_plan(spec, "c1", render(spec))
    assert [o.kind for o in plan.objects] == ["Service", "Deployment"]
    assert delete_plan(spec, "c1", []).noop


def test_differences_ignores_fields_the_server_added() -> None:
    assert differences({"a": 1, "b": [{"x": 1, "y": 2}]}, {"b": [{"x": 1}]}) == []
    assert differences({"a": "1"}, {"a": 1}) == []
    assert differences({"a": [1]}, {"a": [1, 2]}) == [("a", [1], [1, 2])]


def test_status_from_a_deployment_and_from_the_operator() -> None:
    deployment = {"spec": {"replicas": 2}, "status": {"availableReplicas": 1}}
    assert observe_deployment(deployment, [], None, external=False).status == "deploying"
    deployment["status"]["availableReplicas"] = 2
    assert observe_deployment(deployment, [], None, external=False).status == "available"
    assert observe_deployment(deployment, [], {"status": {}}, external=True).status == "deploying"
    lb = {"status": {"loadBalancer": {"ingress": [{"hostname": "a.elb.amazonaws.com"}]}}}
    seen = observe_deployment(deployment, [], lb, external=True)
    assert (seen.status, seen.address) == ("available", "a.elb.amazonaws.com")
    stuck = {
        "metadata": {"name": "p"},
        "status": {"containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
    }
    deployment["status"]["availableReplicas"] = 0
    assert "ImagePullBackOff" in (
        observe_deployment(deployment, [stuck], None, False).message or ""
    )
    assert observe_deployment(None, [], None, False).status == "failed"
    # while a deploy is applying its objects, a missing Deployment is progress
    assert observe_deployment(None, [], None, False, creating=True).status == "deploying"
    assert observe_operator(None).status == "failed"
    assert observe_operator(None, creating=True).status == "deploying"
    complete = {"spec": {"replicas": 1}, "status": {"state": "DeploymentComplete"}}
    assert observe_operator(complete).status == "available"
    assert (
        observe_operator({"spec": {}, "status": {"state": "DeploymentInProgress"}}).status
        == "deploying"
    )


def test_a_redeploy_deletes_what_the_new_spec_no_longer_makes() -> None:
    actual = [as_served(o) for o in render(make())]
    recorded = [
        {"api_version": "apps/v1", "kind": "Deployment", "name": "chat"},
        {"api_version": "v1", "kind": "Service", "name": "chat"},
    ]
    sglang = make(kind="sglang", container={"engine": "sglang", "model": "m"})
    plan = deploy_plan(
        sglang,
        ClusterFacts(
            cluster="c1",
            gpus_by_instance_type={TYPE: 4},
            served=frozenset(),
            actual={("Service", "chat"): actual[1]},
            recorded=[recorded[0]],
        ),
    )
    assert ("delete", "Deployment", "chat") in [(o.action, o.kind, o.name) for o in plan.objects]
    assert ("apply", "Deployment", "chat-workers") in [
        (o.action, o.kind, o.name) for o in plan.objects
    ]
    assert plan.diff["Deployment/chat"].model_dump() == {
        "actual": "present",
        "requested": "deleted",
    }


def test_a_new_worker_selector_is_refused_with_the_way_out() -> None:
    actual = [as_served(o) for o in render(make())]
    with pytest.raises(PermanentError) as info:
        deploy_plan(make(service="model_pool"), facts(actual))
    assert info.value.message.startswith("service: ") and "DELETE" in (info.value.hint or "")


def test_jumpstart_takes_the_same_cache_and_routing_options() -> None:
    (model,) = render(
        make(
            kind="jumpstart",
            container=None,
            jumpstart={
                "model_id": "deepseek-llm-r1-distill-qwen-1-5b",
                "accept_eula": True,
                "kv_cache": {"l1": True},
                "routing_strategy": "session",
            },
        )
    )
    assert model["kind"] == "JumpStartModel"
    assert model["spec"]["model"] == {
        "modelId": "deepseek-llm-r1-distill-qwen-1-5b",
        "acceptEula": True,
    }
    assert model["spec"]["kvCacheSpec"] == {"enableL1Cache": True, "enableL2Cache": False}
    assert model["spec"]["intelligentRoutingSpec"]["routingStrategy"] == "session"
