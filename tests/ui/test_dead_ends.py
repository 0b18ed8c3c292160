"""No dead ends, in Debian's Chromium against the real stack: a cancelled cluster offers resume
or clean-up, operations read in plain words, and a change made through the CLI shows on an open
page within 2 s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.conftest import TOKEN, RunningStack, cluster_spec, unique

LIVE_MS = 2_000
CLI = Path(sys.executable).with_name("hyperpilot")


def hyperpilot(stack: RunningStack, *args: str) -> str:
    env = {**os.environ, "HYPERPILOT_URL": stack.stack.url, "HYPERPILOT_TOKEN": TOKEN}
    done = subprocess.run(
        [str(CLI), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_cancelled_cluster_offers_resume_and_clean_up(
    page: Page, module_stack: RunningStack
) -> None:
    api = module_stack.client
    name = unique("cxl")
    created = api.post("/api/v1/clusters", cluster_spec(api, name, count=1))
    assert created.status_code == 202, created.text
    operation = created.json()["operation_id"]
    assert api.post(f"/api/v1/operations/{operation}/cancel").status_code in (200, 202)
    assert api.wait(operation, timeout=120)["status"] == "cancelled"

    page.goto(f"/#/clusters/{name}")
    steps = page.get_by_role("region", name="The cluster's last operation was cancelled")
    expect(steps.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.get_by_text("wait for the cluster's operation")).to_have_count(0)
    steps.get_by_role("button", name="Clean up (delete)").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("list", name="Plan")).not_to_be_empty()
    dialog.get_by_role("button", name=f"Delete {name}").click()
    link = page.locator("#main .notice").get_by_role("link", name="follow the operation")
    deleted = (link.get_attribute("href") or "").rsplit("/", 1)[-1]
    # nothing was made yet: the deletion has nothing to do but forget the cluster
    assert api.wait(deleted, timeout=240)["status"] in ("succeeded", "noop")
    assert api.get(f"/api/v1/clusters/{name}").status_code == 404


def test_a_cli_change_shows_on_the_open_page_and_reads_in_plain_words(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    before = next(
        g["count"]
        for g in api.get(f"/api/v1/clusters/{cluster}/instance-groups").json()
        if g["name"] == "gpu"
    )
    page.goto(f"/#/clusters/{cluster}")
    count = page.locator("tr[data-group='gpu'] td[data-label='Count']")
    expect(count).to_have_text(str(before))
    hyperpilot(
        stack, "instance-groups", "update", "gpu", "-c", cluster, "--count", str(before + 1), "-w"
    )
    expect(count).to_have_text(str(before + 1), timeout=LIVE_MS)

    page.goto("/#/operations")
    expect(
        page.get_by_role("link", name=f"gpu {before} -> {before + 1} on {cluster}")
    ).to_be_visible()

    hyperpilot(
        stack, "instance-groups", "update", "gpu", "-c", cluster, "--count", str(before), "-w"
    )
    expect(
        page.get_by_role("link", name=f"gpu {before + 1} -> {before} on {cluster}")
    ).to_be_visible(timeout=LIVE_MS)
