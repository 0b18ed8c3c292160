"""The flags of fractional GPUs, typed hyperparameters, fallback types and scaling: what
`jobs submit`, `endpoints deploy` and `instance-groups add` send to the REST API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from hyperpilot.cli import app
from hyperpilot.client import Client
from hyperpilot.commands import common

OP = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[list[httpx.Request]]:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.path == "/api/v1/clusters/active":
            return httpx.Response(200, json={"name": "llm", "status": "active"})
        return httpx.Response(
            202, json={"operation_id": OP, "status_url": f"/api/v1/operations/{OP}"}
        )

    def make(base_url: str, token: str | None) -> Client:
        return Client(base_url, token, transport=httpx.MockTransport(handler))

    monkeypatch.setattr(common, "Client", make)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("HYPERPILOT_URL", "http://gw")
    monkeypatch.setenv("HYPERPILOT_TOKEN", "t")
    yield requests


def _body(sent: list[httpx.Request], *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    posted = [r for r in sent if r.method == "POST"]
    body: dict[str, Any] = json.loads(posted[-1].content)
    return body


def test_jobs_submit_sends_partitions_shares_and_hyperparameters(
    sent: list[httpx.Request],
) -> None:
    body = _body(
        sent,
        *("jobs", "submit", "--recipe", "pytorch", "--name", "small", "--instance-group", "mig"),
        *("--script", "t.py", "--gpus", "2", "--mig-profile", "mig-1g.10gb"),
    )
    assert body["resources"] == {"gpus": 2, "mig_profile": "mig-1g.10gb"}
    body = _body(
        sent,
        *("jobs", "submit", "--recipe", "llama-factory", "--name", "sft"),
        *("--instance-group", "gpu", "--model", "m", "--dataset", "d", "--gpus", "1"),
        *("--gpu-memory-mib", "20000", "--gpu-cores", "30", "--batch-size", "4"),
        *("--lora-rank", "16", "--max-steps", "100", "--max-length", "4096"),
    )
    assert body["resources"] == {"gpus": 1, "gpu_memory_mib": 20000, "gpu_cores": 30}
    assert body["hyperparameters"] == {
        "batch_size": 4,
        "lora_rank": 16,
        "max_steps": 100,
        "max_length": 4096,
    }
    # out of the contract's bounds: refused before anything is sent
    before = len(sent)
    result = CliRunner().invoke(
        app, ["jobs", "submit", "--recipe", "pytorch", "--gpu-cores", "101"]
    )
    assert result.exit_code != 0 and len(sent) == before


def test_endpoints_deploy_from_flags_alone(sent: list[httpx.Request]) -> None:
    body = _body(
        sent,
        *("endpoints", "deploy", "--name", "chat", "--type", "ml.g5.8xlarge"),
        *("--fallback-type", "ml.g6e.xlarge", "--fallback-type", "ml.g6.xlarge"),
        *("--gpus", "1", "--model", "Qwen/Qwen3-0.6B", "--replicas", "2"),
        *("--min-replicas", "1", "--max-replicas", "4", "--rps", "20"),
    )
    assert body == {
        "name": "chat",
        "instance_type": "ml.g5.8xlarge",
        "fallback_instance_types": ["ml.g6e.xlarge", "ml.g6.xlarge"],
        "gpus": 1,
        "replicas": 2,
        "container": {"model": "Qwen/Qwen3-0.6B"},
        "autoscaling": {"min_replicas": 1, "max_replicas": 4, "requests_per_second": 20.0},
    }
    body = _body(
        sent,
        *("endpoints", "deploy", "--name", "small", "--type", "ml.p5.48xlarge", "--gpus", "1"),
        *("--engine", "vllm", "--model", "m", "--mig-profile", "mig-1g.10gb"),
    )
    assert body["mig_profile"] == "mig-1g.10gb"
    assert body["container"] == {"engine": "vllm", "model": "m"}
    result = CliRunner().invoke(app, ["endpoints", "deploy"])
    assert result.exit_code != 0 and "no endpoint spec" in result.output


def test_instance_groups_add_sends_the_mig_profile_checked_by_the_contract(
    sent: list[httpx.Request],
) -> None:
    body = _body(
        sent,
        *("instance-groups", "add", "--name", "mig", "--type", "ml.p5.48xlarge"),
        *("--count", "1", "--mig-profile", "mig-1g.10gb"),
    )
    assert body["mig_profile"] == "mig-1g.10gb"
    before = len(sent)
    result = CliRunner().invoke(
        app,
        [
            "instance-groups",
            "add",
            "--name",
            "g",
            "--type",
            "ml.g5.8xlarge",
            "--count",
            "1",
            "--mig-profile",
            "mig-1g.10gb",
        ],
    )
    assert result.exit_code != 0 and "does not support MIG" in result.output
    assert len(sent) == before


def test_features_set_sends_the_node_pools_as_a_list(sent: list[httpx.Request]) -> None:
    result = CliRunner().invoke(
        app,
        [
            *("features", "set", "--autoscaling"),
            *("--node-pool", "gpus=gpu+spot,weight=50,gpu-limit=64"),
            *("--node-pool", "cpus=cpu,consolidation=WhenEmptyOrUnderutilized,after=30s"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    patched = [r for r in sent if r.method == "PATCH"][-1]
    assert json.loads(patched.content) == {
        "autoscaling": {
            "enabled": True,
            "node_pools": [
                {"name": "gpus", "instance_groups": ["gpu", "spot"], "weight": 50, "gpu_limit": 64},
                {
                    "name": "cpus",
                    "instance_groups": ["cpu"],
                    "consolidation": "WhenEmptyOrUnderutilized",
                    "consolidate_after": "30s",
                },
            ],
        }
    }
    for bad, words in (
        (["--autoscaling", "--node-pool", "gpus"], "names no pool"),
        (["--autoscaling", "--node-pool", "gpus=gpu,size=3"], "not an option of a pool"),
        (["--node-pool", "gpus=gpu"], "needs --autoscaling"),
        (["--autoscaling", "--node-pool", "a=gpu", "--node-pool", "a=cpu"], "same name"),
    ):
        before = len(sent)
        refused = CliRunner().invoke(app, ["features", "set", *bad])
        assert refused.exit_code != 0 and words in refused.output, refused.output
        assert len([r for r in sent[before:] if r.method == "PATCH"]) == 0
