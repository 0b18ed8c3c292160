"""The inference Kubernetes adapter against the emulator, with the official client and an EKS
token: rendered objects are accepted, a pod label is merge-patched, Services are listed, and a
request reaches a simulated model server through the API server's service proxy."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator

import pytest

from inference_svc.adapters.k8s import ClusterEndpoint, InferenceKube, KubeClients
from inference_svc.domain.render import render
from shared.contracts.inference import EndpointSpec
from shared.errors import PermanentError
from sim.k8s import KubeWorld
from sim.profile import get_profile


@pytest.fixture(scope="module")
def world() -> Iterator[KubeWorld]:
    kube = KubeWorld(get_profile("fast"))
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def kube(world: KubeWorld) -> Iterator[InferenceKube]:
    endpoint = world.start_cluster("inf")
    clients = KubeClients("us-east-1")
    yield clients(
        ClusterEndpoint(
            "inf", endpoint.endpoint, base64.b64encode(endpoint.ca_pem.encode()).decode()
        )
    )
    clients.close()


def cpu_only(name: str) -> EndpointSpec:
    return EndpointSpec.model_validate(
        {
            "name": name,
            "instance_type": "ml.g5.8xlarge",
            "gpus": 1,
            "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
        }
    )


async def test_objects_apply_run_and_answer_through_the_service_proxy(kube: InferenceKube) -> None:
    deployment, service = render(cpu_only("adapted"))
    pod = deployment["spec"]["template"]["spec"]
    # The emulated cluster has no GPU node: run the same server unpinned and without GPUs.
    del pod["nodeSelector"]
    del pod["containers"][0]["resources"]
    await kube.apply(deployment)
    await kube.apply(service)
    again = await kube.apply(deployment)  # server-side apply of the same object changes nothing
    assert again["metadata"]["generation"] == 1
    deadline = time.monotonic() + 20
    while True:
        found = await kube.get("apps/v1", "Deployment", "adapted", "default")
        if found and (found.get("status") or {}).get("availableReplicas") == 1:
            break
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.2)
    request = {"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": "hi"}]}
    answer = await kube.proxy(
        "default", "adapted", 8000, "/v1/chat/completions", json.dumps(request).encode()
    )
    assert answer.status == 200
    assert json.loads(answer.body)["model"] == "Qwen/Qwen3-0.6B"

    (worker,) = await kube.pods("default", "hyperpilot.dev/endpoint=adapted")
    name = worker["metadata"]["name"]
    patched = await kube.merge_patch(
        "v1", "Pod", name, "default", {"metadata": {"labels": {"hyperpilot.dev/model": "qwen"}}}
    )
    assert patched["metadata"]["labels"]["hyperpilot.dev/model"] == "qwen"
    assert patched["metadata"]["uid"] == worker["metadata"]["uid"]
    services = await kube.services("default", "hyperpilot.dev/endpoint=adapted")
    assert [s["metadata"]["name"] for s in services] == ["adapted"]
    assert await kube.delete("v1", "Service", "adapted", "default")
    assert not await kube.delete("v1", "Service", "adapted", "default")


async def test_a_service_without_ready_pods_is_unavailable(kube: InferenceKube) -> None:
    _, service = render(cpu_only("empty"))
    await kube.apply(service)
    with pytest.raises(PermanentError) as info:
        await kube.proxy("default", "empty", 8000, "/v1/completions", b'{"prompt": "hi"}')
    assert info.value.code == "EndpointUnavailable"


async def test_kinds_without_their_operator_are_not_served(
    world: KubeWorld, kube: InferenceKube
) -> None:
    api = "inference.sagemaker.aws.amazon.com/v1"
    assert not await kube.serves(api, "InferenceEndpointConfig")
    assert not await kube.serves("keda.sh/v1alpha1", "ScaledObject")
    world.install("inf", "keda")
    assert await kube.serves("keda.sh/v1alpha1", "ScaledObject")
    with pytest.raises(PermanentError) as info:
        await kube.merge_patch(api, "JumpStartModel", "x", "default", {"spec": {"replicas": 1}})
    assert info.value.code == "OperatorMissing"
