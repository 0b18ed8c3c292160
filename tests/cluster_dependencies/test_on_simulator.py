"""The dependencies and storage stages through the real StageEngine and PostgreSQL, against the
simulated AWS (unmodified boto3) and the emulated Kubernetes API (the official client and
kubectl over HTTPS, authenticated with the EKS token this adapter makes)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import boto3
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.eks_addons import EksAddons
from cluster_svc.adapters.k8s import EksKubeFactory, eks_token
from cluster_svc.domain.components.base import COMPONENT_LABEL, cluster_access, object_ref
from cluster_svc.domain.dependencies import create_stages, delete_stages, dependency_set
from shared.contracts.commands import CreateCluster, DeleteCluster
from shared.operations import create_operation
from shared.stages import Done, RetryPolicy, Stage, StageContext, StageEngine, Workflow
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.cluster_dependencies.conftest import REGION, unique
from tests.cluster_dependencies.helpers import create_command
from tests.integration.helpers import delivery, events_of, stage_rows

KUBECTL = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kubectl")
ADDONS = {
    "cert-manager",
    "aws-mountpoint-s3-csi-driver",
    "aws-fsx-csi-driver",
    "amazon-sagemaker-hyperpod-training-operator",
    "amazon-cloudwatch-observability",
}


@pytest.fixture
def factory() -> Iterator[EksKubeFactory]:
    made = EksKubeFactory(REGION)
    yield made
    made.close()


def eks_outputs(cluster: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster_arn": cluster["arn"],
        "cluster_name": cluster["name"],
        "endpoint": cluster["endpoint"],
        "ca_data": cluster["certificateAuthority"]["data"],
        "oidc_issuer": cluster["identity"]["oidc"]["issuer"],
        "created": [],
    }


def upstream(outputs: dict[str, dict[str, Any]]) -> list[Stage]:
    """The stages the dependency stages need, standing for what their own stages found."""

    def found(values: dict[str, Any]) -> Any:
        async def run(ctx: StageContext) -> Done:
            return Done(values, noop=True)

        return run

    return [Stage(name, name, found(values)) for name, values in outputs.items()]


async def start(pool: asyncpg.Pool, command: Any, target: str) -> Any:
    async with pool.acquire() as conn:
        accepted = await create_operation(
            conn,
            command,
            target_type="cluster",
            target_id=target,
            request={"name": target},
            principal="tester",
            source="rest",
            idempotency_key=None,
        )
    return accepted.operation_id


def kube_api(cluster: dict[str, Any], tmp: Path) -> tuple[k8s.ApiClient, Path]:
    """A kubeconfig as `aws eks update-kubeconfig` writes it, with a token from get-token."""
    token = eks_token(boto3.session.Session(region_name=REGION), cluster["name"], REGION)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster["name"],
                "cluster": {
                    "server": cluster["endpoint"],
                    "certificate-authority-data": cluster["certificateAuthority"]["data"],
                },
            }
        ],
        "users": [{"name": "hyperpilot", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": cluster["name"], "user": "hyperpilot"}}],
        "current-context": "c",
    }
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return k8s_config.new_client_from_config_dict(config), path  # type: ignore[no-untyped-call]


def kubectl(kubeconfig: Path, *args: str) -> Any:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(done.stdout)


POD = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}


def samples() -> list[dict[str, Any]]:
    """One minimal custom resource of each kind the installed CRDs serve."""

    def cr(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
        name = f"sample-{kind.lower()}"
        return {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": name, "namespace": "hyperpod"},
            "spec": spec,
        }

    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": POD}
    return [
        cr("kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": {"Worker": replica}}),
        cr("kubeflow.org/v2beta1", "MPIJob", {"mpiReplicaSpecs": {"Launcher": replica}}),
        cr(
            "sagemaker.amazonaws.com/v1",
            "HyperPodPyTorchJob",
            {
                "nprocPerNode": "1",
                "replicaSpecs": [{"name": "pods", "replicas": 1, "template": POD}],
            },
        ),
        cr("ray.io/v1", "RayCluster", {"headGroupSpec": {"template": POD}}),
        cr(
            "ray.io/v1",
            "RayJob",
            {
                "entrypoint": "python -c 'print(1)'",
                "rayClusterSpec": {"headGroupSpec": {"template": POD}},
            },
        ),
        cr(
            "keda.sh/v1alpha1",
            "ScaledObject",
            {
                "scaleTargetRef": {"name": "router"},
                "triggers": [{"type": "cpu", "metadata": {"value": "50"}}],
            },
        ),
    ]


def addon_calls(sim: SimulatedAws, operation: str, cluster: str) -> list[dict[str, Any]]:
    """The simulator's log of mutating add-on calls made on this cluster."""
    return [c for c in sim.call_log("eks", operation) if c["params"].get("clusterName") == cluster]


async def resource_versions(factory: EksKubeFactory, outputs: dict[str, Any]) -> dict[Any, str]:
    kube = factory(cluster_access(outputs))
    versions = {}
    for component in dependency_set(outputs["cluster_name"], REGION):
        for obj in component.manifests:
            found = await kube.get(*object_ref(obj))
            assert found is not None, object_ref(obj)
            versions[object_ref(obj)] = found["metadata"]["resourceVersion"]
    return versions


async def test_dependencies_and_storage_install_then_rerun_as_noop_then_delete(
    pool: asyncpg.Pool,
    sim: SimulatedAws,
    eks_cluster: dict[str, Any],
    factory: EksKubeFactory,
    tmp_path: Path,
) -> None:
    name = eks_cluster["name"]
    bucket = unique("hp-data")
    aws_client(sim, "s3").create_bucket(Bucket=bucket)
    aws = AwsClients(REGION, sim.endpoint_url)
    addons = EksAddons(aws)
    given = {
        "eks_cluster": eks_outputs(eks_cluster),
        "access_entries": {"principal_arns": []},
        "oidc_provider": {"provider_arn": "arn:aws:iam::333344445555:oidc-provider/x"},
        "bucket": {"bucket": bucket},
    }
    workflow = Workflow(
        kind="cluster.create",
        command=CreateCluster,
        domain="cluster",
        stages=(*upstream(given), *create_stages(factory, addons)),
    )
    engine = StageEngine(
        pool, poll_initial=0.05, poll_max=0.2, retry=RetryPolicy(attempts=4, initial=0.05)
    )
    command = create_command(name=name, bucket=bucket)
    first = await start(pool, CreateCluster.from_payload(command), name)
    assert await engine.run(workflow, first, command, delivery()) == "succeeded"

    rows = await stage_rows(pool, first)
    deps = rows["dependencies"]
    assert deps["status"] == "succeeded" and deps["external_id"] == f"{name}/dependencies/2026.11"
    components = deps["outputs"]["components"]
    assert len(components) == 17
    # Everything is installed, except what an add-on installed first (the training operator
    # add-on brings the HyperPodPyTorchJob CRD, as on EKS): found in place, left unchanged.
    unchanged = sorted(n for n, c in components.items() if c["status"] == "unchanged")
    assert {c["status"] for c in components.values()} <= {"installed", "unchanged"}
    assert len(unchanged) <= 1, unchanged
    assert sorted(deps["outputs"]["created"]) == sorted(ADDONS)
    progress = [e["message"] for e in await events_of(pool, first) if e["type"] == "StageProgress"]
    assert any(m.endswith("/17 components ready") for m in progress), progress
    storage = rows["storage"]["outputs"]
    assert (storage["pvc_name"], storage["namespace"]) == ("s3-claim", "default")

    # AWS: every add-on ACTIVE at its declared version, tagged as ours
    eks = aws_client(sim, "eks")
    declared = {c.name: c.version for c in dependency_set(name, REGION)}
    for addon in ADDONS:
        described = eks.describe_addon(clusterName=name, addonName=addon)["addon"]
        assert described["status"] == "ACTIVE"
        assert described["addonVersion"] == declared[addon]
        assert described["tags"] == {"managed-by": "hyperpilot"}

    # Kubernetes, through the official client and kubectl
    api, kubeconfig = kube_api(eks_cluster, tmp_path)
    core: Any = k8s.CoreV1Api(api)
    apps: Any = k8s.AppsV1Api(api)
    namespaces = {n["metadata"]["name"] for n in kubectl(kubeconfig, "get", "namespaces")["items"]}
    assert namespaces == {n.metadata.name for n in core.list_namespace().items}
    assert {
        "aws-hyperpod",
        "hyperpod",
        "kubeflow",
        "ray-system",
        "keda",
        "hyperpod-inference-system",
    } <= namespaces
    crds = {i["metadata"]["name"] for i in kubectl(kubeconfig, "get", "crd")["items"]}
    assert {
        "pytorchjobs.kubeflow.org",
        "mpijobs.kubeflow.org",
        "hyperpodpytorchjobs.sagemaker.amazonaws.com",
        "rayclusters.ray.io",
        "rayjobs.ray.io",
        "scaledobjects.keda.sh",
    } <= crds
    deployments = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d["metadata"]["labels"]
        for d in kubectl(kubeconfig, "get", "deployments", "-A")["items"]
    }
    for wanted in (
        ("kubeflow", "training-operator"),
        ("mpi-operator", "mpi-operator"),
        ("ray-system", "kuberay-operator"),
        ("kube-system", "aws-load-balancer-controller"),
        ("keda", "keda-operator"),
    ):
        assert wanted in deployments
        assert deployments[wanted]["hyperpilot.io/component-version"]
    assert (
        deployments[("ray-system", "kuberay-operator")]["hyperpilot.io/component-version"]
        == "1.7.0"
    )
    daemonsets = {d.metadata.name for d in apps.list_daemon_set_for_all_namespaces().items}
    assert {
        "nvidia-device-plugin",
        "aws-efa-k8s-device-plugin",
        "health-monitoring-agent",
    } <= daemonsets
    managers = {
        m.manager
        for m in apps.read_namespaced_deployment("keda-operator", "keda").metadata.managed_fields
    }
    assert "hyperpilot" in managers  # server-side apply with our field manager
    kube = factory(cluster_access(given["eks_cluster"]))
    for sample in samples():  # every installed CRD serves its kind at the declared version
        made = await kube.apply(sample)
        assert made["metadata"]["uid"] and made["kind"] == sample["kind"]
    pvc = core.read_namespaced_persistent_volume_claim("s3-claim", "default")
    assert pvc.status.phase == "Bound" and pvc.spec.volume_name == storage["pv_name"]
    pv = core.read_persistent_volume(storage["pv_name"])
    assert pv.spec.csi.driver == "s3.csi.aws.com"
    assert pv.spec.csi.volume_attributes == {"bucketName": bucket}
    assert pv.spec.mount_options == ["allow-delete", f"region {REGION}"]

    # a second operation changes nothing: no mutating AWS call, no object rewritten
    creates = len(addon_calls(sim, "CreateAddon", name))
    assert creates == len(ADDONS)
    before = await resource_versions(factory, given["eks_cluster"])
    storage_versions = (pvc.metadata.resource_version, pv.metadata.resource_version)
    second = await start(pool, CreateCluster.from_payload(command), name)
    assert await engine.run(workflow, second, command, delivery()) == "noop"
    again = await stage_rows(pool, second)
    assert again["dependencies"]["status"] == "noop"
    assert {c["status"] for c in again["dependencies"]["outputs"]["components"].values()} == {
        "unchanged"
    }
    assert again["storage"]["status"] == "noop"
    assert len(addon_calls(sim, "CreateAddon", name)) == creates
    assert addon_calls(sim, "UpdateAddon", name) == []
    assert await resource_versions(factory, given["eks_cluster"]) == before
    assert (
        core.read_namespaced_persistent_volume_claim(
            "s3-claim", "default"
        ).metadata.resource_version,
        core.read_persistent_volume(storage["pv_name"]).metadata.resource_version,
    ) == storage_versions

    # delete: the claim and volume, then exactly the add-ons this operation installed
    resources = {name: row["outputs"] for name, row in rows.items()}
    delete_flow = Workflow(
        kind="cluster.delete",
        command=DeleteCluster,
        domain="cluster",
        stages=(*upstream({"delete_hyperpod": {}}), *delete_stages(factory, addons)),
    )
    delete = DeleteCluster(name=name, region=REGION, resources=resources)
    third = await start(pool, delete, name)
    assert (
        await engine.run(delete_flow, third, delete.model_dump(mode="json"), delivery())
        == "succeeded"
    )
    assert eks.list_addons(clusterName=name)["addons"] == []
    assert [
        c.metadata.name for c in core.list_namespaced_persistent_volume_claim("default").items
    ] == []
    assert all(
        (p.metadata.labels or {}).get(COMPONENT_LABEL) != "storage"
        for p in core.list_persistent_volume().items
    )
    api.close()  # type: ignore[no-untyped-call]
