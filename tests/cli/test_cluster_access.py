"""Reaching into a cluster from the CLI with the caller's own AWS identity, against the real
stack in the simulated world: `clusters kubeconfig` (used by the pinned kubectl as is), `jobs
exec` into a running job's pod, and `endpoints port-forward` to a vLLM endpoint answered over
the forwarded port."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.cli.conftest import Cli
from tests.e2e.conftest import RunningStack
from tests.e2e.conftest import created_cluster as created_cluster  # a module fixture

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).parent / "kubectl")


def _running_pod(api: Any, cluster: str, job: str) -> str:
    deadline = time.monotonic() + 90
    while True:
        found = api.get(f"/api/v1/clusters/{cluster}/jobs/{job}").json()
        pods = ((found.get("live") or {}).get("observed") or {}).get("pods") or []
        running = [p["name"] for p in pods if str(p.get("phase", "")).lower() == "running"]
        if running:
            return str(running[0])
        assert time.monotonic() < deadline, found
        time.sleep(0.3)


@pytest.mark.timeout(600)  # a cluster, a job and an endpoint, created and deleted
def test_kubeconfig_jobs_exec_and_endpoint_port_forward(
    created_cluster: tuple[RunningStack, str], cli: Cli, tmp_path: Path
) -> None:
    stack, cluster = created_cluster
    api = stack.client

    # a kubeconfig with no token in it, used by kubectl as is (its plugin signs with AWS creds)
    config_path = tmp_path / "kubeconfig"
    wrote = cli.run("clusters", "kubeconfig", cluster, "--write", str(config_path))
    assert wrote.returncode == 0, wrote.stderr
    assert oct(config_path.stat().st_mode & 0o777) == "0o600"
    config = yaml.safe_load(config_path.read_text())
    user = config["users"][0]["user"]
    assert set(user) == {"exec"}  # no token, no key: the plugin signs one when kubectl asks
    assert user["exec"]["args"][-4:] == ["token", cluster, "--region", "us-east-1"]
    env = cli.env()
    nodes = subprocess.run(
        [KUBECTL, "--kubeconfig", str(config_path), "get", "nodes", "-o", "name"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert nodes.returncode == 0, nodes.stderr
    assert len(nodes.stdout.split()) >= 2  # the gpu group's two nodes
    aws = cli.run("clusters", "kubeconfig", cluster, "--plugin", "aws")
    assert yaml.safe_load(aws.stdout)["users"][0]["user"]["exec"]["command"] == "aws"

    # exec into a running job's pod
    submitted = api.post(
        f"/api/v1/clusters/{cluster}/jobs",
        {
            "recipe": "shell",
            "name": "exec-me",
            "instance_group": "gpu",
            "resources": {"gpus": 1},
            "body": "sleep 600\n",
        },
    )
    assert submitted.status_code == 202, submitted.text
    assert api.wait(submitted.json()["operation_id"], timeout=60)["status"] == "succeeded"
    pod = _running_pod(api, cluster, "exec-me")
    shown = cli.run("jobs", "exec", "exec-me", "-c", cluster, "--", "hostname")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == pod
    gpus = cli.run("jobs", "exec", "exec-me", "--pod", pod, "--", "nvidia-smi", "-L")
    assert gpus.returncode == 0, gpus.stderr
    assert len(gpus.stdout.splitlines()) == 1 and "UUID: GPU-" in gpus.stdout
    failed = cli.run("jobs", "exec", "exec-me", "--", "sh", "-c", "exit 4")
    assert failed.returncode == 4
    wrong = cli.run("jobs", "exec", "exec-me", "--pod", "not-a-pod", "--", "true")
    assert wrong.returncode == 2 and "is not one of job exec-me's pods" in wrong.stderr

    # port-forward to a vLLM endpoint, answered through the local port
    instance_type = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["instance_groups"][0][
        "instance_type"
    ]
    deployed = api.post(
        "/api/v1/endpoints",
        {
            "name": "fwd",
            "instance_type": instance_type,
            "gpus": 1,
            "service": "internal",
            "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
        },
        params={"cluster": cluster},
    )
    assert deployed.status_code == 202, deployed.text
    assert api.wait(deployed.json()["operation_id"], timeout=90)["status"] == "succeeded"
    forward = cli.start("endpoints", "port-forward", "fwd", ":8000", "-c", cluster)
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        found = re.search(r"127\.0\.0\.1:(\d+) -> 8000", line)
        assert found, (
            line,
            forward.stderr.read() if forward.stderr and forward.poll() is not None else "",
        )
        models = httpx.get(f"http://127.0.0.1:{found.group(1)}/v1/models", timeout=20).json()
        assert models["data"][0]["id"] == "Qwen/Qwen3-0.6B"
    finally:
        forward.terminate()
        forward.wait(timeout=10)
