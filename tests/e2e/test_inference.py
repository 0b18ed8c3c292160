"""Inference endpoints through REST against the real stack and the simulated world: each path
deploys to Available with the expected objects (checked with kubectl), a model-pool worker moves
between models by its label without a restart, the SGLang router's KEDA ScaledObject carries the
router's triggers, KEDA scales a vLLM endpoint up and down as its request rate through the
gateway crosses the per-worker target, and an invoke through the gateway returns a simulated
model server's answer."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack

MODEL = "Qwen/Qwen3-0.6B"
ACM_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"


def _kubeconfig(sim: SimulatedAws, cluster: str, path: Path) -> Path:
    """A kubeconfig made the normal way: endpoint + CA from describe_cluster, an EKS token."""
    import boto3

    from inference_svc.adapters.k8s import _token

    described = aws_client(sim, "eks").describe_cluster(name=cluster)["cluster"]
    token = _token(boto3.session.Session(region_name="us-east-1"), cluster, "us-east-1")
    base64.b64decode(described["certificateAuthority"]["data"])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": described["endpoint"],
                    "certificate-authority-data": described["certificateAuthority"]["data"],
                },
            }
        ],
        "users": [{"name": "me", "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "me"}}],
        "current-context": cluster,
    }
    path.write_text(json.dumps(config))
    return path


def _kubectl(config: Path, *args: str) -> Any:
    kubectl = Path(sys.executable).parent / "kubectl"
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(config), *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def kube(
    created_cluster: tuple[RunningStack, str],
    sim_aws: SimulatedAws,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    _, name = created_cluster
    return _kubeconfig(sim_aws, name, tmp_path_factory.mktemp("kube") / "config")


def _deploy(api: Client, cluster: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = api.post("/api/v1/endpoints", body, params={"cluster": cluster})
    assert answer.status_code == 202, answer.text
    accepted: dict[str, Any] = answer.json()
    op = api.wait(accepted["operation_id"], timeout=90)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)
    return accepted


def _delete(api: Client, cluster: str, name: str) -> None:
    answer = api.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=60)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)


def _vllm(name: str, instance_type: str, service: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "instance_type": instance_type,
        "gpus": 1,
        "replicas": replicas,
        "service": service,
        "container": {"engine": "vllm", "model": MODEL},
    }


def _instance_type(api: Client, cluster: str) -> str:
    described = api.get(f"/api/v1/clusters/{cluster}").json()
    return str(described["spec"]["instance_groups"][0]["instance_type"])


def test_vllm_internal_deploys_answers_and_is_deleted(
    created_cluster: tuple[RunningStack, str], kube: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    instance_type = _instance_type(api, cluster)
    body = _vllm("chat", instance_type, "internal")

    plan = api.post("/api/v1/endpoints", body, params={"cluster": cluster, "dry_run": "true"})
    assert plan.status_code == 200, plan.text
    planned = plan.json()["plan"]
    assert planned["noop"] is False
    assert {(o["kind"], o["name"]) for o in planned["objects"]} == {
        ("Deployment", "chat"),
        ("Service", "chat"),
    }

    accepted = _deploy(api, cluster, body)
    assert accepted["noop"] is False and "Deployment/chat" in accepted["diff"]

    deployment = _kubectl(kube, "get", "deployment", "chat", "-n", "default")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("vllm/vllm-openai")
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {
        "node.kubernetes.io/instance-type": instance_type
    }
    assert deployment["status"]["availableReplicas"] == 1
    service = _kubectl(kube, "get", "service", "chat", "-n", "default")
    assert service["spec"]["type"] == "ClusterIP"

    described = api.get("/api/v1/endpoints/chat", params={"cluster": cluster}).json()
    assert described["status"] == "available"
    assert described["live"]["status"] == "available"
    assert [p["ready"] for p in described["live"]["pods"]] == [True]
    listed = api.get("/api/v1/endpoints", params={"cluster": cluster}).json()
    assert [e["name"] for e in listed] == ["chat"]

    # The same spec again: nothing to apply, the operation is a noop.
    again = api.post("/api/v1/endpoints", body, params={"cluster": cluster})
    assert again.status_code == 202 and again.json()["noop"] is True
    assert api.wait(again.json()["operation_id"])["status"] == "noop"

    # Invoke through the gateway reaches the simulated vLLM server.
    answer = api.post(
        "/api/v1/endpoints/chat/invoke",
        {"model": MODEL, "messages": [{"role": "user", "content": "Say hello"}]},
        params={"cluster": cluster},
    )
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["object"] == "chat.completion"
    assert reply["model"] == MODEL
    assert reply["choices"][0]["message"]["content"]

    # PATCH carries only what changes; the diff names that field alone, and again is a noop.
    patch = {"container": {"env": {"VLLM_LOGGING_LEVEL": "DEBUG"}}}
    changed = api.http.patch("/api/v1/endpoints/chat", json=patch, params={"cluster": cluster})
    assert changed.status_code == 202, changed.text
    assert list(changed.json()["diff"]) == ["Deployment/chat.spec.template.spec.containers[0].env"]
    assert api.wait(changed.json()["operation_id"])["status"] == "succeeded"
    env = _kubectl(kube, "get", "deployment", "chat", "-n", "default")["spec"]["template"]["spec"][
        "containers"
    ][0]["env"]
    assert env == [{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}]
    same = api.http.patch("/api/v1/endpoints/chat", json=patch, params={"cluster": cluster})
    assert same.json()["noop"] is True and api.wait(same.json()["operation_id"])["status"] == "noop"
    bad = api.http.patch(
        "/api/v1/endpoints/chat", json={"container": {"port": 10250}}, params={"cluster": cluster}
    )
    assert _field(bad)["field"] == "container.port"

    # A model pool selects its workers differently: refused in place, with the way out.
    field = _field(
        api.post(
            "/api/v1/endpoints",
            _vllm("chat", instance_type, "model_pool"),
            params={"cluster": cluster},
        )
    )
    assert field["field"] == "service" and "DELETE /api/v1/endpoints/chat" in field["hint"]

    _delete(api, cluster, "chat")
    assert api.get("/api/v1/endpoints/chat", params={"cluster": cluster}).status_code == 404
    gone = _kubectl(
        kube, "get", "deployments", "-n", "default", "-l", "hyperpilot.dev/endpoint=chat"
    )
    assert gone["items"] == []


def _field(answer: Any) -> dict[str, Any]:
    assert answer.status_code == 422, answer.text
    fields: list[dict[str, Any]] = answer.json()["error"]["fields"]
    assert len(fields) == 1, fields
    return fields[0]


def test_rules_name_the_field_and_the_way_out(created_cluster: tuple[RunningStack, str]) -> None:
    stack, cluster = created_cluster
    api = stack.client
    instance_type = _instance_type(api, cluster)
    params = {"cluster": cluster}

    no_gpus = _vllm("rules", instance_type, "internal")
    del no_gpus["gpus"]
    no_gpus["container"]["args"] = ["--tensor-parallel-size", "2"]
    field = _field(api.post("/api/v1/endpoints", no_gpus, params=params))
    assert field["field"] == "gpus" and "never inferred" in field["message"]
    assert "tensor-parallel size 2" in field["message"] and field["hint"]

    too_few = _vllm("rules", instance_type, "internal")
    too_few["container"]["args"] = ["--tensor-parallel-size=2"]
    field = _field(api.post("/api/v1/endpoints", too_few, params=params))
    assert field["field"] == "gpus" and "at least 2" in field["hint"]

    mismatch = _vllm("rules", instance_type, "internal")
    mismatch["container"]["image"] = "lmsysorg/sglang:v0.5.2-cu126"
    field = _field(api.post("/api/v1/endpoints", mismatch, params=params))
    assert field["field"] == "container" and "use engine sglang" in field["hint"]

    reserved = _vllm("rules", instance_type, "internal")
    reserved["container"]["port"] = 10250
    assert (
        _field(api.post("/api/v1/endpoints", reserved, params=params))["field"] == "container.port"
    )

    elsewhere = _vllm("rules", "ml.p5.48xlarge", "internal")
    field = _field(api.post("/api/v1/endpoints", elsewhere, params=params))
    assert field["field"] == "instance_type" and instance_type in field["hint"]
    # The same refusal for a dry run; nothing was recorded.
    field = _field(api.post("/api/v1/endpoints", elsewhere, params=params | {"dry_run": "true"}))
    assert field["field"] == "instance_type"
    assert api.get("/api/v1/endpoints/rules", params=params).status_code == 404
    # Every type of a preference list is one of the cluster's.
    fallback = _vllm("rules", instance_type, "internal")
    fallback["fallback_instance_types"] = ["ml.p5.48xlarge"]
    field = _field(api.post("/api/v1/endpoints", fallback, params=params | {"dry_run": "true"}))
    assert field["field"] == "fallback_instance_types.0" and instance_type in field["hint"]


def test_external_endpoint_scales_and_reports_its_load_balancer(
    created_cluster: tuple[RunningStack, str], kube: Path, sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    _deploy(api, cluster, _vllm("public", _instance_type(api, cluster), "external"))
    service = _kubectl(kube, "get", "service", "public", "-n", "default")
    assert service["spec"]["type"] == "LoadBalancer"
    hostname = service["status"]["loadBalancer"]["ingress"][0]["hostname"]
    described = api.get("/api/v1/endpoints/public", params=params).json()
    assert described["address"] == hostname

    scale = api.post("/api/v1/endpoints/public/scale", {"replicas": 2}, params=params)
    assert scale.status_code == 202, scale.text
    assert scale.json()["diff"] == {"replicas": {"actual": 1, "requested": 2}}
    assert api.wait(scale.json()["operation_id"])["status"] == "succeeded"
    deployment = _kubectl(kube, "get", "deployment", "public", "-n", "default")
    assert deployment["spec"]["replicas"] == 2 and deployment["status"]["availableReplicas"] == 2
    again = api.post("/api/v1/endpoints/public/scale", {"replicas": 2}, params=params)
    assert again.json()["noop"] is True
    assert api.wait(again.json()["operation_id"])["status"] == "noop"

    # The status watcher reports what happens afterwards: a replaced worker that cannot pull
    # its image degrades the endpoint; once the image pulls again it is available.
    after = max([e["seq"] for e in api.get("/api/v1/events", params={"limit": 1000}).json()] + [0])
    world = sim_aws.ctx.kube
    assert isinstance(world, KubeWorld)
    server = world.api_server(cluster)
    server.faults.image_pull_failure("vllm/*", "manifest unknown")
    worker = _kubectl(kube, "get", "pods", "-n", "default", "-l", "hyperpilot.dev/endpoint=public")
    subprocess.run(
        [
            str(Path(sys.executable).parent / "kubectl"),
            "--kubeconfig",
            str(kube),
            "delete",
            "pod",
            "-n",
            "default",
            worker["items"][0]["metadata"]["name"],
            "--wait=false",
        ],
        check=True,
        capture_output=True,
    )
    try:
        # The replacement that cannot pull its image degrades the endpoint (the watcher's
        # message is what the pods report at that moment: pending, or the pull failure).
        degraded = _status_event(api, "public", after, lambda p: p["status"] != "available")
        assert degraded["previous"] == "available"
        server.faults.clear_image_pull_failure("vllm/*")
        recovered = _status_event(api, "public", after, lambda p: p["status"] == "available")
        assert recovered["ready_replicas"] == 2
    finally:
        # Whatever happened, free the cluster's GPUs for the tests that follow.
        server.faults.clear_image_pull_failure("vllm/*")
        _delete(api, cluster, "public")


def _status_event(
    api: Client, name: str, after: int, wanted: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    deadline = time.monotonic() + 120  # generous: the watcher polls, and CI machines are loaded
    while True:
        events = api.get("/api/v1/events", params={"after": after, "limit": 1000}).json()
        for event in events:
            payload = event["payload"]
            if (
                event["type"] == "EndpointStatusChanged"
                and payload["name"] == name
                and wanted(payload)
            ):
                return payload  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, [e["type"] for e in events]
        time.sleep(0.3)


def test_model_pool_moves_a_worker_by_its_label_without_restart(
    created_cluster: tuple[RunningStack, str], kube: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    _deploy(api, cluster, _vllm("pool", _instance_type(api, cluster), "model_pool", replicas=2))
    pods = api.get("/api/v1/endpoints/pool", params=params).json()["live"]["pods"]
    assert len(pods) == 2 and {p["model"] for p in pods} == {"unassigned"}
    worker = pods[0]["name"]
    before = _kubectl(kube, "get", "pod", worker, "-n", "default")

    assign = api.post(
        "/api/v1/endpoints/pool/pool/assign", {"pod": worker, "model": "qwen"}, params=params
    )
    assert assign.status_code == 202, assign.text
    assert assign.json()["diff"][f"pod/{worker}.labels.hyperpilot.dev/model"] == {
        "actual": "unassigned",
        "requested": "qwen",
    }
    assert api.wait(assign.json()["operation_id"])["status"] == "succeeded"
    service = _kubectl(kube, "get", "service", "pool-qwen", "-n", "default")
    assert service["spec"]["selector"] == {
        "hyperpilot.dev/pool": "pool",
        "hyperpilot.dev/model": "qwen",
    }
    answer = api.post(
        "/api/v1/endpoints/pool/v1/chat/completions",
        {"model": "qwen", "messages": [{"role": "user", "content": "hi"}]},
        params=params,
    )
    assert answer.status_code == 200, answer.text

    move = api.post(
        "/api/v1/endpoints/pool/pool/assign", {"pod": worker, "model": "llama"}, params=params
    )
    assert api.wait(move.json()["operation_id"])["status"] == "succeeded"
    after = _kubectl(kube, "get", "pod", worker, "-n", "default")
    assert after["metadata"]["labels"]["hyperpilot.dev/model"] == "llama"
    # The same pod, never restarted: only its label changed.
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert [c["restartCount"] for c in after["status"]["containerStatuses"]] == [0]
    slices = _kubectl(kube, "get", "endpoints", "pool-qwen", "-n", "default")
    assert not any(s.get("addresses") for s in slices.get("subsets") or [])
    llama = _kubectl(kube, "get", "endpoints", "pool-llama", "-n", "default")
    assert [a["targetRef"]["name"] for s in llama["subsets"] for a in s["addresses"]] == [worker]
    # A model no worker serves any more is refused with the way out.
    stale = api.post(
        "/api/v1/endpoints/pool/invoke",
        {"model": "qwen", "messages": [{"role": "user", "content": "hi"}]},
        params=params,
    )
    assert stale.status_code == 409, stale.text

    same = api.post(
        "/api/v1/endpoints/pool/pool/assign", {"pod": worker, "model": "llama"}, params=params
    )
    assert api.wait(same.json()["operation_id"])["status"] == "noop"
    unassign = api.post("/api/v1/endpoints/pool/pool/unassign", {"pod": worker}, params=params)
    assert api.wait(unassign.json()["operation_id"])["status"] == "succeeded"
    assert (
        _kubectl(kube, "get", "pod", worker, "-n", "default")["metadata"]["labels"][
            "hyperpilot.dev/model"
        ]
        == "unassigned"
    )
    _delete(api, cluster, "pool")
    services = _kubectl(
        kube, "get", "services", "-n", "default", "-l", "hyperpilot.dev/endpoint=pool"
    )
    assert services["items"] == []


def test_sglang_router_with_keda_scaled_object(
    created_cluster: tuple[RunningStack, str], kube: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    body = {
        "name": "sgl",
        "kind": "sglang",
        "instance_type": _instance_type(api, cluster),
        "gpus": 1,
        "container": {"engine": "sglang", "model": MODEL},
        "router": {"policy": "cache_aware"},
        "autoscaling": {
            "min_replicas": 1,
            "max_replicas": 2,
            "requests_per_replica": 8,
            "queue_depth": 4,
        },
    }
    _deploy(api, cluster, body)
    scaled = _kubectl(kube, "get", "scaledobject", "sgl", "-n", "default")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "sgl-workers"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 2)
    triggers = {t["name"]: t for t in scaled["spec"]["triggers"]}
    assert set(triggers) == {"requests-per-replica", "queue-depth"}
    assert {t["type"] for t in triggers.values()} == {"prometheus"}
    assert "sgl_router_running_requests" in triggers["requests-per-replica"]["metadata"]["query"]
    assert triggers["requests-per-replica"]["metadata"]["threshold"] == "8"
    assert "sgl_router_queued_requests" in triggers["queue-depth"]["metadata"]["query"]
    router = _kubectl(kube, "get", "deployment", "sgl-router", "-n", "default")
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--policy") + 1] == "cache_aware" and "--service-discovery" in args
    assert router["status"]["availableReplicas"] == 1
    workers = _kubectl(kube, "get", "deployment", "sgl-workers", "-n", "default")
    assert workers["status"]["availableReplicas"] >= 1
    # Scaling by hand is refused: KEDA owns the replicas.
    field = _field(api.post("/api/v1/endpoints/sgl/scale", {"replicas": 2}, params=params))
    assert field["field"] == "replicas"
    answer = api.post(
        "/api/v1/endpoints/sgl/v1/completions", {"model": MODEL, "prompt": "hi"}, params=params
    )
    assert answer.status_code == 200 and answer.json()["object"] == "text_completion"
    _delete(api, cluster, "sgl")


def test_keda_scales_a_vllm_endpoint_up_and_down_on_its_request_rate(
    created_cluster: tuple[RunningStack, str], kube: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    body = _vllm("qps", _instance_type(api, cluster), "internal") | {
        "autoscaling": {
            "min_replicas": 1,
            "max_replicas": 3,
            "requests_per_second": 0.5,
            "rate_window_seconds": 10,
        }
    }
    _deploy(api, cluster, body)
    scaled = _kubectl(kube, "get", "scaledobject", "qps", "-n", "default")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "qps"
    triggers = {t["name"]: t["metadata"] for t in scaled["spec"]["triggers"]}
    assert set(triggers) == {"requests-per-replica", "queue-depth", "requests-per-second"}
    assert triggers["requests-per-second"]["query"] == (
        'sum(rate(vllm:request_success_total{namespace="default",endpoint="qps"}[10s]))'
    )
    assert triggers["requests-per-second"]["threshold"] == "0.5"
    assert "vllm:num_requests_waiting" in triggers["queue-depth"]["query"]

    def replicas() -> int:
        got = _kubectl(kube, "get", "deployment", "qps", "-n", "default")
        return int(got["spec"]["replicas"])

    def wait_for(count: int, timeout: float) -> float:
        start = time.monotonic()
        while replicas() != count:
            assert time.monotonic() - start < timeout, f"replicas {replicas()}, not {count}"
            time.sleep(0.5)
        return time.monotonic() - start

    # No traffic: the minimum. 8 requests in the 10 s window is 0.8/s: 2 workers at 0.5/s each.
    assert replicas() == 1
    message = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(8):
        answer = api.post("/api/v1/endpoints/qps/invoke", message, params=params)
        assert answer.status_code == 200, answer.text
    wait_for(2, timeout=8)
    # 20 more: 2.8/s would be 6 workers, capped at max_replicas.
    for _ in range(20):
        assert api.post("/api/v1/endpoints/qps/invoke", message, params=params).status_code == 200
    wait_for(3, timeout=8)
    # The traffic stops: once the window holds no request, back to the minimum.
    wait_for(1, timeout=30)
    live = _kubectl(kube, "get", "scaledobject", "qps", "-n", "default")
    active = next(c for c in live["status"]["conditions"] if c["type"] == "Active")
    assert active["status"] == "False"
    # KEDA owns the replicas: scaling by hand is refused.
    field = _field(api.post("/api/v1/endpoints/qps/scale", {"replicas": 2}, params=params))
    assert field["field"] == "replicas"
    _delete(api, cluster, "qps")


def test_managed_paths_need_the_operator_then_deploy(
    created_cluster: tuple[RunningStack, str], kube: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    params = {"cluster": cluster}
    instance_type = _instance_type(api, cluster)
    managed = {
        "name": "managed",
        "kind": "managed",
        "instance_type": instance_type,
        "gpus": 1,
        "managed": {
            "model_name": "qwen3",
            "model_source": {"type": "s3", "s3_bucket": "my-models", "region": "us-east-1"},
            "kv_cache": {"l1": True, "l2": True},
            "routing_strategy": "prefixaware",
            "autoscaling": {"min_replicas": 1, "max_replicas": 2},
            "tls": {
                "acm_certificate_arn": ACM_ARN,
                "domain_name": "qwen.example.com",
                "hosted_zone_id": "Z0123456789ABC",
            },
            "data_capture": {"s3_uri": "s3://captures/managed", "load_balancer": True},
            "cloudwatch_triggers": [
                {
                    "name": "invocations",
                    "namespace": "AWS/SageMaker",
                    "metric_name": "Invocations",
                    "dimensions": {"EndpointName": "managed"},
                    "target_value": 50,
                    "stat": "Sum",
                }
            ],
        },
    }
    wildcard = json.loads(json.dumps(managed))
    wildcard["managed"]["tls"]["domain_name"] = "*.example.com"
    field = _field(api.post("/api/v1/endpoints", wildcard, params=params))
    assert field["field"] == "managed.tls.domain_name"
    field = _field(api.post("/api/v1/endpoints", managed, params=params))
    assert field["field"] == "kind" and '"inference_operator": true' in field["hint"]

    answer = api.http.patch(
        f"/api/v1/clusters/{cluster}/features", json={"inference_operator": True}
    )
    assert answer.status_code == 202, answer.text
    assert api.wait(answer.json()["operation_id"], timeout=90)["status"] == "succeeded"

    _deploy(api, cluster, managed)
    config = _kubectl(kube, "get", "inferenceendpointconfig", "managed", "-n", "default")
    assert config["spec"]["kvCacheSpec"] == {
        "enableL1Cache": True,
        "enableL2Cache": True,
        "l2CacheSpec": {"l2CacheBackend": "tieredstorage"},
    }
    assert config["spec"]["intelligentRoutingSpec"]["routingStrategy"] == "prefixaware"
    assert config["spec"]["modelSourceConfig"]["s3Storage"]["bucketName"] == "my-models"
    assert config["spec"]["tlsConfig"]["customCertificateConfig"] == {
        "acmArn": ACM_ARN,
        "domainName": "qwen.example.com",
    }
    assert config["spec"]["dnsConfig"] == {"hostedZoneId": "Z0123456789ABC"}
    capture = config["spec"]["dataCapture"]
    assert capture["s3Uri"] == "s3://captures/managed"
    assert capture["loadBalancer"] == {"enabled": True} and capture["modelPod"]["enabled"]
    (trigger,) = config["spec"]["autoScalingSpec"]["cloudWatchTriggerList"]
    assert (trigger["metricName"], trigger["metricStat"], trigger["targetValue"]) == (
        "Invocations",
        "Sum",
        50,
    )
    assert trigger["dimensions"] == [{"name": "EndpointName", "value": "managed"}]
    assert config["status"]["state"] == "DeploymentComplete"
    live = api.get("/api/v1/endpoints/managed", params=params).json()["live"]
    assert live["status"] == "available" and [p["ready"] for p in live["pods"]] == [True]
    answer = api.post(
        "/api/v1/endpoints/managed/invoke",
        {"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]},
        params=params,
    )
    assert answer.status_code == 200, answer.text
    _delete(api, cluster, "managed")

    # Disaggregated prefill and decode: the operator's pdSpec, one role per Deployment.
    pd = {
        "name": "pd",
        "kind": "managed",
        "instance_type": instance_type,
        "gpus": 1,
        "managed": {
            "model_name": "qwen3",
            "model_source": {"type": "s3", "s3_bucket": "my-models", "region": "us-east-1"},
            "disaggregation": {"prefill": {"replicas": 1}, "decode": {"replicas": 2}},
        },
    }
    too_big = json.loads(json.dumps(pd))
    too_big["managed"]["disaggregation"]["decode"]["gpus"] = 8
    field = _field(api.post("/api/v1/endpoints", too_big, params=params | {"dry_run": "true"}))
    assert field["field"] == "managed.disaggregation.decode.gpus"
    _deploy(api, cluster, pd)
    config = _kubectl(kube, "get", "inferenceendpointconfig", "pd", "-n", "default")
    roles = config["spec"]["pdSpec"]
    assert (roles["prefillSpec"]["replicas"], roles["decodingSpec"]["replicas"]) == (1, 2)
    assert roles["decodingSpec"]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert roles["routingThreshold"] == 4096 and roles["topologySpec"] == {"sameAZ": True}
    assert config["status"]["state"] == "DeploymentComplete"
    _delete(api, cluster, "pd")

    jumpstart = {
        "name": "js",
        "kind": "jumpstart",
        "instance_type": instance_type,
        "gpus": 1,
        "jumpstart": {
            "model_id": "deepseek-llm-r1-distill-qwen-1-5b",
            "accept_eula": True,
            "routing_strategy": "kvaware",
            "tls": {"certificate_s3_uri": "s3://certs/js"},
            "data_capture": {"sagemaker_endpoint": True},
        },
    }
    _deploy(api, cluster, jumpstart)
    model = _kubectl(kube, "get", "jumpstartmodel", "js", "-n", "default")
    assert model["spec"]["server"]["instanceType"] == instance_type
    assert model["spec"]["intelligentRoutingSpec"] == {
        "enabled": True,
        "routingStrategy": "kvaware",
    }
    assert model["spec"]["tlsConfig"] == {"tlsCertificateOutputS3Uri": "s3://certs/js"}
    assert set(model["spec"]["dataCapture"]) == {"sagemakerEndpoint", "modelPod"}
    assert model["status"]["state"] == "DeploymentComplete"
    _delete(api, cluster, "js")
