"""A pod's terminal in Chromium against the real stack: an operator opens it from the diagnostics
page, types `echo hi` and Enter into xterm.js (keystrokes, not a form field) and sees `hi` come
back from the emulator's `pods/exec` session with a TTY; the terminal follows its box when the
window narrows (the resize channel: `stty size` in the session answers the new columns); axe
finds nothing at 1280 and 420 px; a viewer's terminal is refused; the session is audited
without what was typed."""

from __future__ import annotations

import re
import time
from typing import Any

from tests.e2e.conftest import RunningStack
from tests.ui.helpers import axe_violations, sign_in, tokens


def _open_terminal(tab: Any, cluster: str) -> str:
    tab.goto(f"/#/clusters/{cluster}/diagnostics")
    tab.get_by_label("Namespace").first.fill("kube-system")
    tab.get_by_role("button", name="Show pods").click()
    row = tab.locator("tr[data-pod^='coredns-']").first
    pod = str(row.get_attribute("data-pod"))
    row.get_by_role("button", name="Terminal").click()
    return pod


def _screen_text(tab: Any, pod: str) -> str:
    # the rows xterm.js renders (its DOM renderer), one element per line
    return str(tab.locator(f"[data-terminal='{pod}'] .xterm-rows").inner_text(timeout=30_000))


def _until(check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.2)
    return found


def test_an_operator_types_in_a_real_terminal_that_follows_its_size(
    browser: Any, module_stack: RunningStack, created_cluster: tuple[RunningStack, str]
) -> None:
    from playwright.sync_api import expect

    _, cluster = created_cluster
    api = module_stack.client
    made = tokens(api, {"tess": "operator", "vic": "viewer"})
    errors: list[str] = []
    page = sign_in(browser, module_stack, made["tess"], errors=errors)
    pod = _open_terminal(page, cluster)
    expect(page.get_by_role("status").filter(has_text="Connected to")).to_be_visible(timeout=30_000)
    _until(lambda: "#" in _screen_text(page, pod))  # the shell's prompt
    page.locator(f"[data-terminal='{pod}'] .xterm-helper-textarea").focus()
    page.keyboard.type("echo hi")
    page.keyboard.press("Enter")
    _until(lambda: re.search(r"echo hi\s*\n\s*hi\s*\n", _screen_text(page, pod)))

    page.keyboard.type("stty size")
    page.keyboard.press("Enter")
    wide = _until(lambda: re.findall(r"^\s*(\d+) (\d+)\s*$", _screen_text(page, pod), re.M))
    wide_cols = int(wide[-1][1])
    assert wide_cols > 60, wide
    assert not axe_violations(page)

    page.set_viewport_size({"width": 420, "height": 900})  # the box narrows: fewer columns
    page.wait_for_timeout(500)
    page.locator(f"[data-terminal='{pod}'] .xterm-helper-textarea").focus()
    page.keyboard.type("clear; stty size")  # `clear` is not in the shell: the size still answers
    page.keyboard.press("Enter")
    narrow = _until(
        lambda: [
            s
            for s in re.findall(r"^\s*(\d+) (\d+)\s*$", _screen_text(page, pod), re.M)
            if int(s[1]) < wide_cols
        ]
    )
    assert int(narrow[-1][1]) < 60, narrow
    box = page.locator(f"[data-terminal='{pod}']").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 420  # the terminal fits the window
    assert not axe_violations(page)
    page.goto(f"/#/clusters/{cluster}")  # leaving the page ends the session
    assert not errors, errors

    viewer = sign_in(browser, module_stack, made["vic"])
    _open_terminal(viewer, cluster)
    expect(viewer.get_by_text("Refused: a pod terminal needs the operator role")).to_be_visible(
        timeout=30_000
    )

    def audited() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = 0
        while rows := api.get("/api/v1/events", params={"after": after, "limit": 1000}).json():
            found += [e for e in rows if str(e["type"]).startswith("PodTerminal")]
            after = rows[-1]["seq"]
        return [e for e in found if e.get("principal") in ("tess", "vic")]

    kinds = _until(
        lambda: (
            k
            if {("PodTerminalOpened", "tess"), ("PodTerminalClosed", "tess")}
            <= (k := {(e["type"], e.get("principal")) for e in audited()})
            else None
        )
    )
    assert all(p != "vic" for _, p in kinds)
    closed = [e for e in audited() if e["type"] == "PodTerminalClosed"]
    assert "echo" not in str(audited())
    assert closed and "'lines': 3" in str(closed[-1]), closed  # three lines entered


def test_the_line_mode_socket_runs_a_line_and_is_audited(
    module_stack: RunningStack, created_cluster: tuple[RunningStack, str]
) -> None:
    """Without `tty`, the same socket runs one line at a time (for clients that are not a
    terminal), driven here by the `websockets` client: a line's output comes back, an over-long
    line is refused naming the rule, and the session's close is audited with its line count."""
    import json

    from websockets.sync.client import connect

    _, cluster = created_cluster
    api = module_stack.client
    token = api.post("/api/v1/tokens", {"name": "lina", "role": "operator"}).json()["token"]
    pod = next(
        p["name"]
        for p in api.get(
            f"/api/v1/clusters/{cluster}/pods", params={"namespace": "kube-system"}
        ).json()["pods"]
        if p["name"].startswith("coredns-")
    )
    url = module_stack.stack.url.replace("http://", "ws://", 1)
    path = f"{url}/api/v1/clusters/{cluster}/pods/kube-system/{pod}/terminal/ws"

    # the sync client: this module's browser already runs an event loop in this thread
    headers = {"Authorization": f"Bearer {token}"}
    with connect(path, additional_headers=headers, open_timeout=30) as ws:
        ready = json.loads(ws.recv(timeout=30))
        ws.send("echo from-the-line-mode")
        ran = json.loads(ws.recv(timeout=60))
        ws.send("x" * 5000)
        refused = json.loads(ws.recv(timeout=60))
    assert ready == {"ready": True, "pod": pod, "namespace": "kube-system"}
    assert "from-the-line-mode" in json.dumps(ran), ran
    assert refused["error"]["code"] == "validation_error", refused

    def closed() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = 0
        while rows := api.get("/api/v1/events", params={"after": after, "limit": 1000}).json():
            found += [
                e for e in rows if e["type"] == "PodTerminalClosed" and e.get("principal") == "lina"
            ]
            after = rows[-1]["seq"]
        return found

    found = _until(closed)
    assert "'lines': 1" in str(found[-1]) and "from-the-line-mode" not in str(found), found
