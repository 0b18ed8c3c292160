"""The cluster page's drift panel in Debian's Chromium: a group scaled directly in AWS shows
as a drifted field with its two ways out; restore shows its plan first, accept rewrites the
record and the panel goes."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from cluster_svc.domain.instance_groups.described import group_request
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import RunningStack

# The drift card in Chromium on a built cluster whose group drifts, minutes: in `make reliability`.
pytestmark = pytest.mark.slow


def test_drift_is_shown_with_restore_and_accept(
    page: Page, created_cluster: tuple[RunningStack, str], sim_aws: SimulatedAws
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    page.goto(f"/#/clusters/{cluster}")
    panel = page.locator("section.drift")
    expect(page.locator(".cluster-status")).to_be_visible()
    expect(panel).to_be_hidden()  # nothing differs

    sagemaker = aws_client(sim_aws, "sagemaker")
    details = sagemaker.describe_cluster(ClusterName=cluster)["InstanceGroups"][0]
    recorded = int(details["TargetCount"])
    request = {**group_request(json.loads(json.dumps(details, default=str)))}
    request["InstanceCount"] = recorded + 1
    sagemaker.update_cluster(ClusterName=cluster, InstanceGroups=[request])
    assert api.post(f"/api/v1/clusters/{cluster}/refresh").json()["drifted"] is True

    field = f"instance_groups.{details['InstanceGroupName']}.count"
    row = panel.locator("tr", has_text=field)
    expect(row).to_contain_text(str(recorded + 1))
    row.get_by_role("button", name="Restore recorded").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("list", name="Plan")).to_contain_text(
        f"{recorded + 1} -> {recorded} nodes"
    )
    dialog.get_by_role("button", name="Cancel").click()

    row.get_by_role("button", name="Accept actual").click()
    expect(panel).to_be_hidden()
    groups = api.get(f"/api/v1/clusters/{cluster}/instance-groups").json()
    assert groups[0]["count"] == recorded + 1
