"""The training plans page in Debian's Chromium against the real stack (the simulated SageMaker
training-plan offerings): a bad search is answered at its field; a search lists offerings with
their upfront fees; an admin buys one through the confirmation dialog, which shows the fee and
the dry-run plan, and the plan appears in the list without a reload (the event stream), bought
in AWS at the fee shown; a viewer searches the same offerings and has no Buy button. On a built
cluster, the add-group form offers an Active plan of the chosen type in the cluster's zone and
adds the group on it; the plans page then names the group using the plan."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import RunningStack, unique
from tests.ui.helpers import sign_in

# Chromium against a full stack: in `make reliability`.
pytestmark = pytest.mark.slow

P5 = "ml.p5.48xlarge"
X = "\N{MULTIPLICATION SIGN}"  # how the page writes "2 x ml.p5.48xlarge"


def _search(page: Page, days: str) -> None:
    form = page.get_by_role("form", name="Search training plan offerings")
    form.get_by_label("Instance type").select_option(P5)
    form.get_by_label("Instances").select_option("2")
    form.get_by_label("Duration (days)").fill(days)
    form.get_by_role("button", name="Search offerings").click()


def test_search_buy_and_list_a_training_plan_and_a_viewer_cannot_buy(
    page: Page, browser: Browser, module_stack: RunningStack
) -> None:
    api = module_stack.client
    page.goto("/#/training-plans")
    expect(page.get_by_role("heading", name="Training plans", level=1)).to_be_visible()

    _search(page, "0")
    days = page.get_by_label("Duration (days)")
    expect(days).to_have_attribute("aria-invalid", "true")
    expect(page.locator(f"#{days.get_attribute('id')}-error")).to_contain_text("1 to 182")

    _search(page, "2")
    expect(days).not_to_have_attribute("aria-invalid", "true")
    offerings = api.get(
        "/api/v1/training-plans/offerings",
        params={"instance_type": P5, "instance_count": 2, "duration_days": 2},
    ).json()
    assert offerings
    first = offerings[0]
    fee = f"${float(first['upfront_fee']):,.2f} USD"
    row = page.locator(f"tr[data-offering='{first['offering_id']}']")
    expect(row).to_contain_text(fee)
    expect(row).to_contain_text(f"2 {X} {P5}")
    expect(page.locator("tr[data-offering]")).to_have_count(len(offerings))

    # a buy without a name is refused at the name field, before any dialog
    row.get_by_role("button", name="Buy").click()
    name_box = page.get_by_label("Name of the plan to buy")
    expect(name_box).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("dialog")).to_have_count(0)

    name = unique("ui-plan")
    name_box.fill(name)
    row.get_by_role("button", name="Buy").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Buy training plan {name} for {fee}?")
    plan = dialog.get_by_role("list", name="Plan")
    expect(plan).to_contain_text(f"Upfront fee: {fee}")
    expect(plan).to_contain_text("sagemaker CreateTrainingPlan")
    expect(plan).to_contain_text(f"2 {X} {P5} in {first['availability_zone']}")
    # cancelling buys nothing
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert name not in {p["name"] for p in api.get("/api/v1/inspect/training-plans").json()}

    row.get_by_role("button", name="Buy").click()
    page.get_by_role("dialog").get_by_role("button", name="Buy plan").click()
    expect(page.get_by_role("status").first).to_contain_text(f"Buying {name}")
    listed = page.locator(f"tr[data-plan='{name}']")
    expect(listed).to_contain_text(f"2 {X} {P5} in ", timeout=60_000)
    expect(listed).to_contain_text("no group")
    plans = {p["name"]: p for p in api.get("/api/v1/inspect/training-plans").json()}
    assert plans[name]["total_instance_count"] == 2
    (capacity,) = plans[name]["reserved_capacity"]
    expect(listed).to_contain_text(f"2 {X} {P5} in {capacity['availability_zone_id']}")
    ops = api.get("/api/v1/operations", params={"limit": 5}).json()["items"]
    bought = next(o for o in ops if o.get("target_id") == name)
    assert api.wait(bought["id"], timeout=60)["status"] == "succeeded"

    # a viewer searches the same offerings and sees no Buy button
    viewer = api.post("/api/v1/tokens", {"name": unique("tpv"), "role": "viewer"}).json()
    other = sign_in(browser, module_stack, viewer["token"])
    other.goto("/#/training-plans")
    expect(other.locator(f"tr[data-plan='{name}']")).to_be_visible()
    _search(other, "2")
    expect(other.locator("tr[data-offering]").first).to_contain_text(re.compile(r"\$[\d,]+\.\d\d"))
    expect(other.get_by_text("Buying a plan needs an admin token")).to_be_visible()
    expect(other.get_by_role("button", name="Buy")).to_have_count(0)
    other.context.close()


def test_an_instance_group_is_added_on_a_plan_from_the_add_group_form(
    page: Page, created_cluster: tuple[RunningStack, str]
) -> None:
    stack, cluster = created_cluster
    api = stack.client
    zone_id = api.get(f"/api/v1/clusters/{cluster}").json()["spec"]["availability_zone_id"]
    zones = {
        z["zone_id"]: z["zone_name"] for z in api.get("/api/v1/inspect/availability-zones").json()
    }
    search = {"instance_type": P5, "instance_count": 1, "duration_days": 1}
    found = api.get("/api/v1/training-plans/offerings", params=search).json()
    offering = next(o for o in found if o["availability_zone"] == zones[zone_id])
    name = unique("ui-group-plan")
    body = {
        "name": name,
        "offering_id": offering["offering_id"],
        "search": search,
        "confirm_upfront_fee": offering["upfront_fee"],
    }
    bought = api.post("/api/v1/training-plans", body)
    assert bought.status_code == 202, bought.text
    assert api.wait(bought.json()["operation_id"], timeout=60)["status"] == "succeeded"
    deadline = time.monotonic() + 60
    while True:
        plan = next(
            p for p in api.get("/api/v1/inspect/training-plans").json() if p["name"] == name
        )
        if plan["status"] == "Active":
            break
        assert time.monotonic() < deadline, plan
        time.sleep(0.5)

    page.goto(f"/#/clusters/{cluster}")
    page.get_by_text("Add an instance group").click()
    form = page.get_by_role("form", name="Add an instance group")
    form.get_by_label("Group name").fill("reserved")
    form.get_by_label("Instance type").select_option(P5)
    choice = form.get_by_label("Training plan")
    expect(choice.locator(f"option[value='{plan['arn']}']")).to_have_count(1)
    choice.select_option(plan["arn"])
    form.get_by_role("button", name="Add group").click()
    deadline = time.monotonic() + 120
    while True:
        groups = {
            g["name"]: g for g in api.get(f"/api/v1/clusters/{cluster}/instance-groups").json()
        }
        if "reserved" in groups:
            break
        assert time.monotonic() < deadline, "the group was not added"
        time.sleep(0.5)
    kind = "cluster.add_instance_group"
    ops = api.get("/api/v1/operations", params={"target_id": cluster, "kind": kind}).json()
    (adding,) = ops["items"]
    assert adding["source"] == "ui" and adding["request"]["training_plan_arn"] == plan["arn"]
    assert api.wait(adding["id"], timeout=180)["status"] == "succeeded"
    spec = groups["reserved"]["spec"]
    assert spec["capacity_type"] == "training-plan" and spec["training_plan_arn"] == plan["arn"]

    page.goto("/#/training-plans")
    expect(page.locator(f"tr[data-plan='{name}']")).to_contain_text(f"{cluster}/reserved")
