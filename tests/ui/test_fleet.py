"""The fleet overview and the instance-type picker in Debian's Chromium against the real stack."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RunningStack, unique
from tests.ui.helpers import vllm_endpoint

# Minutes of Chromium/cluster work: in `make reliability`, so `make test` stays under 30 minutes on 2 cores.
pytestmark = pytest.mark.slow

LIVE_MS = 2_000


def test_fleet_overview_totals_search_sort_and_live(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    groups = api.get(f"/api/v1/clusters/{cluster}/instance-groups").json()
    assert [(g["instance_type"], g["count"]) for g in groups] == [("ml.g5.8xlarge", 2)]
    page.goto("/#/clusters")
    fleet = page.get_by_role("region", name="Fleet")
    row = fleet.locator(f"tr[data-fleet='{cluster}']")
    # GPUs and cost are the capacity API's (its price table is the one the UI shows): the nodes'
    # allocatable GPUs (one A10G per ml.g5.8xlarge), nodes x the type's price plus the
    # cluster's NAT gateway and file systems
    fleet_capacity = api.get("/api/v1/capacity").json()
    [line] = [c for c in fleet_capacity["clusters"] if c["cluster"] == cluster]
    capacity = api.get(f"/api/v1/clusters/{cluster}/capacity").json()
    [group] = capacity["groups"]
    infrastructure = sum(i["per_hour"] or 0.0 for i in capacity["infrastructure"])
    assert capacity["infrastructure"], "the create made a NAT gateway"
    nodes = 2 * group["price_per_node_hour"]
    assert line["cost_per_hour"] == round(nodes + infrastructure, 4) > 0
    expect(row.locator("td[data-key='gpus']")).to_have_text("2")
    expect(row.locator("td[data-key='free']")).to_have_text("2")
    expect(row.locator("td[data-key='healthy']")).to_have_text("2")
    expect(row.locator("td[data-key='unhealthy']")).to_have_text("0")
    expect(row.locator("td[data-key='cost']")).to_have_text(f"${line['cost_per_hour']:.2f}")
    expect(fleet.locator(".fleet-totals")).to_contain_text("2 GPUs, 0 allocated, 2 free")
    # the price source as the capacity API names it
    prices = fleet.locator(".fleet-prices")
    expect(prices).to_contain_text("at list prices")
    expect(prices).to_contain_text(f"published {fleet_capacity['prices']['as_of']}")
    expect(prices).to_contain_text(fleet_capacity["prices"]["source"])

    # an endpoint deployed through REST takes a GPU: the open overview follows within 2 s
    name = unique("fl")
    spec = vllm_endpoint(name)
    deployed = api.post("/api/v1/endpoints", spec, params={"cluster": cluster})
    assert deployed.status_code == 202, deployed.text
    expect(row.locator("td[data-key='endpoints']")).to_have_text("1", timeout=LIVE_MS)
    expect(row.locator("td[data-key='allocated']")).to_have_text("1", timeout=LIVE_MS)
    expect(row.locator("td[data-key='free']")).to_have_text("1")
    assert api.wait(deployed.json()["operation_id"], timeout=120)["status"] == "succeeded"

    # sortable: the header says how, a second click reverses
    by_gpus = fleet.get_by_role("button", name="Sort by gpus")
    by_gpus.click()
    expect(fleet.locator("th[aria-sort='descending']")).to_have_text("GPUs ▼")
    by_gpus.click()
    expect(fleet.locator("th[aria-sort='ascending']")).to_have_text("GPUs ▲")

    # searchable: both the overview and the list
    search = page.get_by_label("Search clusters")
    search.fill("no-such-cluster")
    expect(row).to_have_count(0)
    expect(page.locator(f"tr[data-cluster='{cluster}']")).to_have_count(0)
    search.fill("g5.8x")
    expect(row).to_be_visible()
    expect(page.locator(f"tr[data-cluster='{cluster}']")).to_be_visible()

    deleted = api.delete(f"/api/v1/endpoints/{name}", params={"cluster": cluster})
    assert api.wait(deleted.json()["operation_id"], timeout=120)["status"] == "succeeded"
    expect(row.locator("td[data-key='endpoints']")).to_have_text("0", timeout=LIVE_MS)


def test_instance_type_picker_grouped_with_gpus_and_memory(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    _, cluster = created_cluster
    # the figures are the API's (EC2's DescribeInstanceTypes through cluster-svc), the price
    # its list price from the Price List API
    a10g = (
        "ml.g5.8xlarge — 1 \u00d7 NVIDIA A10G (22.4 GiB each) · 32 vCPU · 128 GiB · EFA · $3.06/h"
    )
    for path, form in (
        ("/#/clusters/new", "New cluster"),
        (f"/#/clusters/{cluster}", "Add an instance group"),
        ("/#/endpoints", "Deploy an endpoint"),
    ):
        page.goto(path)
        if form == "Add an instance group":
            page.locator("summary", has_text=form).click()
        scope = page.get_by_role("form", name=form)
        if form == "New cluster":
            zone = scope.get_by_label("Availability Zone")
            expect(zone.locator("option[value='use1-az1']")).to_be_attached()
            zone.select_option("use1-az1")
        picker = scope.get_by_label("Instance type", exact=True)
        option = picker.locator("option[value='ml.g5.8xlarge']")
        # the instance types are read live from EC2 (every type, every zone): seconds on a
        # loaded machine
        expect(option).to_have_text(a10g, timeout=30_000)
        # grouped by accelerator, CPU-only types hidden until asked for
        group = picker.locator("optgroup[label='GPU: NVIDIA A10G']")
        expect(group.locator("option")).to_have_count(8)
        expect(picker.locator("option[value='ml.c5.large']")).to_have_count(0)
        scope.get_by_label("Accelerator filter").select_option("CPU only")
        expect(picker.locator("optgroup")).to_have_count(1)
        expect(picker.locator("option[value='ml.c5.large']")).to_have_text(
            "ml.c5.large — 2 vCPU · 4 GiB · $0.10/h"
        )
        expect(picker.locator("option[value='ml.g5.8xlarge']")).to_have_count(0)
        scope.get_by_label("Accelerator filter").select_option("GPU and Trainium")
        picker.select_option("ml.g5.48xlarge")
        expect(scope.locator(".type-summary")).to_contain_text(
            "8 \u00d7 NVIDIA A10G (22.4 GiB each) · 192 vCPU"
        )
