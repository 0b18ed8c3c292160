"""Operators act only once installed, then like the real ones: HyperPodPyTorchJob, KEDA,
the inference operator, KubeRay, HyperPod Karpenter."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from sim.interfaces import SimNode
from sim.k8s import ApiServer
from tests.sim_k8s.conftest import deployment, eventually

HPJ = ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")


def node(n: int, group: str, itype: str = "ml.p5.48xlarge") -> SimNode:
    return SimNode(f"i-0a{n:015x}", group, itype, "Running", "us-east-1a", "hp")


def training_job(
    name: str,
    replicas: int = 2,
    retries: int = 1,
    annotations: dict[str, str] | None = None,
    **run: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "nprocPerNode": "8",
            "replicaSpecs": [
                {
                    "name": "pod",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"annotations": annotations or {}},
                        "spec": {
                            "nodeSelector": {
                                "sagemaker.amazonaws.com/instance-group-name": "train"
                            },
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/llama-train:1",
                                    "command": ["hyperpodrun", "--nproc-per-node=8", "train.py"],
                                    "resources": {
                                        "limits": {
                                            "nvidia.com/gpu": "8",
                                            "vpc.amazonaws.com/efa": "32",
                                        }
                                    },
                                }
                            ],
                        },
                    },
                }
            ],
            "runPolicy": {"jobMaxRetryCount": retries, "cleanPodPolicy": "None", **run},
        },
    }


def call(
    server: ApiServer, method: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    """A raw HTTPS request to the API server, as an HTTP client of the service proxy makes it."""
    import json
    import ssl
    import tempfile
    import urllib.error
    import urllib.request

    with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as ca:
        ca.write(server.ca_pem)
    request = urllib.request.Request(
        server.endpoint + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {server.token()}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(
            request, context=ssl.create_default_context(cafile=ca.name)
        ) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


def conditions(job: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c.get("reason", ""))
        for c in (job.get("status") or {}).get("conditions") or []
    }


@pytest.fixture(scope="module")
def trained(cluster: ApiServer) -> ApiServer:
    cluster.sync_nodes(
        [node(1, "train"), node(2, "train"), node(3, "train"), node(4, "other", "ml.g5.xlarge")]
    )
    return cluster


def test_operator_acts_only_once_installed(
    trained: ApiServer, custom: client.CustomObjectsApi
) -> None:
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], training_job("early"))
    assert err.value.status == 404
    trained.install("hyperpod-training-operator")
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], training_job("early", replicas=1)
    )
    eventually(
        lambda: (
            conditions(
                custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "early")
            ).get("Running", ("",))[0]
            == "True"
        )
    )
    custom.delete_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "early")


def test_job_runs_restarts_after_fault_then_fails_when_budget_spent(
    trained: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], training_job("llama", replicas=2, retries=1)
    )

    def get() -> dict[str, Any]:
        obj: dict[str, Any] = custom.get_namespaced_custom_object(
            *HPJ[:2], "default", HPJ[2], "llama"
        )
        return obj

    eventually(lambda: conditions(get()).get("Running", ("",))[0] == "True")
    pods = core.list_namespaced_pod("default", label_selector="HPJob=llama").items
    assert len(pods) == 2
    nodes = {p.spec.node_name for p in pods}
    assert len(nodes) == 2 and all(
        n.startswith("hyperpod-i-0a") and not n.endswith("4") for n in nodes
    )
    env = {e.name: e.value for e in pods[0].spec.containers[0].env}
    assert env["WORLD_SIZE"] == "16" and env["MASTER_ADDR"] == "llama-pod-0"
    eventually(lambda: "step 1" in core.read_namespaced_pod_log("llama-pod-0", "default"))
    # fault 1: a training process dies -> the job restarts (budget 1)
    first_uid = core.read_namespaced_pod("llama-pod-1", "default").metadata.uid
    trained.faults.crash_pod("default", "llama-pod-1", exit_code=1)
    job = eventually(lambda: (j := get()).get("status", {}).get("restartCount") == 1 and j)
    assert job["status"]["latestFaultyPodInstanceList"]["faultyPodList"] == ["llama-pod-1"]
    eventually(lambda: conditions(get()).get("Running", ("",))[0] == "True")
    assert core.read_namespaced_pod("llama-pod-1", "default").metadata.uid != first_uid
    # fault 2: budget spent -> Failed, with the reason
    trained.faults.crash_pod("default", "llama-pod-0", exit_code=139)
    failed = eventually(lambda: conditions(j := get()).get("Failed", ("",))[0] == "True" and j)
    _, reason = conditions(failed)["Failed"]
    assert reason == "JobMaxRetryCountExceeded"
    message = next(c["message"] for c in failed["status"]["conditions"] if c["type"] == "Failed")
    assert "jobMaxRetryCount=1" in message and "llama-pod-0" in message and "code 139" in message
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=llama").items
    assert {"JobRestarting", "JobMaxRetryCountExceeded"} <= {e.reason for e in events}


def test_log_pattern_hang_detection_restarts_the_job(
    trained: ApiServer, custom: client.CustomObjectsApi
) -> None:
    monitor = [
        {
            "name": "steps",
            "logPattern": r"step \d+",
            "expectedStartCutOffInSeconds": 5,
            "expectedRecurringFrequencyInSeconds": 1,
        }
    ]
    job = training_job(
        "hangs",
        replicas=1,
        retries=3,
        annotations={"sim.hyperpilot.dev/hang-after-steps": "3"},
        logMonitoringConfiguration=monitor,
    )
    custom.create_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], job)

    def restarts() -> int:
        got = custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "hangs")
        return int((got.get("status") or {}).get("restartCount", 0))

    eventually(lambda: restarts() >= 1, timeout=20)
    got = custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "hangs")
    assert "hang" in next(
        c["message"] for c in got["status"]["conditions"] if c["type"] == "Restarting"
    )


def test_completed_job(trained: ApiServer, custom: client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(
        *HPJ[:2],
        "default",
        HPJ[2],
        training_job("short", replicas=1, annotations={"sim.hyperpilot.dev/steps": "5"}),
    )
    done = eventually(
        lambda: (
            conditions(
                j := custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "short")
            ).get("Completed", ("",))[0]
            == "True"
            and j
        )
    )
    assert done["status"]["completionTime"]


def test_keda_scales_its_target(
    trained: ApiServer, apps: client.AppsV1Api, custom: client.CustomObjectsApi
) -> None:
    apps.create_namespaced_deployment("default", deployment("router", replicas=1))
    trained.install("keda")
    so = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "router"},
        "spec": {
            "scaleTargetRef": {"name": "router"},
            "minReplicaCount": 1,
            "maxReplicaCount": 5,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {"threshold": "10", "query": "sum(rate(requests[1m]))"},
                }
            ],
        },
    }
    custom.create_namespaced_custom_object("keda.sh", "v1alpha1", "default", "scaledobjects", so)
    trained.set_metric("default", "router", 35.0)
    eventually(lambda: apps.read_namespaced_deployment("router", "default").spec.replicas == 4)
    trained.set_metric("default", "router", 500.0)
    eventually(lambda: apps.read_namespaced_deployment("router", "default").spec.replicas == 5)
    got = custom.get_namespaced_custom_object(
        "keda.sh", "v1alpha1", "default", "scaledobjects", "router"
    )
    assert got["status"]["hpaName"] == "keda-hpa-router"
    assert conditions(got)["Ready"][0] == "True" and conditions(got)["Active"][0] == "True"


def test_inference_endpoint_deploys_workers_and_service(
    trained: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    trained.install("hyperpod-inference-operator")
    iec = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "qwen"},
        "spec": {
            "modelName": "qwen3-8b",
            "endpointName": "qwen",
            "instanceType": "ml.g5.xlarge",
            "replicas": 1,
            "modelSourceConfig": {
                "modelSourceType": "s3",
                "s3Storage": {"bucketName": "models", "region": "us-east-1"},
                "modelLocation": "qwen3-8b",
            },
            "worker": {
                "image": "vllm/vllm-openai:v0.9.0",
                "modelInvocationPort": {"containerPort": 8000, "name": "http"},
                "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            },
        },
    }
    custom.create_namespaced_custom_object(
        "inference.sagemaker.aws.amazon.com", "v1", "default", "inferenceendpointconfigs", iec
    )
    done = eventually(
        lambda: (
            (
                j := custom.get_namespaced_custom_object(
                    "inference.sagemaker.aws.amazon.com",
                    "v1",
                    "default",
                    "inferenceendpointconfigs",
                    "qwen",
                )
            )
            .get("status", {})
            .get("state")
            == "DeploymentComplete"
            and j
        )
    )
    assert done["status"]["replicas"] == 1
    assert (
        core.read_namespaced_service("qwen-routing-service", "default").spec.ports[0].port == 8000
    )
    worker = core.list_namespaced_pod("default", label_selector="app=qwen").items[0]
    assert (
        core.read_node(worker.spec.node_name).metadata.labels["node.kubernetes.io/instance-type"]
        == "ml.g5.xlarge"
    )
    assert "Uvicorn running" in core.read_namespaced_pod_log(worker.metadata.name, "default")
    # the model answers through the API server's service proxy, and logs the request
    status, reply = call(
        trained,
        "POST",
        "/api/v1/namespaces/default/services/qwen-routing-service:8000/proxy/v1/chat/completions",
        {"model": "qwen3-8b", "messages": [{"role": "user", "content": "hello there"}]},
    )
    assert status == 200 and "hello there" in reply["choices"][0]["message"]["content"]
    assert (
        call(
            trained,
            "GET",
            "/api/v1/namespaces/default/services/qwen-routing-service:8000/proxy/health",
        )[0]
        == 200
    )
    assert '"POST /v1/chat/completions HTTP/1.1" 200' in core.read_namespaced_pod_log(
        worker.metadata.name, "default"
    )
    assert (
        call(trained, "GET", "/api/v1/namespaces/default/services/nothing/proxy/health")[0] == 404
    )
    # the scale subresource of a custom resource, through the paths its CRD declares
    group = (
        "inference.sagemaker.aws.amazon.com",
        "v1",
        "default",
        "inferenceendpointconfigs",
        "qwen",
    )
    scale = custom.get_namespaced_custom_object_scale(*group)
    assert scale["spec"]["replicas"] == 1 and scale["status"]["selector"]
    custom.patch_namespaced_custom_object_scale(*group, {"spec": {"replicas": 2}})
    assert custom.get_namespaced_custom_object(*group)["spec"]["replicas"] == 2
    eventually(
        lambda: len(core.list_namespaced_pod("default", label_selector="app=qwen").items) == 2
    )


def test_kuberay_job_and_karpenter(trained: ApiServer, custom: client.CustomObjectsApi) -> None:
    trained.install("kuberay-operator")
    ray_job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "verl"},
        "spec": {
            "entrypoint": "python3 -m verl.trainer.main_ppo",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": [{"name": "ray-head", "image": "rayproject/ray:2.41.0"}]
                        }
                    },
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 1,
                        "rayStartParams": {},
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "ray-worker", "image": "rayproject/ray:2.41.0"}
                                ]
                            }
                        },
                    }
                ],
            },
        },
    }
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", ray_job)
    done = eventually(
        lambda: (
            (j := custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "verl"))
            .get("status", {})
            .get("jobStatus")
            == "SUCCEEDED"
            and j
        ),
        timeout=20,
    )
    assert done["status"]["jobDeploymentStatus"] == "Complete"
    trained.install("karpenter")
    custom.create_cluster_custom_object(
        "karpenter.sagemaker.amazonaws.com",
        "v1",
        "hyperpodnodeclasses",
        {
            "apiVersion": "karpenter.sagemaker.amazonaws.com/v1",
            "kind": "HyperpodNodeClass",
            "metadata": {"name": "hp"},
            "spec": {"instanceGroups": ["train", "missing"]},
        },
    )
    got = eventually(
        lambda: (
            (
                c := custom.get_cluster_custom_object(
                    "karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses", "hp"
                )
            ).get("status")
            and c
        )
    )
    assert conditions(got)["Ready"] == ("False", "InstanceGroupNotFound")
    custom.patch_cluster_custom_object(
        "karpenter.sagemaker.amazonaws.com",
        "v1",
        "hyperpodnodeclasses",
        "hp",
        {"spec": {"instanceGroups": ["train"]}},
    )
    eventually(
        lambda: (
            conditions(
                custom.get_cluster_custom_object(
                    "karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses", "hp"
                )
            )["Ready"][0]
            == "True"
        )
    )


def test_jumpstart_model_and_node_pool(trained: ApiServer, custom: client.CustomObjectsApi) -> None:
    js = {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "JumpStartModel",
        "metadata": {"name": "mistral"},
        "spec": {
            "model": {"modelId": "huggingface-llm-mistral-7b"},
            "server": {"instanceType": "ml.g5.xlarge"},
            "replicas": 1,
        },
    }
    custom.create_namespaced_custom_object(
        "inference.sagemaker.aws.amazon.com", "v1", "default", "jumpstartmodels", js
    )
    eventually(
        lambda: (
            custom.get_namespaced_custom_object(
                "inference.sagemaker.aws.amazon.com", "v1", "default", "jumpstartmodels", "mistral"
            )
            .get("status", {})
            .get("state")
            == "DeploymentComplete"
        )
    )
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.sagemaker.amazonaws.com",
                        "kind": "HyperpodNodeClass",
                        "name": "hp",
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": ["ml.p5.48xlarge"],
                        }
                    ],
                }
            }
        },
    }
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    got = eventually(
        lambda: (
            (p := custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu"))
            .get("status", {})
            .get("nodes")
            and p
        )
    )
    assert got["status"]["nodes"] == 3 and conditions(got)["Ready"][0] == "True"


def test_everything_written_deserializes_in_the_typed_client(api_client: client.ApiClient) -> None:
    """The typed client validates every field it reads: what the controllers wrote must fit."""
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    for listing in (
        core.list_pod_for_all_namespaces,
        core.list_node,
        core.list_event_for_all_namespaces,
        core.list_service_for_all_namespaces,
        core.list_endpoints_for_all_namespaces,
        core.list_persistent_volume,
        core.list_namespace,
        apps.list_deployment_for_all_namespaces,
        apps.list_replica_set_for_all_namespaces,
        apps.list_daemon_set_for_all_namespaces,
        client.BatchV1Api(api_client).list_job_for_all_namespaces,
        client.AutoscalingV2Api(api_client).list_horizontal_pod_autoscaler_for_all_namespaces,
        client.DiscoveryV1Api(api_client).list_endpoint_slice_for_all_namespaces,
        client.ApiextensionsV1Api(api_client).list_custom_resource_definition,
    ):
        assert listing().items is not None


def test_every_component_installs_and_its_workloads_become_ready(
    trained: ApiServer, apps: client.AppsV1Api
) -> None:
    from sim.k8s.operators.install import COMPONENTS

    for component in COMPONENTS:
        trained.install(component)
    trained.install("keda")  # installing twice is harmless
    for spec in COMPONENTS.values():
        for namespace, kind, name, _ in spec.workloads:
            if kind == "Deployment":
                eventually(
                    lambda ns=namespace, n=name: (
                        apps.read_namespaced_deployment(n, ns).status.available_replicas == 1
                    )
                )
            else:
                eventually(
                    lambda ns=namespace, n=name: (
                        (apps.read_namespaced_daemon_set(n, ns).status.number_ready or 0) >= 1
                    )
                )


def test_suspend_deadline_and_printer_columns(
    trained: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api, kubectl: Any
) -> None:
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], training_job("pausable", replicas=1)
    )
    eventually(lambda: core.list_namespaced_pod("default", label_selector="HPJob=pausable").items)
    custom.patch_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], "pausable", {"spec": {"runPolicy": {"suspend": True}}}
    )
    eventually(
        lambda: not core.list_namespaced_pod("default", label_selector="HPJob=pausable").items
    )
    custom.patch_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], "pausable", {"spec": {"runPolicy": {"suspend": False}}}
    )
    eventually(
        lambda: (
            conditions(
                custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "pausable")
            ).get("Running", ("",))[0]
            == "True"
        )
    )
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], training_job("late", replicas=1, activeDeadlineSeconds=1)
    )
    failed = eventually(
        lambda: (
            conditions(
                j := custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "late")
            ).get("Failed", ("",))[0]
            == "True"
            and j
        )
    )
    assert conditions(failed)["Failed"][1] == "DeadlineExceeded"
    table = kubectl("get", "hyperpodpytorchjobs", "late", "pausable").stdout.splitlines()
    assert table[0].split()[:4] == ["NAME", "RUNNING", "FAILED", "RESTARTS"]
    assert table[1].split()[:3] == ["late", "False", "True"]


def test_node_health_fault_restarts_job_elsewhere(
    trained: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    for done in ("llama", "hangs", "short", "pausable", "late"):
        with contextlib.suppress(ApiException):
            custom.delete_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], done)
    eventually(
        lambda: (
            not [
                p
                for p in core.list_namespaced_pod("default", label_selector="HPJob").items
                if p.status.phase == "Running"
            ]
        )
    )
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], training_job("resilient", replicas=1, retries=2)
    )
    running = eventually(
        lambda: [
            p
            for p in core.list_namespaced_pod("default", label_selector="HPJob=resilient").items
            if p.status.phase == "Running"
        ]
    )
    bad_node = running[0].spec.node_name
    trained.faults.node_health(bad_node, "UnschedulablePendingReplacement")
    job = eventually(
        lambda: (
            (j := custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "resilient"))
            .get("status", {})
            .get("restartCount")
            == 1
            and j
        )
    )
    instance = core.read_node(bad_node).metadata.labels["sagemaker.amazonaws.com/instance-id"]
    assert job["status"]["latestFaultyPodInstanceList"]["faultyInstanceIdList"] == [instance]
    moved = eventually(
        lambda: [
            p
            for p in core.list_namespaced_pod("default", label_selector="HPJob=resilient").items
            if p.status.phase == "Running"
        ]
    )
    assert moved[0].spec.node_name != bad_node


def test_eks_addon_names_install_their_components(
    world: Any, trained: ApiServer, api_client: client.ApiClient
) -> None:
    world.install(trained.cluster, "amazon-sagemaker-hyperpod-training-operator")
    world.install(trained.cluster, "aws-ebs-csi-driver")
    world.install(trained.cluster, "coredns")  # already part of every cluster
    drivers = {d.metadata.name for d in client.StorageV1Api(api_client).list_csi_driver().items}
    assert "ebs.csi.aws.com" in drivers
    with pytest.raises(ValueError):
        world.install(trained.cluster, "no-such-addon")
