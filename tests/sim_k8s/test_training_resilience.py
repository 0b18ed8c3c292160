"""A model download killed mid-way resumes in the Job's next pod from the files already on the
bucket; an elastic HyperPodPyTorchJob runs as many replicas as its nodes hold, grows when nodes
join and shrinks (not below its minimum) when they go, recording each scaling in its status."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from shared.contracts.workloads import ModelDownloadSpec
from sim.interfaces import SimNode
from sim.k8s import ApiServer
from sim.k8s.controllers.downloads import human, parse, repo_files
from sim.k8s.controllers.programs import program_for
from sim.k8s.files import pod_volume
from sim.k8s.operators.hyperpod_training import elastic_sizes
from sim.profile import get_profile
from tests.sim_k8s.conftest import eventually
from workload_svc.domain.render import download_job as rendered_download

HPJ = ("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
BUCKET = "team-models"
GROUP = "sagemaker.amazonaws.com/instance-group-name"


@pytest.fixture(scope="module")
def batch(api_client: client.ApiClient) -> Iterator[client.BatchV1Api]:
    yield client.BatchV1Api(api_client)


def node(n: int, group: str = "train") -> SimNode:
    return SimNode(f"i-0e{n:015x}", group, "ml.p5.48xlarge", "Running", "us-east-1a", "hp")


@pytest.fixture(scope="module")
def bucket(cluster: ApiServer) -> ApiServer:
    """The bucket bound as `s3-claim` through the Mountpoint for S3 CSI driver, as the product
    binds it at cluster creation."""
    cluster.install("aws-mountpoint-s3-csi-driver")
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"s3-{BUCKET}"},
            "spec": {
                "capacity": {"storage": "1200Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "mountOptions": ["allow-delete", "region us-east-1"],
                "claimRef": {"namespace": "default", "name": "s3-claim"},
                "csi": {
                    "driver": "s3.csi.aws.com",
                    "volumeHandle": f"s3-csi-{BUCKET}",
                    "volumeAttributes": {"bucketName": BUCKET},
                },
            },
        }
    )
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "s3-claim", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "resources": {"requests": {"storage": "1200Gi"}},
                "volumeName": f"s3-{BUCKET}",
            },
        }
    )
    return cluster


def cli_download_job(name: str, repo: str, target: str) -> dict[str, Any]:
    """`huggingface-cli download --local-dir` straight into the bucket (what users write)."""
    script = (
        "pip install -q 'huggingface_hub[cli,hf_transfer]' && huggingface-cli download"
        f" {repo} --revision main --local-dir {target}"
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "backoffLimit": 6,
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "download",
                            "image": "python:3.11-slim",
                            "command": ["/bin/bash", "-c", script],
                            "volumeMounts": [{"name": "shared", "mountPath": "/s3"}],
                        }
                    ],
                    "volumes": [
                        {"name": "shared", "persistentVolumeClaim": {"claimName": "s3-claim"}}
                    ],
                }
            },
        },
    }


def rendered_download_job(name: str, repo: str, target: str) -> dict[str, Any]:
    """The Job workload-svc renders: fetched to an emptyDir, copied to the bucket file by file."""
    spec = ModelDownloadSpec(name=name, repo_id=repo, target=target)
    return rendered_download(spec).body


DOWNLOADS = {"cli": cli_download_job, "rendered": rendered_download_job}


def test_the_download_program_knows_the_repository_and_the_target() -> None:
    script = "pip install x && huggingface-cli download Qwen/Qwen2.5-7B --local-dir /s3/m/q"
    found = parse(script)
    assert found is not None
    assert (found.repo_id, found.revision, found.local_dir) == (
        "Qwen/Qwen2.5-7B",
        "main",
        "/s3/m/q",
    )
    shards = [f.path for f in repo_files("Qwen/Qwen2.5-7B") if f.path.startswith("model-")]
    assert shards == [f"model-0000{n}-of-00004.safetensors" for n in range(1, 5)]
    assert "model.safetensors" in [f.path for f in repo_files("Qwen/Qwen2.5-0.5B")]
    assert repo_files("Qwen/Qwen2.5-7B") == repo_files("Qwen/Qwen2.5-7B")  # always the same
    pod = {"metadata": {"name": "p", "annotations": {}}, "spec": {"restartPolicy": "Never"}}
    training = program_for(
        pod,
        {"name": "c", "command": ["/bin/bash", "-c", "torchrun train.py --max_steps 5000"]},
        get_profile("fast"),
    )
    assert training.steps == 5000


@pytest.mark.parametrize("shape", DOWNLOADS)
def test_a_killed_download_resumes_in_the_next_pod(
    shape: str, bucket: ApiServer, core: client.CoreV1Api, batch: client.BatchV1Api
) -> None:
    download_job = DOWNLOADS[shape]
    name = f"get-7b-{shape}"
    target = f"/s3/models/{shape}/Qwen2.5-7B"
    files = repo_files("Qwen/Qwen2.5-7B")
    bucket.apply(download_job(name, "Qwen/Qwen2.5-7B", target))

    def pods() -> list[Any]:
        items = core.list_namespaced_pod("default", label_selector=f"job-name={name}").items
        return sorted(items, key=lambda p: p.metadata.creation_timestamp)

    first = eventually(lambda: pods() and pods()[0].metadata.name)
    eventually(
        lambda: any(
            line.startswith("downloaded model-00001-of-00004.safetensors ")
            for line in bucket.logs.lines("default", first, "download")
        ),
        timeout=30,
        interval=0.01,
    )
    bucket.faults.kill_pod("default", first)

    job = eventually(
        lambda: (j := batch.read_namespaced_job(name, "default")).status.succeeded == 1 and j,
        timeout=60,
    )
    assert job.status.failed == 1  # the killed pod, counted against backoffLimit
    killed, second = pods()
    assert killed.metadata.name == first and killed.status.phase == "Failed"
    assert killed.status.reason == "Killed"
    before = bucket.logs.lines("default", first, "download")
    after = bucket.logs.lines("default", second.metadata.name, "download")
    assert "download progress: 100%" not in "\n".join(before)
    finished_before = [line.split()[1] for line in before if line.startswith("downloaded ")]
    assert "model-00001-of-00004.safetensors" in finished_before
    for path in finished_before:
        assert f"skipping {path}: already complete in {target}" in after
        assert f"downloaded {path} " not in "\n".join(after)
    resumed = next(line for line in after if line.startswith("resuming: "))
    assert resumed.startswith(f"resuming: {len(finished_before)} of {len(files)} files")
    assert any(
        line.startswith(f"download progress: 100% ({len(files)}/{len(files)} files")
        for line in after
    )
    assert after[-1] == target
    on_bucket = bucket.files.listing(f"s3://{BUCKET}", f"models/{shape}/Qwen2.5-7B")
    assert {p.rsplit("/", 1)[1]: s for p, s in on_bucket.items()} == {f.path: f.size for f in files}
    if shape == "rendered":  # every file went through the pod's scratch and left it
        assert not bucket.files.listing(f"{pod_volume(second.to_dict())}/scratch")

    # Downloading it again fetches nothing: every file is already complete on the bucket.
    bucket.apply(download_job(f"{name}-again", "Qwen/Qwen2.5-7B", target))
    eventually(
        lambda: batch.read_namespaced_job(f"{name}-again", "default").status.succeeded == 1,
        timeout=30,
    )
    [again] = core.list_namespaced_pod("default", label_selector=f"job-name={name}-again").items
    lines = bucket.logs.lines("default", again.metadata.name, "download")
    total = human(sum(f.size for f in files))
    assert (
        f"resuming: {len(files)} of {len(files)} files ({total}) already downloaded,"
        " 0 to fetch" in lines
    )
    assert not [line for line in lines if line.startswith("downloaded ")]


def elastic_job(name: str, policy: dict[str, Any], replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "nprocPerNode": "8",
            "elasticPolicy": policy,
            "replicaSpecs": [
                {
                    "name": "pods",
                    "replicas": replicas,
                    "maxReplicas": policy["maxReplicas"],
                    "template": {
                        "spec": {
                            "nodeSelector": {GROUP: "train"},
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                                    "command": [
                                        "/bin/bash",
                                        "-c",
                                        "torchrun --nnodes=$NNODES train.py --max_steps 100000",
                                    ],
                                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                                }
                            ],
                        }
                    },
                }
            ],
            "runPolicy": {"jobMaxRetryCount": 2, "cleanPodPolicy": "All"},
        },
    }


def test_elastic_sizes_follow_the_policy() -> None:
    def sizes(**policy: Any) -> list[int]:
        return elastic_sizes(elastic_job("j", {"maxReplicas": 8, **policy}))

    assert sizes(minReplicas=1) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert sizes(minReplicas=2, replicaIncrementStep=2) == [2, 4, 6, 8]
    assert sizes(minReplicas=1, replicaIncrementStep=3) == [1, 4, 7]
    assert sizes(minReplicas=2, replicaDiscreteValues=[8, 2, 4, 16]) == [2, 4, 8]
    assert elastic_sizes({"spec": {"replicaSpecs": []}}) == []


def test_elastic_job_starts_with_what_fits_grows_and_shrinks(
    cluster: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    cluster.install("hyperpod-training-operator")
    cluster.sync_nodes([node(1), node(2)])
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], elastic_job("grows", {"minReplicas": 1, "maxReplicas": 4})
    )

    def job() -> dict[str, Any]:
        got: dict[str, Any] = custom.get_namespaced_custom_object(
            *HPJ[:2], "default", HPJ[2], "grows"
        )
        return got

    def running() -> list[Any]:
        return [
            p
            for p in core.list_namespaced_pod("default", label_selector="HPJob=grows").items
            if p.status.phase == "Running" and not p.metadata.deletion_timestamp
        ]

    def settled(target: int) -> bool:
        scaling = job().get("status", {}).get("elasticScalingStatus") or {}
        return scaling.get("targetReplicas") == {"pods": target} and len(running()) == target

    # Two free nodes of the four allowed: it starts with two.
    eventually(lambda: settled(2), timeout=20)
    assert "lastScalingTime" not in job()["status"]["elasticScalingStatus"]

    # Two more nodes join the group: it grows to four; the running pods hear of it.
    cluster.sync_nodes([node(1), node(2), node(3), node(4)])
    eventually(lambda: settled(4), timeout=20)
    status = job()["status"]
    assert status["elasticScalingStatus"]["lastScalingTime"]
    assert status["elasticScalingStatus"]["isFaultyPodScaleDown"] is False
    assert status.get("restartCount", 0) == 0
    eventually(
        lambda: any(
            "elastic scaling event: world size 2 -> 4" in line
            for line in cluster.logs.lines("default", "grows-pods-0", "pytorch")
        )
    )
    new = core.read_namespaced_pod("grows-pods-3", "default")
    env = {e.name: e.value for e in new.spec.containers[0].env}
    assert env["NNODES"] == "4" and env["WORLD_SIZE"] == "32"
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=grows")
    reasons = [e.reason for e in events.items]
    assert "ElasticJobStarted" in reasons and "ElasticScaleUp" in reasons

    # Three nodes go (one of them runs pod 0): it shrinks to one, replacing what it lost,
    # without spending the retry budget.
    survivor = core.read_namespaced_pod("grows-pods-1", "default").spec.node_name
    keep = next(n for n in (node(1), node(2), node(3), node(4)) if survivor.endswith(n.instance_id))
    cluster.sync_nodes([keep])
    eventually(lambda: settled(1), timeout=20)
    status = job()["status"]
    assert status["elasticScalingStatus"]["isFaultyPodScaleDown"] is True
    assert status.get("restartCount", 0) == 0
    [left] = running()
    assert left.metadata.name == "grows-pods-0" and left.spec.node_name == survivor

    # No node at all: it stays at its minimum, its pod waiting for one.
    cluster.sync_nodes([])
    eventually(
        lambda: (
            (job()["status"]["elasticScalingStatus"]["targetReplicas"] == {"pods": 1})
            and not running()
        ),
        timeout=20,
    )
    cluster.sync_nodes([node(5)])
    eventually(lambda: settled(1), timeout=20)
    custom.delete_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "grows")


def test_elastic_steps_and_scaling_timeout(
    cluster: ApiServer, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    cluster.install("hyperpod-training-operator")
    cluster.sync_nodes([node(n) for n in range(10, 13)])
    policy = {
        "minReplicas": 2,
        "maxReplicas": 6,
        "replicaIncrementStep": 2,
        "scalingTimeoutInSeconds": 2,
    }
    custom.create_namespaced_custom_object(
        *HPJ[:2], "default", HPJ[2], elastic_job("steps", policy, replicas=2)
    )

    def target() -> dict[str, int] | None:
        got = custom.get_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "steps")
        scaling = (got.get("status") or {}).get("elasticScalingStatus") or {}
        return scaling.get("targetReplicas")

    # Three nodes hold three pods, but the policy allows 2, 4 or 6: it runs two.
    eventually(lambda: target() == {"pods": 2}, timeout=20)
    cluster.sync_nodes([node(n) for n in range(10, 14)])
    time.sleep(1.0)
    assert target() == {"pods": 2}  # the room has not lasted scalingTimeoutInSeconds yet
    eventually(lambda: target() == {"pods": 4}, timeout=20)
    custom.delete_namespaced_custom_object(*HPJ[:2], "default", HPJ[2], "steps")
