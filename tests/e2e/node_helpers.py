"""What the node e2e modules share: a fast node watcher and reading the event log."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Client


@pytest.fixture(scope="module", autouse=True)
def fast_node_watch() -> Iterator[None]:
    """The node watcher of this module's cluster-svc looks every 0.3 s (set before it starts)."""
    saved = os.environ.get("NODE_WATCH_SECONDS")
    os.environ["NODE_WATCH_SECONDS"] = "0.3"
    yield
    if saved is None:
        os.environ.pop("NODE_WATCH_SECONDS", None)
    else:
        os.environ["NODE_WATCH_SECONDS"] = saved


def events(api: Client, after: int = 0) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        page = api.get("/api/v1/events", params={"after": after, "limit": 1000}).json()
        found += page
        if len(page) < 1000:
            return found
        after = page[-1]["seq"]


def last_seq(api: Client) -> int:
    found = events(api)
    return int(found[-1]["seq"]) if found else 0


def wait_event(
    api: Client, after: int, event_type: str, timeout: float = 60, **payload: Any
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        for event in events(api, after):
            body = event["payload"]
            if event["type"] == event_type and all(body.get(k) == v for k, v in payload.items()):
                return event
        assert time.monotonic() < deadline, f"no {event_type} {payload} within {timeout}s"
        time.sleep(0.2)
