"""The job page's GPU chart in Chromium follows a training job: with observability turned on
from the features panel (its plan, then its stage in the progress panel), the
utilization line of the job's node climbs to the busy range while the job steps, and ends once
the job is cancelled (its pods gone); the memory chart shows what the job holds.

`HYPERPILOT_SCREENSHOT_DIR=docs/screenshots` also writes job-gpu-chart.png (docs/ui.md)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import RunningStack
from tests.e2e.test_observability import train

pytestmark = pytest.mark.slow

UTIL = "GPU utilization per node (%)"
MEMORY = "GPU memory used per node (MiB)"


def _latest(page: Any, title: str) -> dict[str, float | None]:
    raw = page.locator(f'figure[data-chart="{title}"]').get_attribute("data-latest")
    found: dict[str, float | None] = json.loads(raw) if raw else {}
    return found


def _until(page: Any, title: str, check: Any, timeout: float = 90) -> dict[str, float | None]:
    deadline = time.monotonic() + timeout
    while True:
        latest = _latest(page, title)
        if latest and check(latest):
            return latest
        assert time.monotonic() < deadline, f"{title}: {latest}"
        page.wait_for_timeout(500)


def test_the_gpu_chart_follows_a_training_job(
    page: Any, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, name = created_cluster
    api = stack.client
    # observability on from the cluster page's features panel: its plan, then its stage
    page.goto(f"/#/clusters/{name}")
    page.get_by_role("switch", name="HyperPod observability").check()
    plan = page.get_by_role("list", name="Plan of the change")
    expect(plan).to_contain_text("HyperPod observability: off -> on")
    expect(plan).to_contain_text("CreateWorkspace")
    page.get_by_role("button", name="Apply changes").click()
    page.get_by_role("link", name="Follow the operation").click()
    stage = page.locator(".stage[data-stage='observability']")
    expect(stage).to_have_attribute("data-status", "succeeded", timeout=120_000)
    expect(page.locator(".op-summary .status-succeeded")).to_be_visible(timeout=60_000)
    train(api, name, "chart-job", steps=4000)

    page.goto(f"/#/clusters/{name}/jobs/chart-job")
    chart = page.locator(f'figure[data-chart="{UTIL}"]')
    chart.scroll_into_view_if_needed()
    busy = _until(page, UTIL, lambda v: any((x or 0) >= 92 for x in v.values()))
    [node] = [n for n, v in busy.items() if (v or 0) >= 92]
    assert chart.locator("svg path[data-series]").count() >= 1
    assert page.locator(f'figure[data-chart="{MEMORY}"] svg path').count() >= 1
    # the job's framebuffer fills over its first steps: 72 % of an A10G's 23,028 MiB
    _until(page, MEMORY, lambda v: (v.get(node) or 0) >= 16_000)
    # a line of a dozen points (a minute at 5 s steps) before the picture
    deadline = time.monotonic() + 90
    while int(chart.get_attribute("data-points") or 0) < 12:
        assert time.monotonic() < deadline, chart.get_attribute("data-points")
        page.wait_for_timeout(1000)
    shots = os.environ.get("HYPERPILOT_SCREENSHOT_DIR")
    if shots:
        page.locator("section", has=chart).screenshot(path=str(Path(shots) / "job-gpu-chart.png"))

    cancelled = api.post(f"/api/v1/clusters/{name}/jobs/chart-job/cancel")
    assert cancelled.status_code == 202, cancelled.text
    # the job's pods are gone: its series ends (the legend says so)
    _until(page, UTIL, lambda v: node in v and v[node] is None)
    assert "ended" in page.locator(f'figure[data-chart="{UTIL}"] .chart-legend').inner_text()
