"""The workloads' Kubernetes adapter against the emulator, with the official client and an EKS
token: a rendered job is accepted by the CRD's schema, its pods run and log, Secrets are written,
and a kind whose operator is absent is reported as such."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from shared.contracts.workloads import JobSpec
from shared.errors import PermanentError
from sim.k8s import KubeWorld
from sim.profile import get_profile
from workload_svc.adapters.k8s import ClusterEndpoint, KubeClients, WorkloadKube
from workload_svc.domain.render import render

SPEC: TypeAdapter[Any] = TypeAdapter(JobSpec)


@pytest.fixture(scope="module")
def world() -> Iterator[KubeWorld]:
    kube = KubeWorld(get_profile("fast"))
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def kube(world: KubeWorld) -> Iterator[WorkloadKube]:
    endpoint = world.start_cluster("wl")
    clients = KubeClients("us-east-1")
    yield clients(
        ClusterEndpoint(
            "wl", endpoint.endpoint, base64.b64encode(endpoint.ca_pem.encode()).decode()
        )
    )
    clients.close()


async def test_a_kind_without_its_operator_is_not_served(kube: WorkloadKube) -> None:
    assert not await kube.serves("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    body = render(
        SPEC.validate_python(
            {"recipe": "pytorch", "name": "early", "instance_group": "g", "script": "t.py"}
        )
    ).body
    with pytest.raises(PermanentError) as info:
        await kube.apply(body)
    assert info.value.code == "OperatorMissing"


async def test_job_is_accepted_runs_and_logs(world: KubeWorld, kube: WorkloadKube) -> None:
    world.install("wl", "hyperpod-training-operator")
    assert await kube.serves("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    spec = SPEC.validate_python(
        {
            "recipe": "pytorch",
            "name": "adapted",
            "instance_group": "g",
            "script": "t.py",
            "resources": {"gpus": 0},
        }
    )
    body = render(spec).body
    del body["spec"]["replicaSpecs"][0]["template"]["spec"]["nodeSelector"]
    del body["spec"]["replicaSpecs"][0]["template"]["spec"]["volumes"]
    del body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["volumeMounts"]
    await kube.apply(body)
    again = await kube.apply(body)  # server-side apply: the same object again changes nothing
    assert again["metadata"]["generation"] == 1
    deadline = time.monotonic() + 20
    while True:
        pods = await kube.pods("default", "hyperpilot.dev/job=adapted")
        text = await kube.pod_log("default", pods[0]["metadata"]["name"]) if pods else ""
        if "step 1/" in text:
            break
        assert time.monotonic() < deadline, pods
        await asyncio.sleep(0.1)
    found = await kube.get("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", "adapted", "default")
    assert found is not None and found["status"]["jobPods"]
    assert await kube.delete(
        "sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", "adapted", "default"
    )
    assert not await kube.delete(
        "sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", "adapted", "default"
    )


async def test_schema_refusal_is_a_permanent_error(world: KubeWorld, kube: WorkloadKube) -> None:
    world.install("wl", "hyperpod-training-operator")
    body = {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": "broken", "namespace": "default"},
        "spec": {"replicaSpecs": [{"name": "p", "replicas": -1}]},
    }
    with pytest.raises(PermanentError) as info:
        await kube.apply(body)
    assert info.value.code == "KubernetesInvalid"


async def test_secret_claim_and_missing_log(kube: WorkloadKube) -> None:
    await kube.put_secret("default", "hf-token", {"token": "one"})
    await kube.put_secret("default", "hf-token", {"token": "two"})  # replaced, not refused
    assert await kube.secret_exists("default", "hf-token")
    assert not await kube.claim_exists("default", "s3-claim")
    assert await kube.pod_log("default", "no-such-pod") == ""
