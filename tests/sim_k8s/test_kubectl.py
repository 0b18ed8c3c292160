"""kubectl 1.37, unmodified, against the emulator: apply, get -w, logs -f, patch, delete, wait."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from sim.k8s import ApiServer
from tests.sim_k8s.conftest import KUBECTL, eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
"""
TALKER = """
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  restartPolicy: Never
  containers:
  - name: talker
    image: busybox:1.36
    command: [sh, -c, "echo one; echo two; echo three; sleep 3; echo done"]
"""


def test_apply_wait_available_and_reapply(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(DEPLOYMENT)
    out = kubectl("apply", "-f", str(manifest)).stdout
    assert "deployment.apps/web created" in out and "service/web created" in out
    kubectl("wait", "--for=condition=Available", "deployment/web", "--timeout=30s")
    pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Running" for p in pods)
    assert "unchanged" in kubectl("apply", "-f", str(manifest)).stdout
    manifest.write_text(DEPLOYMENT.replace("replicas: 2", "replicas: 3"))
    assert "deployment.apps/web configured" in kubectl("apply", "-f", str(manifest)).stdout
    eventually(
        lambda: (
            json.loads(kubectl("get", "deploy", "web", "-o", "json").stdout)["status"].get(
                "availableReplicas"
            )
            == 3
        )
    )
    svc = eventually(
        lambda: json.loads(kubectl("get", "svc", "web", "-o", "json").stdout)["status"][
            "loadBalancer"
        ].get("ingress")
    )
    assert svc[0]["hostname"].endswith(".elb.us-east-1.amazonaws.com")
    table = kubectl("get", "pods", "-l", "app=web").stdout
    assert "READY" in table.splitlines()[0] and table.count("Running") == 3


def test_invalid_deployment_rejected_by_server(kubectl: Kubectl, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        DEPLOYMENT.split("---")[0]
        .replace(
            "{app: web}}\n  template:\n    metadata: {labels: {app: web}}",
            "{app: web}}\n  template:\n    metadata: {labels: {app: nope}}",
        )
        .replace("name: web,", "name: bad,")
    )
    result = kubectl("apply", "-f", str(bad), check=False)
    assert result.returncode != 0
    assert "is invalid" in result.stderr and "selector" in result.stderr


def test_get_watch_streams_changes(kubectl: Kubectl, kubeconfig: Path) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\ndata: {a: '1'}\n",
    )
    proc = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "configmap",
            "watched",
            "-w",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def read_until(count: int) -> None:
        assert proc.stdout is not None
        deadline = time.monotonic() + 15
        while len(lines) < count and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line and not line.startswith("EVENT"):
                lines.append(" ".join(line.split()[:2]))

    try:
        read_until(1)  # the watch is established once the initial object is printed
        kubectl("patch", "configmap", "watched", "-p", '{"data":{"a":"2"}}')
        kubectl("delete", "configmap", "watched")
        read_until(3)
    finally:
        proc.kill()
        proc.wait()
    assert lines == ["ADDED watched", "MODIFIED watched", "DELETED watched"], lines


def test_logs_follow_tail_and_container(
    kubectl: Kubectl, kubeconfig: Path, cluster: ApiServer
) -> None:
    kubectl("apply", "-f", "-", stdin=TALKER)
    eventually(
        lambda: (
            "Running" in kubectl("get", "pod", "talker", "-o", "jsonpath={.status.phase}").stdout
        )
    )
    assert kubectl("logs", "talker", "--tail=2").stdout.splitlines() == ["two", "three"]
    follow = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "logs", "-f", "talker"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert follow.stdout.splitlines() == ["one", "two", "three", "done"]
    eventually(
        lambda: (
            kubectl("get", "pod", "talker", "-o", "jsonpath={.status.phase}").stdout == "Succeeded"
        )
    )
    stamped = kubectl("logs", "talker", "--timestamps", "-c", "talker").stdout.splitlines()
    assert stamped[0].endswith(" one") and stamped[0][:4].isdigit()


def test_patch_types_and_delete(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=DEPLOYMENT.split("---")[0].replace("web", "p").replace("replicas: 2", "replicas: 1"),
    )
    kubectl(
        "patch",
        "deployment",
        "p",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"p","env":[{"name":"A","value":"1"}]}]}}}}',
    )
    kubectl(
        "patch", "deployment", "p", "--type=merge", "-p", '{"metadata":{"labels":{"team":"ml"}}}'
    )
    kubectl(
        "patch",
        "deployment",
        "p",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":2}]',
    )
    dep = json.loads(kubectl("get", "deployment", "p", "-o", "json").stdout)
    assert dep["spec"]["replicas"] == 2 and dep["metadata"]["labels"]["team"] == "ml"
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert (
        container["name"] == "p"
        and container["image"] == "nginx:1.27"
        and container["env"] == [{"name": "A", "value": "1"}]
    )
    kubectl("wait", "--for=condition=Available", "deployment/p", "--timeout=30s")
    kubectl("delete", "deployment", "p", "--timeout=30s")
    eventually(lambda: kubectl("get", "pods", "-l", "app=p", "-o", "name").stdout.strip() == "")
    assert kubectl("get", "rs", "-l", "app=p", "-o", "name").stdout.strip() == ""


def test_server_side_apply_with_kubectl(kubectl: Kubectl, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\ndata: {k: v}\n"
    )
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", str(manifest)).stdout
    managers = json.loads(
        kubectl("get", "cm", "ssa", "-o", "json", "--show-managed-fields").stdout
    )["metadata"]["managedFields"]
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in managers)


def test_unknown_fields_are_rejected_under_kubectl_strict_validation(
    kubectl: Kubectl, cluster: ApiServer
) -> None:
    typo = (
        DEPLOYMENT.split("---")[0]
        .replace("name: web,", "name: typo,")
        .replace(
            "        image: nginx:1.27",
            "        image: nginx:1.27\n        imagePullPolicyy: Always",
        )
    )
    result = kubectl("apply", "-f", "-", stdin=typo, check=False)
    assert (
        result.returncode != 0
        and "strict decoding error" in result.stderr
        and "imagePullPolicyy" in result.stderr
    )
    cluster.install("keda")
    scaled = """
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: so, namespace: default}
spec:
  scaleTargetRef: {name: web}
  triggers: [{type: cpu, metadata: {value: "50"}}]
  maxReplicas: 3
"""
    result = kubectl("apply", "-f", "-", stdin=scaled, check=False)
    assert result.returncode != 0 and 'unknown field "spec.maxReplicas"' in result.stderr
    assert (
        kubectl(
            "apply", "-f", "-", stdin=scaled.replace("maxReplicas", "maxReplicaCount")
        ).returncode
        == 0
    )


def test_explain_reads_the_openapi_schemas(kubectl: Kubectl, cluster: ApiServer) -> None:
    out = kubectl("explain", "deployment.spec.strategy").stdout
    assert "rollingUpdate" in out and "RollingUpdateDeployment" in out
    cluster.install("hyperpod-training-operator")
    out = kubectl("explain", "hyperpodpytorchjobs.spec.runPolicy").stdout
    assert "jobMaxRetryCount" in out and "logMonitoringConfiguration" in out


def test_drain_evicts_pods_to_other_nodes(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=DEPLOYMENT.split("---")[0]
        .replace("name: web,", "name: drained,")
        .replace("app: web", "app: drained"),
    )
    kubectl("wait", "--for=condition=Available", "deployment/drained", "--timeout=30s")
    nodes = json.loads(
        kubectl("get", "nodes", "-l", "eks.amazonaws.com/nodegroup=system", "-o", "json").stdout
    )["items"]
    target = nodes[0]["metadata"]["name"]
    out = kubectl("drain", target, "--ignore-daemonsets", "--timeout=30s").stdout
    assert "drained" in out
    try:

        def moved() -> bool:
            pods = json.loads(kubectl("get", "pods", "-l", "app=drained", "-o", "json").stdout)[
                "items"
            ]
            running = [p for p in pods if p["status"]["phase"] == "Running"]
            return len(running) == 2 and all(p["spec"].get("nodeName") != target for p in running)

        eventually(moved)
    finally:
        kubectl("uncordon", target)
