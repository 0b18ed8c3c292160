"""What the browser tests share: tokens of given roles and signing in with one, axe-core and its
findings, the overflow probe of the page's tables, a small vLLM endpoint's spec, and running a
coroutine (seeding the database) beside Playwright's event loop."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.e2e.conftest import Client, RunningStack

AXE = Path(__file__).resolve().parent / "axe"

# axe-core's findings on the whole document, one line each: the rule and the elements it names.
AXE_RUN = (
    "async () => (await axe.run(document)).violations"
    ".map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)"
)

# Every table of the page against the box it sits in: the table's width beyond the width its
# scroll box shows (0 when it fits), and the page's own horizontal overflow.
OVERFLOW = """
() => ({
  page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  tables: [...document.querySelectorAll('table')].map((t) => {
    const box = t.closest('.table-wrap') || t.parentElement;
    const card = t.closest('.card') || document.getElementById('main');
    const over = Math.max(t.scrollWidth - box.clientWidth, box.getBoundingClientRect().right
      - card.getBoundingClientRect().right);
    return [t.querySelector('caption')?.textContent || t.className, Math.round(over)];
  }),
})
"""


def axe_source() -> str:
    """axe-core from tests/ui/axe (npm ci there once, if npm is installed)."""
    script = AXE / "node_modules" / "axe-core" / "axe.min.js"
    if not script.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: axe-core (tests/ui/axe) cannot be installed")
        done = subprocess.run(
            [npm, "ci", "--prefix", str(AXE), "--no-audit", "--no-fund", "--loglevel=error"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not script.is_file():
            pytest.skip(f"axe-core could not be installed: {done.stderr[-500:]}")
    return script.read_text()


def axe_violations(page: Any) -> list[str]:
    """What axe-core finds on the page as it is now (axe loaded into it first)."""
    page.evaluate(axe_source())
    found: list[str] = page.evaluate(AXE_RUN)
    return found


def sign_in(
    browser: Any,
    stack: RunningStack,
    token: str,
    width: int = 1280,
    timeout_ms: int = 60_000,
    errors: list[str] | None = None,
) -> Any:
    """A new tab of its own (its own session storage), signed in with `token` on the stack's
    UI, on the clusters page; the page's uncaught errors go to `errors`, if given. The caller
    closes its context (`tab.context.close()`)."""
    from playwright.sync_api import expect

    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=stack.stack.url
    )
    tab = context.new_page()
    tab.set_default_timeout(timeout_ms)
    if errors is not None:
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto("/")
    tab.get_by_label("API token").fill(token)
    tab.get_by_role("button", name="Sign in").click()
    expect(tab.get_by_role("heading", name="Clusters", level=1)).to_be_visible()
    return tab


def run_async(job: Coroutine[Any, Any, Any]) -> Any:
    """Run `job` to its end in a thread of its own: Playwright's event loop runs in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, job).result()


def tokens(api: Client, roles: dict[str, str]) -> dict[str, str]:
    """A new API token for each name, of the role given: name -> the token."""
    made = {}
    for who, role in roles.items():
        answer = api.post("/api/v1/tokens", {"name": who, "role": role})
        assert answer.status_code in (200, 201), answer.text
        made[who] = answer.json()["token"]
    return made


def vllm_endpoint(name: str) -> dict[str, Any]:
    """The spec of a one-replica vLLM endpoint of a small model on one A10G."""
    return {
        "name": name,
        "kind": "container",
        "instance_type": "ml.g5.8xlarge",
        "replicas": 1,
        "gpus": 1,
        "container": {"engine": "vllm", "model": "Qwen/Qwen3-0.6B"},
    }


Rows = tuple[Sequence[str], Sequence[tuple[Any, ...]]]


async def _write(dsn: str, forget: str, tables: dict[str, Rows]) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(forget)
        for table, (columns, records) in tables.items():
            await conn.copy_records_to_table(table, columns=list(columns), records=records)
    finally:
        await conn.close()


def seed(stack: RunningStack, forget: str, tables: dict[str, Rows]) -> RunningStack:
    """Write rows straight into the stack's read model (PostgreSQL COPY), in the order given,
    after `forget` (SQL that removes what an earlier seeding left): table -> (columns, rows)."""
    assert stack.stack.database_url
    run_async(_write(stack.stack.database_url, forget, tables))
    return stack
