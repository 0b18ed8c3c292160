"""`pods/portforward` against the emulator: the pinned kubectl (SPDY tunnelled in a WebSocket,
and plain SPDY/3.1 when WebSockets are turned off) with an HTTP client through the local port,
and the official Python client's v4.channel.k8s.io stream."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from kubernetes import client
from kubernetes.stream import portforward

from tests.sim_k8s.conftest import KUBECTL, eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

SERVER = """
apiVersion: v1
kind: Pod
metadata: {name: model-server}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.8.5
    args: [--model, Qwen/Qwen3-0.6B, --port, "8000"]
    ports: [{containerPort: 8000}]
"""


@pytest.fixture(scope="module")
def server_pod(kubectl: Kubectl) -> str:
    kubectl("apply", "-f", "-", stdin=SERVER)
    eventually(
        lambda: (
            "Running"
            in kubectl("get", "pod", "model-server", "-o", "jsonpath={.status.phase}").stdout
        ),
        timeout=30,
    )
    return "model-server"


def _forward(kubeconfig: Path, target: str, websockets: bool) -> Iterator[int]:
    env = dict(os.environ, KUBECTL_PORT_FORWARD_WEBSOCKETS="true" if websockets else "false")
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "port-forward", target, ":8000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:NNNNN -> 8000"
        found = re.search(r"127\.0\.0\.1:(\d+) -> 8000", line)
        assert found, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield int(found.group(1))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("websockets", [True, False], ids=["websocket-tunnel", "spdy"])
def test_kubectl_port_forward_reaches_the_pods_server(
    kubeconfig: Path, server_pod: str, websockets: bool
) -> None:
    for port in _forward(kubeconfig, f"pod/{server_pod}", websockets):
        base = f"http://127.0.0.1:{port}"
        for _ in range(2):  # two connections, one after the other, each its own stream pair
            with httpx.Client(base_url=base, timeout=10) as http:
                models = http.get("/v1/models").json()
                assert models["data"][0]["id"] == "Qwen/Qwen3-0.6B"
                answer = http.post(
                    "/v1/chat/completions",
                    json={
                        "model": "Qwen/Qwen3-0.6B",
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                )
                assert answer.status_code == 200
                assert answer.json()["choices"][0]["message"]["content"].endswith("hi")


def test_kubectl_port_forward_to_a_port_nobody_listens_on(
    kubeconfig: Path, kubectl: Kubectl, server_pod: str
) -> None:
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "port-forward", server_pod, ":9999"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(re.search(r"127\.0\.0\.1:(\d+) -> 9999", line).group(1))  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.settimeout(10)
            assert sock.recv(100) == b""  # the forwarded connection is closed
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "connect: connection refused" in err


def test_the_python_client_forwards_over_v4(core: client.CoreV1Api, server_pod: str) -> None:
    pf = portforward(
        core.connect_get_namespaced_pod_portforward, server_pod, "default", ports="8000"
    )
    sock = pf.socket(8000)
    sock.setblocking(True)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: pod\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"OK"):
        chunk = sock.recv(1024)
        if not chunk:
            break
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.1 200 OK") and data.endswith(b"OK")
    assert pf.error(8000) is None
