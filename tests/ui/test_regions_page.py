"""Two served regions in Chromium: the create form's region picker lists them (the default
chosen) and reads the zones of the region picked; the cluster made there shows its region in
the clusters table and on its page; the import form picks a region too. Axe finds nothing and
the tables fit at 1280 and 420 px."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from hyperpilot.infra import Postgres
from sim.aws import SimulatedAws
from sim.k8s import KubeWorld
from sim.profile import get_profile
from sim.testing import simulated_aws
from tests.conftest import TEMPLATE
from tests.e2e.conftest import RunningStack, _stack, unique
from tests.ui.helpers import OVERFLOW, axe_violations

WEST = "us-west-2"

# This module's simulated AWS and stack serve two regions (they replace the package's).
sim_aws = simulated_aws(
    profile="fast", kube=KubeWorld(get_profile("fast")), regions=(WEST,), scope="module"
)


@pytest.fixture(scope="module")
def module_stack(
    tmp_path_factory: pytest.TempPathFactory, postgres: Postgres, sim_aws: SimulatedAws
) -> Iterator[RunningStack]:
    database_url = postgres.create_database(f"u{time.time_ns()}", template=TEMPLATE)
    env = {"HYPERPILOT_AWS_REGIONS": f"us-east-1,{WEST}"}
    with _stack(tmp_path_factory.mktemp("regions-ui"), database_url, sim_aws, env) as running:
        yield running


def test_create_in_the_region_picked_and_see_it_listed(
    page: Page, module_stack: RunningStack
) -> None:
    api = module_stack.client
    name = unique("west")
    page.goto("/#/clusters/new")
    region = page.get_by_label("Region")
    expect(region.locator("option")).to_have_text(["us-east-1 (default)", WEST])
    expect(region).to_have_value("us-east-1")
    expect(
        page.get_by_label("Availability Zone").locator("option[value='use1-az1']")
    ).to_be_attached()
    region.select_option(WEST)
    zone = page.get_by_label("Availability Zone")
    expect(zone.locator("option[value='usw2-az1']")).to_be_attached()
    expect(zone.locator("option[value='use1-az1']")).to_have_count(0)
    zone.select_option("usw2-az1")
    types = page.get_by_label("Instance type")
    expect(types.locator("option[value='ml.g5.8xlarge']")).to_be_attached(timeout=30_000)
    types.select_option("ml.g5.8xlarge")
    page.get_by_label("Instance count").fill("1")
    page.get_by_label("Cluster name").fill(name)
    page.get_by_role("button", name="Create cluster").click()
    panel = page.locator("section.progress")
    expect(panel.locator(".op-summary .status-succeeded")).to_be_visible(timeout=240_000)
    try:
        assert api.get(f"/api/v1/clusters/{name}").json()["region"] == WEST
        page.goto("/#/clusters")
        row = page.locator(f"tr[data-cluster='{name}']")
        expect(row.locator("td[data-label='Region']")).to_have_text(WEST)
        page.goto(f"/#/clusters/{name}")
        expect(page.locator("dt:text-is('Region') + dd")).to_have_text(WEST)

        page.goto("/#/clusters")
        page.get_by_text("Import from this account").click()
        importing = page.get_by_role("form", name="Import a cluster")
        picker = importing.get_by_label("Region")
        expect(picker.locator("option")).to_have_text(["us-east-1 (default)", WEST])
        picker.select_option(WEST)
        importing.get_by_label("EKS cluster name").fill("no-such-eks")
        sent: list[Any] = []
        page.on(
            "request",
            lambda r: sent.append(r.post_data_json) if r.url.endswith("/clusters/import") else None,
        )
        importing.get_by_role("button", name="Import").click()
        deadline = time.monotonic() + 10
        while not sent and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert sent and sent[0]["region"] == WEST, sent

        for width in (1280, 420):
            page.set_viewport_size({"width": width, "height": 900})
            for path, ready in {
                "/#/clusters": f"tr[data-cluster='{name}']",
                "/#/clusters/new": "option[value='use1-az1']",
            }.items():
                page.goto(path)
                expect(page.locator(ready).first).to_be_attached()
                page.wait_for_timeout(300)
                violations = axe_violations(page)
                assert violations == [], (width, path, violations)
                found: dict[str, Any] = page.evaluate(OVERFLOW)
                assert found["page"] <= 0, (width, path, found)
                assert [t for t in found["tables"] if t[1] > 0] == [], (width, path, found)
    finally:
        deleted = api.delete(f"/api/v1/clusters/{name}")
        if deleted.status_code == 202:
            api.wait(deleted.json()["operation_id"], timeout=240)
