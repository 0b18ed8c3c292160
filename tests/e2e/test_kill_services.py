"""kill -9 of each domain service mid-operation: after a restart every operation ends terminal,
and what it made exists once. Slow: run with `make reliability` (cluster-svc has the same proof
in test_faults.py, run by `make test`)."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import RunningStack, unique


def _kill_when(stack: RunningStack, operation_id: str, service: str, event_type: str) -> None:
    deadline = time.monotonic() + 60
    while not any(
        e["type"] == event_type
        for e in stack.client.get("/api/v1/events", params={"operation_id": operation_id}).json()
    ):
        assert time.monotonic() < deadline, f"no {event_type}"
        time.sleep(0.01)
    stack.stack.kill_service(service)
    stack.stack.start_service(service)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("moment", ["OperationStarted", "StageSucceeded"])
def test_kill_9_of_workload_svc_mid_submit(
    created_cluster: tuple[RunningStack, str], moment: str
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    name = unique("kj")[:30]
    body = {
        "recipe": "pytorch",
        "name": name,
        "instance_group": "gpu",
        "script": "code/train.py",
        "resources": {"gpus": 1},
    }
    op_id = api.post(f"/api/v1/clusters/{cluster}/jobs", body).json()["operation_id"]
    _kill_when(stack, op_id, "workload-svc", moment)
    op = api.wait(op_id, timeout=240)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)
    jobs = [j for j in api.get(f"/api/v1/clusters/{cluster}/jobs").json() if j["name"] == name]
    assert len(jobs) == 1


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("moment", ["OperationStarted", "StageSucceeded"])
def test_kill_9_of_inference_svc_mid_deploy(
    created_cluster: tuple[RunningStack, str], moment: str
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    instance_type = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["instance_groups"][0][
        "instance_type"
    ]
    name = unique("ke")[:20]
    body = {
        "name": name,
        "instance_type": instance_type,
        "gpus": 1,
        "replicas": 1,
        "service": "internal",
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }
    op_id = api.post("/api/v1/endpoints", body, params={"cluster": cluster}).json()["operation_id"]
    _kill_when(stack, op_id, "inference-svc", moment)
    op = api.wait(op_id, timeout=240)
    assert op["status"] == "succeeded", json.dumps(op.get("error"), indent=1)
    endpoints = [
        e
        for e in api.get("/api/v1/endpoints", params={"cluster": cluster}).json()
        if e["name"] == name
    ]
    assert len(endpoints) == 1
