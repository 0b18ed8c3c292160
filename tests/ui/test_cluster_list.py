"""1,200 clusters and 2,000 operations, in Chromium against the real stack: the clusters list
reads every page of the REST list (200 a page, by cursor) and draws only the rows in view, as do
the fleet overview and the operations list; scrolling reaches the last cluster, the search finds
one the first page did not hold, a change made through REST shows while the focus stays where it
was, the operations filter reads on past the first page, and axe finds nothing at 1280 and 420 px.

The rows are written straight into the read model (PostgreSQL): the lists read only that."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RunningStack
from tests.ui.helpers import OVERFLOW, axe_violations, seed

CLUSTERS = 1_200  # more than the 1,000 one request may ask for
OPERATIONS = 2_000
OPERATION_COLUMNS = [
    *("id", "kind", "domain", "target_type", "target_id", "request", "command_type", "command"),
    *("principal", "request_hash", "status", "created_at"),
]
T0 = datetime(2026, 1, 1, tzinfo=UTC)
LIVE_MS = 2_000  # a change made anywhere shows on an open page within this
DRAWN = 100  # the most rows of one table in the document

# the fleet overview reads 1,200 clusters' nodes and jobs (twice in the axe test): minutes
pytestmark = pytest.mark.slow


def _name(i: int) -> str:
    return f"fleet-{i:04d}"


def _spec(i: int) -> str:
    # one cluster of the fleet runs a type no other does: the search finds it by that
    instance_type = "ml.p5.48xlarge" if i == CLUSTERS - 7 else "ml.g5.8xlarge"
    groups = [{"name": "workers", "count": 2, "instance_type": instance_type}]
    return json.dumps({"instance_groups": groups})


@pytest.fixture(scope="module")
def seeded(module_stack: RunningStack) -> RunningStack:
    clusters = [
        (_name(i), "us-east-1", "active", True, _spec(i), T0 + timedelta(seconds=i))
        for i in range(CLUSTERS)
    ]
    # operations on the clusters, the newest last; finished (nothing runs them again)
    operations = [
        (
            uuid.uuid4(),
            "cluster.set_feature",
            "cluster",
            "cluster",
            _name(i % CLUSTERS),
            "{}",
            "SetFeature",
            "{}",
            "seed",
            f"h{i}",
            "succeeded",
            T0 + timedelta(seconds=i),
        )
        for i in range(OPERATIONS)
    ]
    return seed(
        module_stack,
        "DELETE FROM operations WHERE principal = 'seed'; DELETE FROM clusters WHERE name LIKE 'fleet-%'",
        {
            "clusters": (["name", "region", "status", "managed", "spec", "created_at"], clusters),
            "operations": (OPERATION_COLUMNS, operations),
        },
    )


def _drawn(page: Page, selector: str) -> int:
    return int(page.locator(selector).count())


def test_every_page_is_read_and_only_the_rows_in_view_are_drawn(
    page: Page, seeded: RunningStack
) -> None:
    page.goto("/#/clusters")
    expect(page.locator(f"tr[data-cluster='{_name(0)}']")).to_be_visible()
    # the pages come one after the other, without scrolling: the whole fleet is there to search
    count = page.locator("[data-count]")
    expect(count).to_have_text(f"{CLUSTERS} of {CLUSTERS} clusters loaded")
    assert _drawn(page, "tr[data-cluster]") < DRAWN, "every row is in the document"
    table = page.get_by_role("table", name="Clusters and their status")
    # a screen reader hears the list's length and where each drawn row stands in it
    expect(table).to_have_attribute("aria-rowcount", str(CLUSTERS + 1))
    expect(page.locator(f"tr[data-cluster='{_name(0)}']")).to_have_attribute("aria-rowindex", "2")

    # scrolled to the end, the last cluster is drawn and the first is not
    page.get_by_role("region", name="Clusters list").evaluate(
        "(el) => { el.scrollTop = el.scrollHeight; }"
    )
    last = page.locator(f"tr[data-cluster='{_name(CLUSTERS - 1)}']")
    expect(last).to_be_visible()
    expect(last).to_have_attribute("aria-rowindex", str(CLUSTERS + 1))
    expect(page.locator(f"tr[data-cluster='{_name(0)}']")).to_have_count(0)
    assert _drawn(page, "tr[data-cluster]") < DRAWN

    # the fleet overview holds a row per cluster, drawn the same way
    fleet = page.get_by_role("region", name="Fleet")
    expect(fleet.locator(f"tr[data-fleet='{_name(0)}']")).to_be_visible(timeout=60_000)
    assert _drawn(page, "tr[data-fleet]") < DRAWN
    fleet_list = page.get_by_role("region", name="Per-cluster GPUs, nodes, jobs and cost")
    fleet_list.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    expect(fleet.locator(f"tr[data-fleet='{_name(CLUSTERS - 1)}']")).to_be_visible()
    assert _drawn(page, "tr[data-fleet]") < DRAWN

    # the search looks through every page: by name, and by the one cluster's instance type
    search = page.get_by_label("Search clusters")
    search.fill(_name(CLUSTERS - 3))
    expect(page.locator("tr[data-cluster]")).to_have_count(1)
    expect(page.locator(f"tr[data-cluster='{_name(CLUSTERS - 3)}']")).to_be_visible()
    expect(count).to_have_text(f"{CLUSTERS} of {CLUSTERS} clusters loaded; 1 match")
    search.fill("p5.48x")
    expect(page.locator(f"tr[data-cluster='{_name(CLUSTERS - 7)}']")).to_be_visible()
    expect(fleet.locator("tr[data-fleet]")).to_have_count(1)
    search.fill("no-such-cluster")
    expect(page.get_by_text("No clusters match.")).to_be_visible()
    search.fill("")
    expect(page.locator(f"tr[data-cluster='{_name(0)}']")).to_be_attached()


def test_a_change_shows_and_the_focus_stays_on_its_row(page: Page, seeded: RunningStack) -> None:
    api = seeded.client
    page.goto("/#/clusters")
    expect(page.locator("[data-count]")).to_have_text(f"{CLUSTERS} of {CLUSTERS} clusters loaded")
    # a keyboard user on a row's button; the active cluster changes elsewhere (REST)
    button = page.get_by_role("button", name=f"Delete {_name(3)}")
    button.focus()
    answer = api.http.put("/api/v1/clusters/active", json={"name": _name(5)})
    assert answer.status_code == 200, answer.text
    row = page.locator(f"tr[data-cluster='{_name(5)}']")
    expect(row.locator("td[data-label='Actions']")).to_contain_text("★ active", timeout=LIVE_MS)
    expect(button).to_be_focused()


def test_the_operations_list_reads_pages_as_it_scrolls_and_as_it_filters(
    page: Page, seeded: RunningStack
) -> None:
    total = int(seeded.client.http.get("/api/v1/operations?limit=1").headers["X-Total-Count"])
    assert total >= OPERATIONS
    page.goto("/#/operations")
    newest = page.locator("tr[data-operation]").first
    expect(newest).to_contain_text(_name((OPERATIONS - 1) % CLUSTERS))
    count = page.locator("[data-count]")
    expect(count).to_have_text(f"200 of {total} operations loaded")
    assert _drawn(page, "tr[data-operation]") < DRAWN
    page.get_by_role("region", name="Operations list").evaluate(
        "(el) => { el.scrollTop = el.scrollHeight; }"
    )
    expect(count).to_have_text(f"400 of {total} operations loaded")
    assert _drawn(page, "tr[data-operation]") < DRAWN

    # the oldest operation's cluster: the filter reads on until its match is drawn
    page.get_by_label("Target contains").fill(_name(0))
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tr[data-operation]").filter(has_text=_name(0))).to_have_count(
        len(range(0, OPERATIONS, CLUSTERS))
    )
    expect(count).to_contain_text(f"{total} of {total} operations loaded")


def test_the_lists_fit_and_have_no_axe_violations_at_1280_and_420_px(
    page: Page, seeded: RunningStack
) -> None:
    found = {}
    for width in (1280, 420):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/?w={width}#/operations")
        expect(page.locator("[data-count]")).to_contain_text("operations loaded")
        if violations := axe_violations(page):
            found[f"{width} operations"] = violations
        page.goto(f"/?w={width}#/clusters")
        expect(page.locator("[data-count]")).to_have_text(
            f"{CLUSTERS} of {CLUSTERS} clusters loaded"
        )
        page.get_by_role("region", name="Clusters list").evaluate(
            "(el) => { el.scrollTop = 4000; }"
        )
        expect(page.locator("tr[data-fleet]").first).to_be_attached(timeout=60_000)
        page.wait_for_timeout(300)
        overflow = page.evaluate(OVERFLOW)
        assert overflow["page"] <= 0, (width, overflow)
        assert all(over <= 1 for _, over in overflow["tables"]), (width, overflow)
        if violations := axe_violations(page):
            found[f"{width} clusters"] = violations
    assert not found, found
