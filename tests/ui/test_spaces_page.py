"""The spaces page in Chromium against the real stack: with the Spaces add-on on, an operator
creates a GPU space with the bucket's claim mounted from the form, sees it Running without a
reload, opens it through the gateway (its JupyterLab page shown in the page) and stops it;
another principal's page lists nothing of it. (A pod's terminal: tests/ui/test_terminal.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Client, RunningStack
from tests.ui.helpers import sign_in, tokens

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


def test_an_operator_creates_opens_and_stops_a_gpu_space(
    browser: Any, module_stack: RunningStack, spaced: str
) -> None:
    from playwright.sync_api import expect

    api = module_stack.client
    made = tokens(api, {"dana": "operator", "erin": "viewer"})
    errors: list[str] = []
    page = sign_in(browser, module_stack, made["dana"], errors=errors)
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

    other = sign_in(browser, module_stack, made["erin"])
    other.goto(f"/#/clusters/{spaced}/spaces")
    expect(other.get_by_text("No spaces yet.")).to_be_visible(timeout=30_000)
    viewer = Client(module_stack.stack.url, made["erin"])
    denied = viewer.get(f"/api/v1/clusters/{spaced}/spaces/dana-lab/lab/")
    assert denied.status_code == 403, denied.text

    row.get_by_role("button", name="Stop").click()
    expect(row.get_by_text("Stopped")).to_be_visible(timeout=90_000)
    assert not errors, errors
