"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hyperpilot.infra import NatsServer
from shared.bus import Bus


@pytest.fixture
async def bus(nats_server: NatsServer) -> AsyncIterator[Bus]:
    """A bus connected to the test's NATS server."""
    connected = Bus(nats_server.url, name="t")
    connected.start()
    await connected.wait_ready(10)
    yield connected
    await connected.close()
