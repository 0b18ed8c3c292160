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
    """The node watcher of this module's cluster-svc looks every 0.3 s (set before it starts),
    with an AWS call budget that affords a call every round (12,000 an hour)."""
    fast = {"NODE_WATCH_SECONDS": "0.3", "NODE_WATCH_AWS_CALLS_PER_CLUSTER_HOUR": "100000"}
    saved = {key: os.environ.get(key) for key in fast}
    os.environ.update(fast)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


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
