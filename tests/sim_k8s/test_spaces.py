"""The SageMaker Spaces add-on in the emulator: a Workspace (workspace.jupyter.org/v1alpha1)
becomes a GPU pod mounting its claim, Available, answering HTTP through the service proxy;
Stopped scales it to zero; the schema refuses what the CRD refuses; idle shutdown stops a
space whose last request is older than its timeout."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sim.interfaces import SimNode
from sim.k8s import ApiServer
from sim.k8s.operators.spaces import activity_of, idle_expired
from tests.sim_k8s.conftest import eventually
from tests.sim_k8s.test_operators import call

WS = ("workspace.jupyter.org", "v1alpha1")


def _workspace(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "workspace.jupyter.org/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name, "annotations": {"workspace.jupyter.org/created-by": "alice"}},
        "spec": {"displayName": name, "image": "jupyter/base-notebook:latest", **spec},
    }


def _status(custom: client.CustomObjectsApi, name: str) -> dict[str, str]:
    found = custom.get_namespaced_custom_object(*WS, "default", "workspaces", name)
    return {c["type"]: c["status"] for c in (found.get("status") or {}).get("conditions") or []}


@pytest.fixture(scope="module")
def spaces(cluster: ApiServer, core: client.CoreV1Api) -> ApiServer:
    cluster.sync_nodes(
        [SimNode("i-0b000000000000001", "gpu", "ml.g5.8xlarge", "Running", "us-east-1a", "hp")]
    )
    cluster.install("amazon-sagemaker-spaces")
    core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "data-volume"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "hostPath": {"path": "/data"},
                "claimRef": {"namespace": "default", "name": "data-claim"},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-claim"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "",
            },
        },
    )
    return cluster


def test_a_gpu_space_becomes_available_answers_http_and_stops(
    spaces: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    body = _workspace(
        "lab",
        desiredStatus="Running",
        resources={
            "requests": {"nvidia.com/gpu": "1", "cpu": "2"},
            "limits": {"nvidia.com/gpu": "1"},
        },
        volumes=[{"name": "data", "mountPath": "/data", "persistentVolumeClaimName": "data-claim"}],
    )
    custom.create_namespaced_custom_object(*WS, "default", "workspaces", body)
    eventually(lambda: _status(custom, "lab").get("Available") == "True", timeout=30)
    pods = core.list_namespaced_pod(
        "default", label_selector="workspace.jupyter.org/workspace-name=lab"
    ).items
    assert len(pods) == 1
    pod = pods[0]
    assert pod.spec.containers[0].name == "workspace"
    assert pod.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1"}
    assert pod.spec.volumes[0].persistent_volume_claim.claim_name == "data-claim"
    found = custom.get_namespaced_custom_object(*WS, "default", "workspaces", "lab")
    assert found["status"]["serviceName"] == "lab"
    status, page = call(spaces, "GET", "/api/v1/namespaces/default/services/lab:8888/proxy/lab")
    assert status == 200 and "JupyterLab" in page

    custom.patch_namespaced_custom_object(
        *WS, "default", "workspaces", "lab", {"spec": {"desiredStatus": "Stopped"}}
    )
    eventually(lambda: _status(custom, "lab").get("Stopped") == "True", timeout=30)
    assert _status(custom, "lab")["Available"] == "False"
    status, _ = call(spaces, "GET", "/api/v1/namespaces/default/services/lab:8888/proxy/lab")
    assert status == 503


def test_the_schema_refuses_an_unknown_desired_status(
    spaces: ApiServer, custom: client.CustomObjectsApi
) -> None:
    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(
            *WS, "default", "workspaces", _workspace("bad", desiredStatus="Paused")
        )
    assert refused.value.status == 422
    assert "desiredStatus" in refused.value.body


def test_idle_shutdown_counts_from_the_last_request() -> None:
    spec = {
        "desiredStatus": "Running",
        "idleShutdown": {"enabled": True, "idleTimeoutInMinutes": 30},
    }
    assert not idle_expired(spec, idle_since=1000.0, now=1000.0 + 29 * 60)
    assert idle_expired(spec, idle_since=1000.0, now=1000.0 + 30 * 60)
    assert not idle_expired({**spec, "idleShutdown": {"enabled": False}}, 0.0, 10**6)
    assert not idle_expired({**spec, "desiredStatus": "Stopped"}, 0.0, 10**6)


def test_an_idle_space_is_stopped_by_the_operator(
    spaces: ApiServer, custom: client.CustomObjectsApi
) -> None:
    body = _workspace(
        "idle",
        desiredStatus="Running",
        idleShutdown={"enabled": True, "idleTimeoutInMinutes": 30},
    )
    custom.create_namespaced_custom_object(*WS, "default", "workspaces", body)
    eventually(lambda: _status(custom, "idle").get("Available") == "True", timeout=30)
    status, _ = call(spaces, "GET", "/api/v1/namespaces/default/services/idle:8888/proxy/lab")
    assert status == 200
    # its last request was 31 minutes ago: the next resync stops it
    activity_of(spaces).touch("default", "idle", at=time.monotonic() - 31 * 60)
    eventually(
        lambda: (
            custom.get_namespaced_custom_object(*WS, "default", "workspaces", "idle")["spec"][
                "desiredStatus"
            ]
            == "Stopped"
        ),
        timeout=30,
    )
    eventually(lambda: _status(custom, "idle").get("Stopped") == "True", timeout=30)


GPU_TEMPLATE: dict[str, Any] = {
    "apiVersion": "workspace.jupyter.org/v1alpha1",
    "kind": "WorkspaceTemplate",
    "metadata": {"name": "gpu-small"},
    "spec": {
        "displayName": "GPU (small)",
        "defaultImage": "jupyter/base-notebook:latest",
        "allowedImages": ["jupyter/scipy-notebook:latest"],
        "defaultResources": {
            "requests": {"cpu": "2", "memory": "8Gi"},
            "limits": {"nvidia.com/gpu": "1"},
        },
        "resourceBounds": {
            "cpu": {"min": "1", "max": "4"},
            "gpu": {"min": "0", "max": "1"},
        },
        "defaultIdleShutdown": {"enabled": True, "idleTimeoutInMinutes": 30},
        "idleShutdownOverrides": {"allow": True, "minTimeoutMinutes": 10, "maxTimeoutMinutes": 120},
        "allowSecondaryStorages": False,
    },
}


def test_a_template_gives_its_defaults_and_refuses_what_its_bounds_do_not_allow(
    spaces: ApiServer, custom: client.CustomObjectsApi
) -> None:
    """WorkspaceTemplate (cluster-scoped, as jupyter-k8s defines it), through the official
    client: a Workspace naming it gets its image, resources and idle shutdown; an image not
    allowed, CPU or GPUs beyond the bounds, an idle timeout outside the overrides or a volume
    where secondary storage is not allowed are refused by the webhook."""
    custom.create_cluster_custom_object(*WS, "workspacetemplates", GPU_TEMPLATE)
    listed = custom.list_cluster_custom_object(*WS, "workspacetemplates")["items"]
    assert "gpu-small" in [t["metadata"]["name"] for t in listed]
    body = _workspace("templated", templateRef={"name": "gpu-small"})
    del body["spec"]["image"]
    made = custom.create_namespaced_custom_object(*WS, "default", "workspaces", body)
    assert made["spec"]["image"] == "jupyter/base-notebook:latest"
    assert made["spec"]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert made["spec"]["idleShutdown"] == {"enabled": True, "idleTimeoutInMinutes": 30}
    refusals = {
        "image": {"image": "evil/miner:1"},
        "cpu": {"resources": {"requests": {"cpu": "8"}}},
        "nvidia.com/gpu": {
            "resources": {"requests": {"cpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}
        },
        "idle timeout": {"idleShutdown": {"enabled": True, "idleTimeoutInMinutes": 5}},
        "secondary storage": {
            "volumes": [
                {"name": "d", "mountPath": "/data", "persistentVolumeClaimName": "data-claim"}
            ]
        },
    }
    for words, spec in refusals.items():
        wrong = _workspace("refused", templateRef={"name": "gpu-small"}, **spec)
        with pytest.raises(ApiException) as refused:
            custom.create_namespaced_custom_object(*WS, "default", "workspaces", wrong)
        assert refused.value.status == 400, words
        assert words in str(refused.value.body) and "gpu-small" in str(refused.value.body)
    missing = _workspace("orphan", templateRef={"name": "nowhere"})
    with pytest.raises(ApiException) as absent:
        custom.create_namespaced_custom_object(*WS, "default", "workspaces", missing)
    assert "workspace template nowhere not found" in str(absent.value.body)
    custom.delete_namespaced_custom_object(*WS, "default", "workspaces", "templated")
