"""The API reference page (/docs) renders in a browser from the gateway's own files: no request
leaves the gateway's origin and the page's content policy is never violated."""

from __future__ import annotations

from tests.e2e.conftest import RunningStack


def test_the_api_reference_renders_from_the_gateway_alone(
    browser: object,
    module_stack: RunningStack,
) -> None:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    origin = module_stack.stack.url
    context = browser.new_context(base_url=origin)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    elsewhere: list[str] = []
    problems: list[str] = []
    tab.on(
        "request",
        lambda r: None if r.url.startswith((origin, "data:", "blob:")) else elsewhere.append(r.url),
    )
    tab.on("pageerror", lambda exc: problems.append(str(exc)))
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.goto("/docs")
    operations = tab.locator(".opblock-tag")  # Swagger UI's groups of operations, one per tag
    operations.first.wait_for()
    assert operations.count() > 3
    tab.locator(".opblock-summary").first.click()  # an operation opens: the whole UI runs
    tab.locator(".opblock-body").first.wait_for()
    context.close()
    assert elsewhere == []
    assert problems == []
