"""The teams page in Chromium against the real stack: a cluster with task governance enabled; an
admin creates a team (confirmed with its plan), sees its quota and then its usage once a job of
the team runs, changes its sharing (the diff shown first) and deletes it; every change shows
without a reload (the event stream). A viewer reads the same table without any control."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Client, RunningStack, cluster_spec, unique
from tests.ui.helpers import sign_in

pytestmark = pytest.mark.slow

TYPE = "ml.g5.12xlarge"  # 4 GPUs a node


def _accepted(api: Client, method: str, path: str, body: Any = None) -> None:
    answer = api.http.request(method, path, json=body)
    assert answer.status_code == 202, answer.text
    op = api.wait(answer.json()["operation_id"], timeout=180)
    assert op["status"] in ("succeeded", "noop"), op.get("error")


@pytest.fixture(scope="module")
def governed(module_stack: RunningStack) -> Iterator[str]:
    api = module_stack.client
    name = unique("teams")
    spec = cluster_spec(api, name, count=1)
    spec["instance_groups"][0]["instance_type"] = TYPE
    done = api.wait(api.post("/api/v1/clusters", spec).json()["operation_id"], timeout=240)
    assert done["status"] == "succeeded", done.get("error")
    _accepted(api, "PATCH", f"/api/v1/clusters/{name}/task-governance", {"enabled": True})
    yield name
    api.wait(api.delete(f"/api/v1/clusters/{name}").json()["operation_id"], timeout=240)


def test_an_admin_manages_teams_and_a_viewer_reads_them(
    page: Any, browser: Any, module_stack: RunningStack, governed: str
) -> None:
    from playwright.sync_api import expect

    cluster = governed
    api = module_stack.client
    page.goto(f"/#/clusters/{cluster}/teams")
    expect(page.get_by_role("heading", name="Teams", level=1)).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Enabled \(add-on ACTIVE\)"))).to_be_visible()
    expect(page.get_by_role("cell", name="No teams yet.")).to_be_visible()

    # create, confirmed with the plan
    form = page.get_by_role("form", name="Create a team")
    form.get_by_label("Name").fill("team-a")
    form.get_by_label("Instance type").select_option(TYPE)
    form.get_by_label("Quota").fill("1")
    form.get_by_label("Sharing").select_option("LendAndBorrow")
    form.get_by_role("button", name="Create team").click()
    dialog = page.get_by_role("dialog")
    plan = dialog.get_by_role("list", name="Plan")
    expect(plan).to_contain_text(f"quota: none -> 1 \u00d7 {TYPE}")
    expect(plan).to_contain_text("sharing: none -> LendAndBorrow")
    expect(plan).to_contain_text("CreateComputeQuota")
    dialog.get_by_role("button", name="Create team team-a").click()
    expect(page.get_by_role("status").first).to_contain_text("Creation of team team-a")
    row = page.locator("tr[data-team='team-a']")
    expect(row).to_contain_text(f"1 \u00d7 {TYPE}", timeout=90_000)  # 1 x the type
    expect(row).to_contain_text("LendAndBorrow")

    # a job of the team runs: its usage shows, live
    job = {
        "recipe": "pytorch",
        "name": unique("tj")[:30],
        "instance_group": "gpu",
        "script": "code/train.py",
        "args": ["--max_steps", "100000"],
        "resources": {"gpus": 4},
        "team": "team-a",
        "priority": "training",
    }
    answer = api.post(f"/api/v1/clusters/{cluster}/jobs", job)
    assert answer.status_code == 202, answer.text
    expect(row).to_contain_text(f"{TYPE}: 4 of 4 GPUs", timeout=90_000)

    # a viewer reads the same, without controls
    viewer_token = api.post("/api/v1/tokens", {"name": unique("tv"), "role": "viewer"}).json()
    other = sign_in(browser, module_stack, viewer_token["token"])
    other.goto(f"/#/clusters/{cluster}/teams")
    viewed = other.locator("tr[data-team='team-a']")
    expect(viewed).to_contain_text(f"{TYPE}: 4 of 4 GPUs")
    expect(other.get_by_text("Changing teams needs an admin token")).to_be_visible()
    expect(other.get_by_role("button", name="Edit")).to_have_count(0)
    expect(other.get_by_role("form", name="Create a team")).to_have_count(0)
    other.context.close()

    # edit: the diff first, then the new sharing shows
    row.get_by_role("button", name="Edit").click()
    edit = page.get_by_role("form", name="Edit team team-a")
    edit.get_by_label("Sharing").select_option("Lend")
    edit.get_by_role("button", name="Save team").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("list", name="Plan")).to_contain_text(
        "sharing: LendAndBorrow -> Lend"
    )
    dialog.get_by_role("button", name="Update team team-a").click()
    expect(row.get_by_role("cell", name=re.compile(r"^Lend"))).to_be_visible(timeout=90_000)

    # delete, confirmed; the row goes
    row.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog")
    plan = dialog.get_by_role("list", name="Plan")
    expect(plan).to_contain_text(f"the team and its quota of 1 \u00d7 {TYPE} are deleted")
    expect(plan).to_contain_text("DeleteComputeQuota")
    dialog.get_by_role("button", name="Delete team team-a").click()
    expect(row).to_have_count(0, timeout=90_000)
