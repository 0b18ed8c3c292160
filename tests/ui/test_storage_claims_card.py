"""The cluster page's storage-claims card in Debian's Chromium: the cluster's own s3-claim is
listed; a bucket made directly in AWS is attached through the form (its plan shown first, then
run), listed as an existing claim, and removed again through its row (plan first)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import RunningStack, cluster_spec, unique

# A built cluster in Chromium, a minute or more: in `make reliability`.
pytestmark = pytest.mark.slow


def test_claims_are_listed_added_and_removed_with_their_plans(
    page: Page, module_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = module_stack.client
    cluster = unique("uistore")
    op = api.post("/api/v1/clusters", cluster_spec(api, cluster)).json()["operation_id"]
    assert api.wait(op, timeout=240)["status"] == "succeeded"
    bucket = unique("ui-data")
    aws_client(sim_aws, "s3").create_bucket(Bucket=bucket)
    page.goto(f"/#/clusters/{cluster}")
    card = page.locator("section.storage-claims-card")
    expect(card.locator("tr", has_text="s3-claim")).to_contain_text("goes with the cluster")

    form = card.get_by_role("form", name="Add a storage claim")
    form.get_by_label("Claim name").fill("datasets")
    form.get_by_label("Bucket").fill(bucket)
    form.get_by_role("button", name="Add storage").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("datasets")
    dialog.get_by_role("button", name="Add").click()
    row = card.locator("tr", has_text="datasets")
    expect(row).to_contain_text("existing (kept)", timeout=60_000)
    expect(row).to_contain_text(bucket)

    row.get_by_role("button", name="Remove").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("stays")
    dialog.get_by_role("button", name="Remove").click()
    expect(card.locator("tr", has_text="datasets")).to_have_count(0, timeout=60_000)
    assert [c["claim"] for c in api.get(f"/api/v1/clusters/{cluster}/storage").json()] == [
        "s3-claim"
    ]
    aws_client(sim_aws, "s3").head_bucket(Bucket=bucket)
    page.goto("/#/clusters")
    deleted = api.delete(f"/api/v1/clusters/{cluster}")
    assert deleted.status_code == 202, deleted.text
    assert api.wait(deleted.json()["operation_id"], timeout=240)["status"] == "succeeded"
