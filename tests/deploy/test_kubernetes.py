"""The Kubernetes deployment (deploy/kubernetes): rendered by kustomize (the kubectl binary the
project pins), validated against the Kubernetes 1.33 schemas (kubernetes-validate, strict), held
to the deployment rules (replicas, probes, PodDisruptionBudgets, requests, secrets by reference,
IRSA), and applied with `kubectl apply --dry-run=server` to the Kubernetes API emulator."""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from sim.k8s import KubeWorld
from sim.profile import get_profile

REPO_ROOT = Path(__file__).resolve().parents[2]
BASE = REPO_ROOT / "deploy" / "kubernetes" / "base"
NATS_VALUES = REPO_ROOT / "deploy" / "kubernetes" / "nats" / "values.yaml"
KUBECTL = str(REPO_ROOT / ".venv" / "bin" / "kubectl")
KUBERNETES_VERSION = "1.33.0"  # EKS standard support

WORKLOADS = {
    "hyperpilot-gateway",
    "hyperpilot-cluster-svc",
    "hyperpilot-workload-svc",
    "hyperpilot-inference-svc",
    "hyperpilot-mcp",
}
AWS_CALLERS = {"hyperpilot-cluster-svc", "hyperpilot-workload-svc", "hyperpilot-inference-svc"}
# The Secrets the manifests name (made by the cluster's secret store, never rendered here).
REFERENCED_SECRETS = {"hyperpilot-database", "hyperpilot-admin-token", "hyperpilot-mcp"}


def _kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, *args], capture_output=True, text=True, timeout=120, input=stdin
    )


def _render(directory: Path) -> list[dict[str, Any]]:
    result = _kubectl("kustomize", str(directory))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return _render(BASE)


def _by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    return containers


def test_every_rendered_object_passes_the_kubernetes_schemas(
    rendered: list[dict[str, Any]],
) -> None:
    assert len(rendered) >= 15
    for doc in rendered:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        assert doc["metadata"].get("namespace", "hyperpilot") == "hyperpilot" or doc["kind"] == (
            "Namespace"
        )


def test_the_schema_check_refuses_what_kubernetes_refuses(
    rendered: list[dict[str, Any]],
) -> None:
    gateway = copy.deepcopy(_by_kind(rendered, "Deployment")["hyperpilot-gateway"])
    _containers(gateway)[0]["readinessProbe"]["httpGet"]["paht"] = "/readyz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(gateway, KUBERNETES_VERSION, strict=True)


def test_each_workload_has_replicas_probes_requests_and_a_disruption_budget(
    rendered: list[dict[str, Any]],
) -> None:
    deployments = _by_kind(rendered, "Deployment")
    budgets = _by_kind(rendered, "PodDisruptionBudget")
    assert set(deployments) == WORKLOADS
    for name, deployment in deployments.items():
        spec = deployment["spec"]
        assert spec["replicas"] >= 2, name
        assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0, name
        labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"].items() <= labels.items(), name
        pod = spec["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        for container in _containers(deployment):
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                assert probe in container, (name, probe)
            requests = container["resources"]["requests"]
            assert {"cpu", "memory"} <= set(requests), name
            assert "memory" in container["resources"]["limits"], name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert container["image"].startswith("hyperpilot/") and ":" in container["image"]
        budget = budgets[name]
        assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items(), name
        assert ("minAvailable" in budget["spec"]) != ("maxUnavailable" in budget["spec"])


def test_readiness_follows_the_bus_and_the_database(rendered: list[dict[str, Any]]) -> None:
    deployments = _by_kind(rendered, "Deployment")
    gateway = _containers(deployments["hyperpilot-gateway"])[0]
    assert gateway["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for name in AWS_CALLERS:
        container = _containers(deployments[name])[0]
        env = {e["name"]: e for e in container["env"]}
        assert env["HEALTH_PORT"]["value"] == "8080"
        assert container["readinessProbe"]["httpGet"]["path"] != "/healthz"  # NATS-ready path


def test_secrets_are_referenced_never_rendered(rendered: list[dict[str, Any]]) -> None:
    assert not [d for d in rendered if d["kind"] == "Secret"]
    named: set[str] = set()
    for doc in rendered:
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        pod = doc["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for env in container.get("env", []):
                if env["name"] in ("DATABASE_URL", "HYPERPILOT_ADMIN_TOKEN", "MCP_GATEWAY_TOKEN"):
                    assert "value" not in env, (doc["metadata"]["name"], env)
                    named.add(env["valueFrom"]["secretKeyRef"]["name"])
        for volume in pod.get("volumes", []):
            if "secret" in volume:
                named.add(volume["secret"]["secretName"])
    assert named == REFERENCED_SECRETS
    config = next(d for d in rendered if d["kind"] == "ConfigMap")
    assert not {"DATABASE_URL", "HYPERPILOT_ADMIN_TOKEN"} & set(config["data"])
    assert config["data"]["NATS_STREAM_REPLICAS"] == "3"


def test_only_the_aws_callers_get_the_irsa_role(rendered: list[dict[str, Any]]) -> None:
    accounts = _by_kind(rendered, "ServiceAccount")
    role = accounts["hyperpilot-aws"]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert role.startswith("arn:aws:iam::") and ":role/" in role
    for name in ("hyperpilot-gateway", "hyperpilot-mcp"):
        assert "eks.amazonaws.com/role-arn" not in accounts[name]["metadata"].get("annotations", {})
    for name, deployment in _by_kind(rendered, "Deployment").items():
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        assert (account == "hyperpilot-aws") == (name in AWS_CALLERS), name


def test_the_migration_job_runs_shared_migrate_once_per_release(
    rendered: list[dict[str, Any]],
) -> None:
    job = _by_kind(rendered, "Job")["hyperpilot-migrate"]
    container = _containers(job)[0]
    assert container["command"] == ["python", "-m", "shared.migrate"]
    assert job["spec"]["ttlSecondsAfterFinished"] > 0 and job["spec"]["backoffLimit"] > 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_an_overlay_sets_the_role_and_the_images(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    role = "arn:aws:iam::444455556666:role/hp-prod"
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(BASE, overlay)],  # kustomize wants it relative
                "images": [
                    {
                        "name": "hyperpilot/gateway",
                        "newName": "444455556666.dkr.ecr.us-east-1.amazonaws.com/hyperpilot/gateway",
                        "newTag": "1.2.3",
                    }
                ],
                "patches": [
                    {
                        "target": {"kind": "ServiceAccount", "name": "hyperpilot-aws"},
                        "patch": yaml.safe_dump(
                            [
                                {
                                    "op": "replace",
                                    "path": "/metadata/annotations/eks.amazonaws.com~1role-arn",
                                    "value": role,
                                }
                            ]
                        ),
                    }
                ],
            }
        )
    )
    docs = _render(overlay)
    accounts = _by_kind(docs, "ServiceAccount")
    assert accounts["hyperpilot-aws"]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == (
        role
    )
    gateway = _containers(_by_kind(docs, "Deployment")["hyperpilot-gateway"])[0]
    assert gateway["image"].endswith("/hyperpilot/gateway:1.2.3")
    job = _containers(_by_kind(docs, "Job")["hyperpilot-migrate"])[0]
    assert job["image"] == gateway["image"]  # the migration runs the release it migrates for


def test_the_nats_values_ask_for_a_three_server_jetstream_cluster() -> None:
    values = yaml.safe_load(NATS_VALUES.read_text())
    assert values["config"]["cluster"] == {"enabled": True, "replicas": 3}
    jetstream = values["config"]["jetstream"]
    assert jetstream["enabled"] and jetstream["fileStore"]["pvc"]["enabled"]
    assert values["podDisruptionBudget"]["enabled"] is True


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    world = KubeWorld(get_profile("fast"))
    world.start_cluster("hp-management")
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(yaml.safe_dump(world.api_server("hp-management").kubeconfig()))
    try:
        yield path
    finally:
        world.stop_cluster("hp-management")
        world.close()


def test_server_side_dry_run_on_the_emulator_accepts_all_and_creates_nothing(
    rendered: list[dict[str, Any]], kubeconfig: Path
) -> None:
    namespace = next(d for d in rendered if d["kind"] == "Namespace")
    created = _kubectl(
        "--kubeconfig", str(kubeconfig), "apply", "-f", "-", stdin=yaml.safe_dump(namespace)
    )
    assert created.returncode == 0, created.stderr
    bundle = yaml.safe_dump_all(rendered)
    result = _kubectl(
        "--kubeconfig", str(kubeconfig), "apply", "--dry-run=server", "-f", "-", stdin=bundle
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(rendered) and all("(server dry run)" in line for line in lines)
    for kind in ("deployment.apps", "poddisruptionbudget.policy", "job.batch", "serviceaccount"):
        assert any(line.startswith(kind + "/") for line in lines), (kind, lines)
    listed = _kubectl(
        "--kubeconfig", str(kubeconfig), "-n", "hyperpilot", "get", "deploy,pdb,job", "-o", "name"
    )
    assert listed.returncode == 0 and listed.stdout.strip() == "", listed.stdout  # nothing made


def test_server_side_dry_run_refuses_what_the_api_server_refuses(
    rendered: list[dict[str, Any]], kubeconfig: Path
) -> None:
    gateway = copy.deepcopy(_by_kind(rendered, "Deployment")["hyperpilot-gateway"])
    gateway["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] = "not-the-gateway"
    result = _kubectl(
        "--kubeconfig",
        str(kubeconfig),
        "apply",
        "--dry-run=server",
        "-f",
        "-",
        stdin=yaml.safe_dump(gateway),
    )
    assert result.returncode != 0
    assert "selector" in result.stderr and "does not match" in result.stderr, result.stderr


EKS_OVERLAY = REPO_ROOT / "deploy" / "cloudformation" / "eks"


def test_the_cloudformation_eks_overlay_applies_inside_the_namespace_only(
    rendered: list[dict[str, Any]], kubeconfig: Path
) -> None:
    """deploy/cloudformation/eks (what the stack's ApplyCommand builds on): the base without its
    Namespace (a cluster administrator makes it; the operator's access entry is namespaced) and
    without the IRSA annotations (the role comes from the stack's Pod Identity association), and
    the API server accepts every object in a server-side dry run."""
    docs = _render(EKS_OVERLAY)
    assert {d["kind"] for d in docs} == {d["kind"] for d in rendered} - {"Namespace"}
    assert len(docs) == len(rendered) - 1
    assert {d["metadata"]["namespace"] for d in docs} == {"hyperpilot"}
    accounts = _by_kind(docs, "ServiceAccount")
    assert all("annotations" not in a["metadata"] for a in accounts.values())
    # Otherwise what the base renders.
    base = {(d["kind"], d["metadata"]["name"]): d for d in rendered}
    for doc in docs:
        if doc["kind"] != "ServiceAccount":
            assert doc == base[(doc["kind"], doc["metadata"]["name"])]
    namespace = next(d for d in rendered if d["kind"] == "Namespace")
    created = _kubectl(
        "--kubeconfig", str(kubeconfig), "apply", "-f", "-", stdin=yaml.safe_dump(namespace)
    )
    assert created.returncode == 0, created.stderr
    result = _kubectl(
        "--kubeconfig",
        str(kubeconfig),
        "apply",
        "--dry-run=server",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(docs) and all("(server dry run)" in line for line in lines)
