"""A job's MLflow run, end to end: the job's pods get an IRSA role on the SageMaker tracking
server (IAM role trusted for the job's service account, `sagemaker-mlflow:*` on the server's
ARN), the emulated training program signs its metrics to the simulated tracking server with
SigV4, and the loss history read through REST is what the program logged, step by step; the
same through the MCP read tool and the CLI. Checked with raw boto3 (IAM) and kubectl."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest
from mcp import Client as McpClient
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.server import build_server
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import TOKEN, Client, RunningStack

# Its run did not finish within 90 s in one of two parallel `make test` runs (a 12-step job;
# cause not found yet): in `make reliability` until it is understood.
pytestmark = pytest.mark.slow

LINE = re.compile(r"^step (\d+)/\d+ loss=([0-9.]+) .*tokens_per_sec=([0-9.]+)")


def _jobs(cluster: str) -> str:
    return f"/api/v1/clusters/{cluster}/jobs"


def _until(check: Any, what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def _server(api: Client) -> dict[str, Any]:
    server = {
        "name": f"runs-{time.time_ns() % 10**9}",
        "artifact_store_uri": "s3://hyperpilot-mlflow/artifacts",
        "role_arn": "arn:aws:iam::123456789012:role/mlflow",
    }
    created = api.post("/api/v1/mlflow/tracking-servers", server)
    assert created.status_code == 202, created.text
    assert api.wait(created.json()["operation_id"])["status"] == "succeeded"
    return dict(api.get(f"/api/v1/mlflow/tracking-servers/{server['name']}").json())


def test_job_loss_history_through_rest_is_what_its_program_logged(
    created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = _server(api)
    name = "tracked-run"
    spec = {
        "recipe": "pytorch",
        "name": name,
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "12"],
        "resources": {"gpus": 1},
        "mlflow_tracking_uri": server["arn"],
    }
    answer = api.post(_jobs(cluster), spec)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=90)
    assert op["status"] == "succeeded", json.dumps(op.get("error"))
    access = next(s for s in op["stages"] if s["name"] == "mlflow_access")
    role_arn = access["outputs"]["mlflow"]["role_arn"]

    # the identity, read with boto3 from the simulated IAM
    iam = aws_client(sim_aws, "iam")
    role_name = role_arn.rsplit("/", 1)[1]
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    condition = trust["Statement"][0]["Condition"]["StringEquals"]
    account = access["outputs"]["mlflow"]["service_account"].split("/")[1]
    assert any(v == f"system:serviceaccount:default:{account}" for v in condition.values())
    policy = iam.get_role_policy(RoleName=role_name, PolicyName="hyperpilot")["PolicyDocument"]
    assert policy["Statement"][0] == {
        "Sid": "TrackingServer",
        "Effect": "Allow",
        "Action": "sagemaker-mlflow:*",
        "Resource": server["arn"],
    }

    # the run finishes with the job
    def finished() -> dict[str, Any] | None:
        answer = api.get(f"{_jobs(cluster)}/{name}/runs")
        assert answer.status_code == 200, answer.text
        runs = answer.json()
        done = [r for r in runs["runs"] if r["status"] == "FINISHED"]
        return runs if done else None

    runs = _until(finished, "the job's MLflow run never finished")
    assert runs["experiment"] == name and runs["tracking_uri"] == server["arn"]
    run = runs["runs"][0]
    assert run["run_name"] == name and run["metrics"]["loss"]["step"] == 12

    # what the program logged, read from its pod's log through REST
    job = api.get(f"{_jobs(cluster)}/{name}").json()
    pod = next(p["name"] for p in job["live"]["observed"]["pods"])
    text = api.get(f"{_jobs(cluster)}/{name}/logs", params={"pod": pod}).text
    logged = [
        (int(m[1]), float(m[2]), float(m[3])) for m in map(LINE.match, text.splitlines()) if m
    ]
    assert [s for s, _, _ in logged] == list(range(1, 13))

    runs_path = f"{_jobs(cluster)}/{name}/runs"
    loss = api.get(runs_path, params={"metric": "loss"}).json()["history"]
    assert loss["run_id"] == run["run_id"]
    assert [(p["step"], p["value"]) for p in loss["points"]] == [(s, v) for s, v, _ in logged]
    speed = api.get(runs_path, params={"metric": "tokens_per_sec", "run_id": run["run_id"]})
    assert [p["value"] for p in speed.json()["history"]["points"]] == [t for _, _, t in logged]

    # a run of another job is refused with the reason; a bad metric key names the field
    other = api.get(runs_path, params={"metric": "loss", "run_id": "0" * 32})
    assert other.status_code == 404 and "not a run of job" in other.text, other.text
    bad = api.get(runs_path, params={"metric": "loss;drop"})
    assert bad.status_code == 422 and "metric" in bad.text, bad.text

    # MCP: the read tool answers the same history
    async def through_mcp() -> dict[str, Any]:
        mcp = build_server(
            McpSettings(allow_write=False, gateway_token=None), Gateway(stack.stack.url, TOKEN)
        )
        async with McpClient(mcp) as client:
            answer = await client.call_tool(
                "get_training_job_runs", {"cluster": cluster, "job": name, "metric": "loss"}
            )
        assert not answer.is_error, answer.content
        assert answer.structured_content is not None
        return dict(answer.structured_content)

    tool = asyncio.run(through_mcp())
    assert [p["value"] for p in tool["history"]["points"]] == [v for _, v, _ in logged]
    assert "12 steps" in tool["summary"]

    # the CLI prints the same history
    env = {"HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN}
    cli = CliRunner().invoke(
        cli_app, ["jobs", "runs", name, "-c", cluster, "--metric", "loss"], env=env
    )
    assert cli.exit_code == 0, cli.output
    assert f"{logged[-1][1]:.4f}" in cli.output
    assert run["run_id"] in "".join(cli.output.split())

    api.wait(api.delete(f"{_jobs(cluster)}/{name}").json()["operation_id"])
