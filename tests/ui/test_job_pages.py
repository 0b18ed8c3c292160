"""10,000 jobs on one cluster, in Chromium against the real stack: the jobs table shows its
first rows at once, loads the next page as the user scrolls (or presses "Load more"), keeps only
the rows in view in the document, fits its card and has no axe violations at 1280 and 420 px.

The jobs are written straight into the read model (PostgreSQL): the table reads only that."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import RunningStack
from tests.ui.helpers import OVERFLOW, axe_violations, seed

CLUSTER = "ui-scale"
JOBS = 10_000
T0 = datetime(2026, 1, 1, tzinfo=UTC)
COLUMNS = ["cluster", "name", "recipe", "api_version", "kind", "spec", "status", "restarts"]
COLUMNS += ["budget", "created_at"]


@pytest.fixture(scope="module")
def seeded(module_stack: RunningStack) -> RunningStack:
    jobs = [
        (
            CLUSTER,
            f"job-{i:05d}",
            "pytorch",
            "sagemaker.amazonaws.com/v1",
            "HyperPodPyTorchJob",
            "{}",
            ("succeeded", "failed", "running")[i % 3],
            i % 4,
            3,
            T0 + timedelta(seconds=i),
        )
        for i in range(JOBS)
    ]
    return seed(
        module_stack, f"DELETE FROM jobs WHERE cluster = '{CLUSTER}'", {"jobs": (COLUMNS, jobs)}
    )


def _rows(page: Page) -> int:
    return int(page.locator("tr[data-job]").count())


def test_the_first_rows_show_and_scrolling_loads_the_next_pages(
    page: Page, seeded: RunningStack
) -> None:
    page.goto(f"/#/clusters/{CLUSTER}/jobs")
    expect(page.locator("tr[data-job='job-00000']")).to_be_visible()
    count = page.locator("[data-count]")
    expect(count).to_have_text(f"200 of {JOBS} jobs loaded")
    assert _rows(page) < 100, "every loaded row is in the document: not virtualized"

    region = page.get_by_role("region", name="Jobs list")
    for loaded in (400, 600, 800):
        region.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
        expect(count).to_have_text(f"{loaded} of {JOBS} jobs loaded")
        # the rows at the end of the pages loaded before are the ones drawn
        expect(page.locator(f"tr[data-job='job-{loaded - 201:05d}']")).to_be_attached()
    expect(page.locator("tr[data-job='job-00000']")).to_have_count(0)  # scrolled out: not drawn
    assert _rows(page) < 100

    # The button loads a page without scrolling (a keyboard user's way).
    page.get_by_role("button", name="Load more").click()
    expect(count).to_have_text(f"1000 of {JOBS} jobs loaded")

    # Back to the top: the first rows are drawn again.
    region.evaluate("(el) => { el.scrollTop = 0; }")
    expect(page.locator("tr[data-job='job-00000']")).to_be_visible()


def test_the_table_fits_and_has_no_axe_violations_at_1280_and_420_px(
    page: Page, seeded: RunningStack
) -> None:
    found = {}
    for width in (1280, 420):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/#/clusters/{CLUSTER}/jobs?w={width}")
        expect(page.locator("tr[data-job='job-00000']")).to_be_visible()
        page.get_by_role("region", name="Jobs list").evaluate("(el) => { el.scrollTop = 4000; }")
        page.wait_for_timeout(300)
        overflow = page.evaluate(OVERFLOW)
        assert overflow["page"] <= 0, (width, overflow)
        assert all(over <= 1 for _, over in overflow["tables"]), (width, overflow)
        violations = axe_violations(page)
        if violations:
            found[width] = violations
    assert not found, found
