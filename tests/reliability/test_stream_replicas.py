"""Streams are declared with NATS_STREAM_REPLICAS replicas: 1 on the embedded single server, 3
on a three-node cluster, where a stream keeps its messages with one server killed."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import nats
import pytest
from nats.js.api import StreamInfo
from pydantic import ValidationError

from hyperpilot.infra import NatsServer
from shared.bus import ensure_streams, server_urls, streams
from shared.config import Settings
from shared.contracts.subjects import COMMANDS_STREAM, EVENTS_STREAM
from tests.reliability.nats_cluster import NatsCluster

T = TypeVar("T")


@pytest.fixture
def cluster() -> Iterator[NatsCluster]:
    running = NatsCluster(Path(tempfile.mkdtemp(prefix="hp-nc-"))).start()
    try:
        running.wait_meta_leader()
        yield running
    finally:
        running.stop()


def test_replicas_default_to_one_and_are_bounded() -> None:
    assert Settings().nats_stream_replicas == 1
    assert [c.num_replicas for c in streams(3)] == [3, 3]
    with pytest.raises(ValidationError, match="nats_stream_replicas"):
        Settings(nats_stream_replicas=0)
    with pytest.raises(ValidationError, match="nats_stream_replicas"):
        Settings(nats_stream_replicas=7)


def test_a_cluster_url_is_a_server_list_and_each_part_is_checked() -> None:
    urls = "nats://127.0.0.1:4001, nats://127.0.0.1:4002,nats://127.0.0.1:4003"
    assert server_urls(urls) == [
        "nats://127.0.0.1:4001",
        "nats://127.0.0.1:4002",
        "nats://127.0.0.1:4003",
    ]
    assert Settings(nats_url=urls).nats_url == urls
    with pytest.raises(ValidationError, match="each URL must start with nats://"):
        Settings(nats_url="nats://127.0.0.1:4001,ws://127.0.0.1:8080")


async def test_the_embedded_server_gets_single_replica_streams(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await ensure_streams(js)  # NATS_STREAM_REPLICAS unset: 1
        for name in (COMMANDS_STREAM, EVENTS_STREAM):
            info = await js.stream_info(name)
            assert info.config.num_replicas == 1
    finally:
        await nc.close()


async def _until(check: Callable[[], Awaitable[T | None]], what: str, timeout: float = 60) -> T:
    """Poll `check` until it returns something (an election takes seconds on a busy machine)."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: object = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            result = await check()
            if result is not None:
                return result
        except Exception as exc:  # no leader yet: JetStream answers with an error or a timeout
            last = exc
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {timeout}s: {what} (last: {last!r})")


async def test_r3_streams_on_a_three_node_cluster_survive_a_killed_server(
    cluster: NatsCluster,
) -> None:
    nc = await nats.connect(server_urls(cluster.url))
    js = nc.jetstream(timeout=10)

    async def replicated(name: str) -> StreamInfo | None:
        info = await js.stream_info(name)
        ok = (
            info.cluster is not None
            and info.cluster.leader
            and len(info.cluster.replicas or []) == 2
        )
        return info if ok else None

    async def declared() -> bool:
        await ensure_streams(js, replicas=3)
        return True

    try:
        await _until(declared, "streams declared")
        for name in (COMMANDS_STREAM, EVENTS_STREAM):
            info = await _until(functools.partial(replicated, name), f"{name} on three servers")
            assert info.config.num_replicas == 3
        await _until(
            lambda: js.publish("evt.test.before", b"1", headers={"Nats-Msg-Id": "before"}),
            "a publish before the kill",
        )
    finally:
        await nc.close()

    # kill -9 the server the stream's leader is on: the other two elect a new one
    assert info.cluster is not None and info.cluster.leader is not None
    leader = info.cluster.leader
    victim = cluster.nodes[int(leader.removeprefix("n"))]
    assert victim.process is not None
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    survivors = [n.url for n in cluster.nodes if n is not victim]
    nc = await nats.connect(survivors)
    js = nc.jetstream(timeout=10)

    async def new_leader() -> StreamInfo | None:
        info = await js.stream_info(EVENTS_STREAM)
        moved = info.cluster is not None and info.cluster.leader not in (None, leader)
        return info if moved else None

    try:
        await _until(
            lambda: js.publish("evt.test.after", b"2", headers={"Nats-Msg-Id": "after"}),
            "a publish after the kill",
        )
        info = await _until(new_leader, "a new leader of the events stream")
        assert info.state.messages == 2
    finally:
        await nc.close()
