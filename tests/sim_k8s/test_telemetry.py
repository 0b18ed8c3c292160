"""GPU and EFA telemetry of the emulator's nodes, scraped as Prometheus scrapes the observability
add-on's exporters (the API server's pod proxy, port 9400 and 9109, `/metrics`): a training
program's steps drive its GPUs, an idle GPU is idle, an injected XID shows and stops the GPU."""

from __future__ import annotations

import re
import ssl
import urllib.request
from typing import Any

import orjson
from kubernetes import client

from sim.interfaces import SimNode
from sim.k8s import ApiServer
from sim.k8s.node_faults import clear_node_fault, record_node_fault
from tests.sim_k8s.conftest import eventually

NS = "hyperpod-observability"


def _node(n: int, itype: str) -> SimNode:
    return SimNode(f"i-0{n:016x}", "gpu", itype, "Running", "us-east-1a", "hp-cluster")


def _name(n: int) -> str:
    return f"hyperpod-i-0{n:016x}"


def _samples(text: str, metric: str) -> dict[str, float]:
    """gpu label -> value of one metric in a Prometheus text answer."""
    found = {}
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            labels, value = line[len(metric) :].rsplit(" ", 1)
            gpu = re.search(r'gpu="(\d+)"', labels)
            found[gpu.group(1) if gpu else labels] = float(value)
    return found


def _scrape(core: client.CoreV1Api, exporter: str, node: str) -> str:
    pods = core.list_namespaced_pod(NS, label_selector=f"app.kubernetes.io/name={exporter}")
    pod = next(p for p in pods.items if p.spec is not None and p.spec.node_name == node)
    port = 9400 if exporter == "dcgm-exporter" else 9109
    text: str = core.connect_get_namespaced_pod_proxy_with_path(
        f"{pod.metadata.name if pod.metadata else ''}:{port}", NS, "metrics"
    )
    return text


def _serving(core: client.CoreV1Api, node: str) -> bool:
    try:
        return bool(_scrape(core, "dcgm-exporter", node))
    except (StopIteration, client.ApiException):
        return False


def _admin(cluster: ApiServer, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST JSON to the API server with the cluster's token (the admin API, a pod proxy)."""
    config = cluster.kubeconfig()
    token = config["users"][0]["user"]["token"]
    ctx = ssl.create_default_context(cadata=cluster.ca.cert_pem.bytes().decode())
    request = urllib.request.Request(
        f"https://127.0.0.1:{cluster.port}{path}",
        data=orjson.dumps(body),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=10) as answer:
            return answer.status, orjson.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())


def test_training_steps_drive_gpus_and_xid_shows(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.sync_nodes([_node(1, "ml.g5.12xlarge"), _node(2, "ml.g5.12xlarge")])
    cluster.install("amazon-sagemaker-hyperpod-observability")
    eventually(lambda: _serving(core, _name(1)) and _serving(core, _name(2)))
    idle = _scrape(core, "dcgm-exporter", _name(1))
    assert _samples(idle, "DCGM_FI_DEV_GPU_UTIL") == {"0": 0, "1": 0, "2": 0, "3": 0}
    assert _samples(idle, "DCGM_FI_DEV_FB_USED") == {"0": 0, "1": 0, "2": 0, "3": 0}
    assert "# TYPE DCGM_FI_DEV_XID_ERRORS gauge" in idle
    trainer: dict[str, Any] = {
        "metadata": {"name": "trainer", "annotations": {"sim.hyperpilot.dev/steps": "400"}},
        "spec": {
            "nodeName": _name(1),
            "containers": [
                {
                    "name": "main",
                    "image": "pytorch-training:2.5",
                    "command": ["torchrun", "train.py"],
                    "resources": {"limits": {"nvidia.com/gpu": "2"}},
                }
            ],
        },
    }
    core.create_namespaced_pod("default", trainer)  # type: ignore[arg-type]

    def busy() -> str:
        text = _scrape(core, "dcgm-exporter", _name(1))
        util = _samples(text, "DCGM_FI_DEV_GPU_UTIL")
        assert util["0"] >= 92 and util["1"] >= 92, util
        return text

    text = eventually(busy, timeout=30)
    util = _samples(text, "DCGM_FI_DEV_GPU_UTIL")
    assert util["2"] == 0 and util["3"] == 0  # nobody holds them
    assert 'pod="trainer"' in text and 'namespace="default"' in text
    power = _samples(text, "DCGM_FI_DEV_POWER_USAGE")
    assert power["0"] > power["2"] >= 25
    other = _samples(_scrape(core, "dcgm-exporter", _name(2)), "DCGM_FI_DEV_GPU_UTIL")
    assert set(other.values()) == {0}  # an idle node is idle

    status, _ = _admin(cluster, "/_sim/faults/xid", {"node": _name(1), "gpu": 1, "xid": 79})
    assert status == 200
    after = _scrape(core, "dcgm-exporter", _name(1))
    assert _samples(after, "DCGM_FI_DEV_XID_ERRORS") == {"0": 0, "1": 79, "2": 0, "3": 0}
    assert _samples(after, "DCGM_FI_DEV_GPU_UTIL")["1"] == 0
    status, refused = _admin(cluster, "/_sim/faults/xid", {"node": _name(1), "gpu": 9})
    assert status == 400 and "gpu" in refused["message"]
    status, refused = _admin(cluster, "/_sim/faults/efa-errors", {"node": _name(1)})
    assert status == 200  # g5.12xlarge has one EFA device
    efa = _scrape(core, "efa-exporter", _name(1))
    assert 'node_amazonefa_rdma_read_wr_err{device="rdmap16s27",port="1"} 1' in efa
    core.delete_namespaced_pod("trainer", "default", grace_period_seconds=0)


def test_a_model_server_holds_its_memory_and_its_requests_drive_its_gpu(
    cluster: ApiServer, core: client.CoreV1Api
) -> None:
    cluster.sync_nodes([_node(3, "ml.g5.xlarge")])
    server: dict[str, Any] = {
        "metadata": {"name": "vllm-0", "labels": {"app": "vllm"}},
        "spec": {
            "nodeName": _name(3),
            "containers": [
                {
                    "name": "server",
                    "image": "vllm/vllm-openai:v0.8.5",
                    "args": ["--model", "Qwen/Qwen2.5-0.5B"],
                    "ports": [{"containerPort": 8000}],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    core.create_namespaced_pod("default", server)  # type: ignore[arg-type]
    eventually(lambda: _serving(core, _name(3)))

    def held() -> str:
        text = _scrape(core, "dcgm-exporter", _name(3))
        assert 'pod="vllm-0"' in text
        return text

    at_rest = eventually(held, timeout=30)
    assert _samples(at_rest, "DCGM_FI_DEV_GPU_UTIL") == {"0": 0}
    assert _samples(at_rest, "DCGM_FI_DEV_FB_USED")["0"] == round(23028 * 0.9)
    eventually(
        lambda: (
            getattr(core.read_namespaced_pod("vllm-0", "default").status, "phase", None)
            == "Running"
        )
    )
    for _ in range(5):
        status, _ = _admin(
            cluster,
            "/api/v1/namespaces/default/pods/vllm-0:8000/proxy/v1/completions",
            {"prompt": "hi"},
        )
        assert status == 200
    busy = _samples(_scrape(core, "dcgm-exporter", _name(3)), "DCGM_FI_DEV_GPU_UTIL")
    assert busy["0"] == 10.0  # 5 requests over the last 10 s: 0.5 a second, 20 % each
    core.delete_namespaced_pod("vllm-0", "default", grace_period_seconds=0)


def test_a_reboot_clears_the_xid(cluster: ApiServer, core: client.CoreV1Api) -> None:
    cluster.sync_nodes([_node(4, "ml.g5.xlarge")])
    eventually(lambda: _serving(core, _name(4)))
    cluster.telemetry.inject_xid(_name(4), 0, 48)
    text = _scrape(core, "dcgm-exporter", _name(4))
    assert _samples(text, "DCGM_FI_DEV_XID_ERRORS") == {"0": 48}
    clear_node_fault(cluster, "i-0" + f"{4:016x}")  # what HyperPod's reboot of the node does
    text = _scrape(core, "dcgm-exporter", _name(4))
    assert _samples(text, "DCGM_FI_DEV_XID_ERRORS") == {"0": 0}
    # a HyperPod hardware fault (sim.aws.hyperpod.hardware) shows its Xid in the exporter too
    line = "NVRM: Xid (PCI:0000:a8:00): 79, pid=<unknown>, name=<unknown>, GPU has fallen off"
    record_node_fault(cluster, "i-0" + f"{4:016x}", "GpuXidError", line)
    eventually(
        lambda: (
            _samples(_scrape(core, "dcgm-exporter", _name(4)), "DCGM_FI_DEV_XID_ERRORS")
            == {"0": 79}
        )
    )
