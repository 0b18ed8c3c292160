"""Watches: resume from a resourceVersion without gaps, 410 Gone when too old, bookmarks, aio."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.aio import client as aclient
from kubernetes.aio import config as aconfig
from kubernetes.aio import dynamic as adynamic
from kubernetes.aio import watch as awatch
from kubernetes.client.rest import ApiException

from sim.k8s import ApiServer
from sim.k8s.facts import ClusterFacts


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_watch_resumed_from_resource_version_misses_nothing(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w1"}})
    start_rv = core.list_namespaced_config_map("w1").metadata.resource_version
    last_rv = start_rv  # no watch is open while the changes happen
    for n in range(5):
        core.create_namespaced_config_map("w1", _cm(f"c{n}"))
    core.patch_namespaced_config_map("c1", "w1", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("c2", "w1")
    expected = [("ADDED", f"c{n}") for n in range(5)] + [("MODIFIED", "c1"), ("DELETED", "c2")]
    got: list[tuple[str, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_config_map, "w1", resource_version=last_rv, timeout_seconds=5
    ):
        got.append((event["type"], event["object"].metadata.name))
        if len(got) == len(expected):
            break
    assert got == expected
    # resuming from the middle replays exactly the tail
    mid_rv = core.read_namespaced_config_map("c3", "w1").metadata.resource_version
    tail: list[tuple[str, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_config_map, "w1", resource_version=mid_rv, timeout_seconds=5
    ):
        tail.append((event["type"], event["object"].metadata.name))
        if len(tail) == 3:
            break
    assert tail == [("ADDED", "c4"), ("MODIFIED", "c1"), ("DELETED", "c2")]


def test_watch_too_old_resource_version_is_410() -> None:
    from sim.profile import get_profile

    server = ApiServer("tiny-history", get_profile("fast"), history=5, facts=ClusterFacts()).start()
    try:
        api = config.new_client_from_config_dict(server.kubeconfig())
        core = client.CoreV1Api(api)
        old_rv = core.list_namespaced_config_map("default").metadata.resource_version
        for n in range(20):
            core.create_namespaced_config_map("default", _cm(f"x{n}"))
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=old_rv,
                timeout_seconds=3,
            ):
                pass
        assert err.value.status == 410
        api.close()
    finally:
        server.stop()


def test_watch_with_selectors_and_initial_state(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w2"}})
    core.create_namespaced_config_map("w2", _cm("pre", app="x"))
    core.create_namespaced_config_map("w2", _cm("other", app="y"))
    events: list[tuple[str, str]] = []

    def changes() -> None:
        core.create_namespaced_config_map("w2", _cm("late", app="x"))
        core.patch_namespaced_config_map("other", "w2", {"metadata": {"labels": {"app": "x"}}})
        core.patch_namespaced_config_map("pre", "w2", {"metadata": {"labels": {"app": "z"}}})

    timer = threading.Timer(0.3, changes)
    timer.start()
    for event in watch.Watch().stream(
        core.list_namespaced_config_map, "w2", label_selector="app=x", timeout_seconds=5
    ):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == 4:
            break
    timer.join()
    # an object entering the selection is ADDED, one leaving it is DELETED
    assert events == [("ADDED", "pre"), ("ADDED", "late"), ("ADDED", "other"), ("DELETED", "pre")]


def test_bookmarks(cluster: ApiServer, core: client.CoreV1Api) -> None:
    cluster.bookmark_interval = 0.2
    try:
        rv = core.list_namespaced_config_map("default").metadata.resource_version
        stream = core.list_namespaced_config_map(
            "default",
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=2,
            _preload_content=False,
        )
        first = next(iter(stream.stream() if hasattr(stream, "stream") else [stream.readline()]))
        assert b'"BOOKMARK"' in first
        stream.close()
    finally:
        cluster.bookmark_interval = 5.0


def test_aio_client_watch_and_crud(cluster: ApiServer) -> None:
    async def run() -> list[tuple[str, str]]:
        api = await aconfig.new_client_from_config_dict(cluster.kubeconfig())
        async with api:
            core = aclient.CoreV1Api(api)
            await core.create_namespace({"metadata": {"name": "aio"}})
            rv = (await core.list_namespaced_config_map("aio")).metadata.resource_version
            for n in range(3):
                await core.create_namespaced_config_map("aio", _cm(f"a{n}"))
            got: list[tuple[str, str]] = []
            w = awatch.Watch()
            async with w.stream(
                core.list_namespaced_config_map, "aio", resource_version=rv, timeout_seconds=5
            ) as stream:
                async for event in stream:
                    got.append((event["type"], event["object"].metadata.name))
                    if len(got) == 3:
                        break
            with pytest.raises(aclient.ApiException) as err:
                await core.read_namespaced_config_map("missing", "aio")
            assert err.value.status == 404
            dyn = await adynamic.DynamicClient(api)
            cms = await dyn.resources.get(api_version="v1", kind="ConfigMap")
            listed = await cms.get(namespace="aio")
            assert {"a0", "a1", "a2"} <= {i.metadata.name for i in listed.items}
            return got

    assert asyncio.run(run()) == [("ADDED", "a0"), ("ADDED", "a1"), ("ADDED", "a2")]


def test_send_initial_events_ends_with_a_bookmark(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "w3"}})
    core.create_namespaced_config_map("w3", _cm("one"))
    kinds: list[tuple[str, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_config_map,
        "w3",
        send_initial_events=True,
        allow_watch_bookmarks=True,
        resource_version_match="NotOlderThan",
        resource_version="",
        timeout_seconds=5,
    ):
        meta = event["raw_object"]["metadata"]
        kinds.append(
            (
                event["type"],
                meta.get("name")
                or (meta.get("annotations") or {}).get("k8s.io/initial-events-end", ""),
            )
        )
        if event["type"] == "BOOKMARK":
            break
    assert ("ADDED", "one") in kinds and kinds[-1] == ("BOOKMARK", "true")
