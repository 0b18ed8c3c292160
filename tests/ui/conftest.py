"""Browser fixtures: Debian's Chromium driven by Playwright against the real stack.

Chromium comes from Debian (`make install` installs it when missing); Playwright never downloads
a browser here. Without /usr/bin/chromium these tests are skipped, saying why.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import (  # noqa: F401 - fixtures used by this package's tests
    TOKEN,
    RunningStack,
    created_cluster,
    module_stack,
    sim_aws,
)
from tests.ui.helpers import sign_in

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]


def chromium_path() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser(module_stack: RunningStack) -> Iterator[object]:  # noqa: F811
    # Playwright's sync API keeps an event loop running in this thread: the stack (whose start
    # runs asyncio.run) starts before it.
    executable = chromium_path()
    if executable is None:
        pytest.skip("Debian's chromium is not installed (/usr/bin/chromium): run `make install`")
    from playwright.sync_api import sync_playwright

    api = module_stack.client
    deadline = time.monotonic() + 60
    while api.get("/api/v1/inspect/availability-zones").status_code != 200:
        # cluster-svc answers the form's pickers once it has connected to NATS
        assert time.monotonic() < deadline, "cluster-svc does not answer inspect queries"
        time.sleep(0.2)
    # launch() starts Chromium with a new, empty profile directory of its own
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: object, module_stack: RunningStack) -> Iterator[object]:  # noqa: F811
    """A signed-in page of the UI served by the stack's gateway."""
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    errors: list[str] = []
    tab = sign_in(browser, module_stack, TOKEN, timeout_ms=30_000, errors=errors)
    yield tab
    tab.context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
