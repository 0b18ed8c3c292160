"""The job page charts its MLflow run: loss and throughput as SVG, one point per logged step,
in Chromium against the real stack (the run logged by the emulated training program through
SigV4 to the simulated tracking server)."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RunningStack

pytestmark = pytest.mark.slow


def test_the_job_page_charts_loss_and_throughput(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    server = {
        "name": f"ui-{time.time_ns() % 10**9}",
        "artifact_store_uri": "s3://hyperpilot-mlflow/artifacts",
        "role_arn": "arn:aws:iam::123456789012:role/mlflow",
    }
    created = api.post("/api/v1/mlflow/tracking-servers", server)
    assert api.wait(created.json()["operation_id"])["status"] == "succeeded"
    arn = api.get(f"/api/v1/mlflow/tracking-servers/{server['name']}").json()["arn"]
    job = {
        "recipe": "pytorch",
        "name": "charted",
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "10"],
        "resources": {"gpus": 1},
        "mlflow_tracking_uri": arn,
    }
    answer = api.post(f"/api/v1/clusters/{cluster}/jobs", job)
    assert api.wait(answer.json()["operation_id"], timeout=90)["status"] == "succeeded"

    page.goto(f"/#/clusters/{cluster}/jobs/charted")
    metrics = page.get_by_role("region", name="Metrics (MLflow)")
    expect(metrics).to_be_visible()
    loss = metrics.locator("figure[data-metric='loss']")
    throughput = metrics.locator("figure[data-metric='tokens_per_sec']")
    # the page follows the run (it reads again on the job's events) until it has finished
    deadline = time.monotonic() + 60
    while loss.get_attribute("data-points") != "10":
        assert time.monotonic() < deadline, metrics.inner_text()
        page.reload()
        expect(loss).to_be_visible()
    expect(throughput).to_have_attribute("data-points", "10")
    expect(loss.locator("svg path")).to_have_count(1)
    expect(throughput.get_by_role("img", name="Throughput (tokens/s):")).to_be_visible()
    history = api.get(
        f"/api/v1/clusters/{cluster}/jobs/charted/runs", params={"metric": "loss"}
    ).json()["history"]["points"]
    expect(metrics.locator("figcaption").first).to_contain_text(f"{history[-1]['value']:.3f}")
    page.screenshot(path="/tmp/job-metrics.png", full_page=True)
