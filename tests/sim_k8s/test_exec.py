"""`pods/exec` against the emulator, driven by the pinned kubectl (WebSocket v5.channel.k8s.io)
and by the official Python client's stream (v4.channel.k8s.io): what runs in the container
answers from the pod's own spec, its volumes and its node."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
from kubernetes import client
from kubernetes.stream import stream

from sim.interfaces import SimNode
from sim.k8s import ApiServer
from tests.sim_k8s.conftest import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

OBJECTS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: shell-config}
data: {greeting: hello from the config map, mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: shell-secret}
stringData: {token: s3cr3t}
---
apiVersion: v1
kind: Pod
metadata: {name: shell, labels: {app: shell}}
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: [sleep, "3600"]
    env:
    - {name: STAGE, value: test}
    - {name: WHERE, value: "$(STAGE)-cluster"}
    - name: MY_POD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: MODE
      valueFrom: {configMapKeyRef: {name: shell-config, key: mode}}
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: shell-secret, key: token}}
    volumeMounts:
    - {name: config, mountPath: /etc/config}
    - {name: scratch, mountPath: /scratch}
  - name: side
    image: busybox:1.36
    command: [sleep, "3600"]
  volumes:
  - name: config
    configMap: {name: shell-config}
  - name: scratch
    emptyDir: {}
"""


@pytest.fixture(scope="module")
def shell_pod(kubectl: Kubectl) -> str:
    kubectl("apply", "-f", "-", stdin=OBJECTS)
    eventually(
        lambda: "Running" in kubectl("get", "pod", "shell", "-o", "jsonpath={.status.phase}").stdout
    )
    return "shell"


def test_kubectl_exec_runs_the_command_with_the_pods_environment(
    kubectl: Kubectl, shell_pod: str
) -> None:
    out = kubectl("exec", shell_pod, "-c", "main", "--", "printenv", "STAGE", "WHERE", "MY_POD")
    assert out.stdout.splitlines() == ["test", "test-cluster", "shell"]
    env = kubectl("exec", shell_pod, "-c", "main", "--", "env").stdout
    assert "MODE=fast" in env and "TOKEN=s3cr3t" in env and "HOSTNAME=shell" in env
    assert "KUBERNETES_SERVICE_HOST=" in env
    assert kubectl("exec", shell_pod, "-c", "main", "--", "hostname").stdout == "shell\n"


def test_kubectl_exec_reads_mounted_config_and_writes_to_volumes(
    kubectl: Kubectl, shell_pod: str
) -> None:
    listing = kubectl("exec", shell_pod, "-c", "main", "--", "ls", "/etc/config").stdout
    assert listing.splitlines() == ["greeting", "mode"]
    greeting = kubectl("exec", shell_pod, "-c", "main", "--", "cat", "/etc/config/greeting")
    assert greeting.stdout == "hello from the config map"
    script = "echo checkpoint > /scratch/step-1 && ls -l /scratch"
    written = kubectl("exec", shell_pod, "-c", "main", "--", "sh", "-c", script).stdout
    assert written.split()[-2:] == ["11", "step-1"]  # "checkpoint\n" is 11 bytes
    refused = kubectl(
        "exec", shell_pod, "-c", "main", "--", "sh", "-c", "echo x > /etc/config/mode", check=False
    )
    assert refused.returncode == 2 and "Read-only file system" in refused.stderr


def test_kubectl_exec_exit_codes_and_missing_commands(kubectl: Kubectl, shell_pod: str) -> None:
    failed = kubectl("exec", shell_pod, "-c", "main", "--", "sh", "-c", "exit 3", check=False)
    assert failed.returncode == 3
    missing = kubectl("exec", shell_pod, "-c", "main", "--", "no-such-tool", check=False)
    assert missing.returncode != 0
    assert 'exec: "no-such-tool": executable file not found in $PATH' in missing.stderr
    inside = kubectl("exec", shell_pod, "-c", "main", "--", "sh", "-c", "nope", check=False)
    assert inside.returncode == 127 and "nope: not found" in inside.stderr
    # a container with no GPU has no nvidia-smi, as with the NVIDIA container runtime
    smi = kubectl("exec", shell_pod, "-c", "main", "--", "nvidia-smi", check=False)
    assert smi.returncode != 0 and "executable file not found" in smi.stderr


def test_kubectl_exec_with_stdin_runs_a_shell_line_by_line(
    kubectl: Kubectl, shell_pod: str
) -> None:
    out = kubectl(
        "exec", "-i", shell_pod, "-c", "main", "--", "sh", stdin="echo first\nprintenv STAGE\n"
    )
    assert out.stdout.splitlines() == ["first", "test"]


def test_exec_is_refused_before_the_upgrade_when_it_cannot_run(
    kubectl: Kubectl, shell_pod: str
) -> None:
    wrong = kubectl("exec", shell_pod, "-c", "nope", "--", "true", check=False)
    assert wrong.returncode != 0 and "container nope is not valid for pod shell" in wrong.stderr
    absent = kubectl("exec", "no-such-pod", "--", "true", check=False)
    assert absent.returncode != 0 and 'pods "no-such-pod" not found' in absent.stderr


def test_the_python_client_streams_exec_over_v4(core: client.CoreV1Api, shell_pod: str) -> None:
    out = stream(
        core.connect_get_namespaced_pod_exec,
        shell_pod,
        "default",
        container="main",
        command=["sh", "-c", "echo out; cat /nowhere"],
        stderr=True,
        stdout=True,
        stdin=False,
        tty=False,
        _preload_content=False,
    )
    out.run_forever(timeout=10)
    assert out.read_stdout() == "out\n"
    assert "cat: /nowhere: No such file or directory" in out.read_stderr()
    assert out.returncode == 1


def test_a_terminal_session_echoes_and_takes_the_resize_channel(
    core: client.CoreV1Api, shell_pod: str
) -> None:
    """tty=true with stdin: the official client's WSClient writes keystrokes on channel 0 and
    a TerminalSize on channel 4; the shell echoes, answers and reports the size it was given."""
    import json
    import time

    session = stream(
        core.connect_get_namespaced_pod_exec,
        shell_pod,
        "default",
        container="main",
        command=["sh"],
        stderr=True,
        stdout=True,
        stdin=True,
        tty=True,
        _preload_content=False,
    )
    seen = ""

    def until(text: str) -> str:
        nonlocal seen
        deadline = time.monotonic() + 10
        while text not in seen:
            assert time.monotonic() < deadline, seen
            session.update(timeout=0.2)
            seen += session.read_stdout(timeout=0) or ""
        return seen

    until("# ")
    session.write_stdin("stty size\r")
    assert "24 80" in until("24 80\r\n")  # before any resize: the default size
    session.write_channel(4, json.dumps({"Width": 132, "Height": 40}))
    session.write_stdin("stty size\r")
    until("40 132\r\n")
    session.write_stdin("echo hi\r")
    assert "echo hi\r\nhi\r\n" in until("hi\r\n# ")
    session.write_stdin("exit\r")
    session.run_forever(timeout=10)
    assert session.returncode == 0
    no_tty = stream(
        core.connect_get_namespaced_pod_exec,
        shell_pod,
        "default",
        container="main",
        command=["stty", "size"],
        stderr=True,
        stdout=True,
        stdin=False,
        tty=False,
        _preload_content=False,
    )
    no_tty.run_forever(timeout=10)
    assert "Inappropriate ioctl for device" in no_tty.read_stderr()


def test_nvidia_smi_lists_the_gpus_the_container_was_given(
    kubectl: Kubectl, cluster: ApiServer, core: client.CoreV1Api
) -> None:
    instance = "i-0e8ec0000000000a1"
    cluster.sync_nodes(
        [SimNode(instance, "gpu", "ml.g5.12xlarge", "Running", "us-east-1a", "hp-exec")]
    )
    node = eventually(
        lambda: next(
            (
                str(n.metadata.name)
                for n in core.list_node().items
                if n.metadata and instance in str(n.metadata.name)
            ),
            None,
        )
    )
    pod = f"""
apiVersion: v1
kind: Pod
metadata: {{name: gpu-shell}}
spec:
  nodeName: {node}
  tolerations: [{{operator: Exists}}]
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sleep, "3600"]
    resources: {{limits: {{nvidia.com/gpu: 2}}}}
"""
    kubectl("apply", "-f", "-", stdin=pod)
    eventually(
        lambda: (
            "Running" in kubectl("get", "pod", "gpu-shell", "-o", "jsonpath={.status.phase}").stdout
        )
    )
    lines = kubectl("exec", "gpu-shell", "--", "nvidia-smi", "-L").stdout.splitlines()
    assert len(lines) == 2  # the two it asked for, of the node's four
    assert all(line.startswith("GPU ") and "NVIDIA A10G (UUID: GPU-" in line for line in lines)
    table = kubectl("exec", "gpu-shell", "--", "nvidia-smi").stdout
    assert table.count("NVIDIA A10G") == 2 and "23028MiB" in table
