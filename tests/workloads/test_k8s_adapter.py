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


async def test_secrets_are_listed_by_name_and_keys_only(
    world: KubeWorld, kube: WorkloadKube
) -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hyperpilot/w-AbCdEf"
    await kube.put_secret(
        "default", "hp-sm-w", {"value": "the-value"}, {"hyperpilot.dev/secrets-manager-arn": arn}
    )
    await kube.put_secret("default", "wandb", {"api-key": "k1", "user": "u"})
    await kube.put_secret("default", "wandb", {"api-key": "k2"})  # replaced: "user" is gone
    stored = world.api_server("wl").store.get("secrets", "default", "hp-sm-w")
    assert stored["metadata"]["annotations"] == {"hyperpilot.dev/secrets-manager-arn": arn}
    listed = {s["name"]: s for s in await kube.secret_keys("default")}
    assert listed["wandb"] == {
        "name": "wandb",
        "type": "Opaque",
        "keys": ["api-key"],
        "managed": True,
    }
    assert listed["hp-sm-w"]["keys"] == ["value"]
    assert "the-value" not in str(listed) and "k2" not in str(listed)


async def _until(check: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := await check()):
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)
    return found


async def test_diagnostics_reads_pods_events_and_the_previous_log(
    world: KubeWorld, kube: WorkloadKube
) -> None:
    """A container crashed with OOMKilled and restarted: the pod is read in any namespace, its
    events with a field selector, and the log of the instance before the restart."""
    await kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diag"}})
    await kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "looper", "namespace": "diag", "labels": {"app": "looper"}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1",
                        "command": ["sh", "-c", "echo first-life; sleep 3600"],
                    }
                ]
            },
        }
    )

    async def logged() -> bool:
        return "first-life" in await kube.pod_log("diag", "looper")

    await _until(logged)
    assert await kube.pod_log("diag", "looper", previous=True) == ""  # no earlier instance
    server = world.api_server("wl")
    server.run_on_loop(server.kubelet.crash, "diag", "looper", None, 137, "OOMKilled")

    async def restarted() -> dict[str, Any] | None:
        pod = await kube.pod("diag", "looper")
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        return pod if statuses and statuses[0].get("restartCount") == 1 else None

    pod = await _until(restarted)
    last = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["reason"], last["exitCode"]) == ("OOMKilled", 137)
    assert await kube.pod_log("diag", "looper", "main", previous=True, tail=1) == "first-life\n"
    assert await kube.pod("diag", "no-such-pod") is None

    everywhere = await kube.pods_in(None, "app=looper")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in everywhere] == [
        ("diag", "looper")
    ]
    assert [p["metadata"]["name"] for p in await kube.pods_in("diag")] == ["looper"]

    selector = "involvedObject.kind=Pod,involvedObject.name=looper,type=Warning"
    warnings = await kube.events("diag", selector, 100)
    assert warnings and {e["reason"] for e in warnings} == {"BackOff"}
    assert "exited with code 137" in warnings[0]["message"]
    all_of_it = await kube.events(None, "involvedObject.name=looper", 100)
    assert {e["type"] for e in all_of_it} == {"Normal", "Warning"}
    paged = await kube.events(None, None, 2)  # at most the limit, across pages
    assert len(paged) == 2
