"""The spaces page in Chromium against the real stack: with the Spaces add-on on, an operator
creates a GPU space with the bucket's claim mounted from the form, sees it Running without a
reload, opens it through the gateway (its JupyterLab page shown in the page) and stops it;
another principal's page lists nothing of it. (A pod's terminal: tests/ui/test_terminal.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Client, RunningStack

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spaced(created_cluster: tuple[RunningStack, str]) -> Iterator[str]:
    stack, name = created_cluster
    api = stack.client
    answer = api.http.patch(f"/api/v1/clusters/{name}/features", json={"spaces": True})
    assert answer.status_code == 202, answer.text
    done = api.wait(answer.json()["operation_id"], timeout=120)
    assert done["status"] in ("succeeded", "noop"), done.get("error")
    yield name


def _sign_in(browser: Any, stack: RunningStack, token: str) -> Any:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=stack.stack.url)
    tab = context.new_page()
    tab.set_default_timeout(60_000)
    tab.goto("/")
    tab.get_by_label("API token").fill(token)
    tab.get_by_role("button", name="Sign in").click()
    expect(tab.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
    return tab


def test_an_operator_creates_opens_and_stops_a_gpu_space(
    browser: Any, module_stack: RunningStack, spaced: str
) -> None:
    from playwright.sync_api import expect

    api = module_stack.client
    tokens = {
        who: api.post("/api/v1/tokens", {"name": who, "role": role}).json()["token"]
        for who, role in (("dana", "operator"), ("erin", "viewer"))
    }
    page = _sign_in(browser, module_stack, tokens["dana"])
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"/#/clusters/{spaced}")
    page.get_by_role("link", name="Spaces").click()
    expect(page.get_by_role("heading", name="Spaces", level=1)).to_be_visible()
    page.get_by_label("Space name").fill("dana-lab")
    page.get_by_label("GPUs").fill("1")
    page.get_by_role("button", name="Create space").click()
    expect(page.get_by_role("link", name="follow the operation")).to_be_visible(timeout=30_000)
    row = page.locator("tr[data-space='dana-lab']")
    expect(row.get_by_text("Running")).to_be_visible(timeout=90_000)
    expect(row).to_contain_text("s3-claim at /data")
    expect(row).to_contain_text("port-forward service/dana-lab 8888:8888")
    row.get_by_role("button", name="Open").click()
    frame = page.frame_locator("iframe.space-frame")
    expect(frame.get_by_text("JupyterLab: dana-lab")).to_be_visible(timeout=30_000)

    other = _sign_in(browser, module_stack, tokens["erin"])
    other.goto(f"/#/clusters/{spaced}/spaces")
    expect(other.get_by_text("No spaces yet.")).to_be_visible(timeout=30_000)
    viewer = Client(module_stack.stack.url, tokens["erin"])
    denied = viewer.get(f"/api/v1/clusters/{spaced}/spaces/dana-lab/lab/")
    assert denied.status_code == 403, denied.text

    row.get_by_role("button", name="Stop").click()
    expect(row.get_by_text("Stopped")).to_be_visible(timeout=90_000)
    assert not errors, errors
