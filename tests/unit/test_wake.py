"""Event-driven waits (shared/wake.py): which events wake which waits, and the wake-ups."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from moto.events.models import EventPattern

from shared.wake import (
    DETAIL_TYPES,
    EVENT_PATTERN,
    NODE_HEALTH,
    ClusterSignals,
    Wakes,
    covered_by_events,
    decode,
    encode,
    matches,
    node_health_clusters,
    region_of,
    wake_keys,
)

ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdefghijkl"


def _event(detail_type: str = DETAIL_TYPES[0], source: str = "aws.sagemaker") -> dict[str, Any]:
    return {
        "version": "0",
        "id": "0bd4a141-0a02-9d8a-f977-3924c3fb259c",
        "detail-type": detail_type,
        "source": source,
        "account": "123456789012",
        "time": "2026-12-01T00:00:00Z",
        "region": "us-east-1",
        "resources": [ARN],
        "detail": {"ClusterArn": ARN, "ClusterName": "c", "ClusterStatus": "InService"},
    }


def test_the_rule_pattern_matches_hyperpod_state_changes_as_eventbridge_does() -> None:
    pattern = EventPattern.load(json.dumps(EVENT_PATTERN))
    for detail_type in DETAIL_TYPES:
        assert pattern.matches_event(_event(detail_type))  # type: ignore[arg-type]
        assert matches(_event(detail_type))
    for other in (
        _event("SageMaker HyperPod Cluster Event"),
        _event("SageMaker Training Job State Change"),
        _event(DETAIL_TYPES[0], source="aws.eks"),
    ):
        assert not pattern.matches_event(other)  # type: ignore[arg-type]
        assert not matches(other)


def test_wake_keys_are_the_events_resources() -> None:
    assert wake_keys(json.dumps(_event())) == [ARN]
    only_detail = {**_event(), "resources": []}
    assert wake_keys(json.dumps(only_detail)) == [ARN]
    assert wake_keys(json.dumps(_event("SageMaker Endpoint State Change"))) == []
    assert wake_keys("not json") == []
    assert wake_keys("[1, 2]") == []


def test_only_hyperpod_cluster_waits_are_covered() -> None:
    assert covered_by_events(ARN)
    assert not covered_by_events("arn:aws:eks:us-east-1:123456789012:cluster/c")
    assert not covered_by_events("vpc-0123")


def test_the_wake_message_round_trips() -> None:
    assert decode(encode([ARN, "x"])) == [ARN, "x"]
    assert decode(b"{") == [] and decode(b'{"keys": 3}') == [] and decode(b"[]") == []


async def test_a_wake_ends_the_sleep_of_the_wait_on_its_key_only() -> None:
    wakes = Wakes()
    ours, theirs = wakes.arm(ARN), wakes.arm("other")
    sleeping = asyncio.create_task(wakes.sleep(ours, 30))
    await asyncio.sleep(0)
    assert wakes.wake([ARN]) == 1
    assert await asyncio.wait_for(sleeping, 2) is True
    assert not theirs.done()
    assert await wakes.sleep(theirs, 0.01) is False
    wakes.disarm("other", theirs)
    wakes.disarm(ARN, ours)
    assert wakes.wake([ARN, "other"]) == 0 and wakes.woken == 1


async def test_a_wake_during_the_poll_is_not_lost() -> None:
    wakes = Wakes()
    armed = wakes.arm(ARN)  # before the poll
    wakes.wake([ARN])  # the event arrives while the poll runs
    assert await asyncio.wait_for(wakes.sleep(armed, 30), 1) is True


def test_a_covered_wait_polls_less_often_only_while_events_flow() -> None:
    wakes = Wakes(evented_max=60)
    assert wakes.poll_max(ARN, 15) == 15
    wakes.covers = covered_by_events
    assert wakes.poll_max(ARN, 15) == 60
    assert wakes.poll_max("arn:aws:eks:us-east-1:123456789012:cluster/c", 15) == 15
    assert wakes.poll_max(ARN, 120) == 120


def _node_health(arn: str = ARN) -> dict[str, Any]:
    """A node health event as AWS documents it (automating-sagemaker-with-eventbridge.html)."""
    return {
        **_event(NODE_HEALTH),
        "resources": [arn],
        "detail": {
            "ClusterName": "c",
            "ClusterArn": arn,
            "InstanceId": "i-0123456789abcdef0",
            "Tags": {},
            "HealthSummary": {
                "HealthStatus": "Unhealthy",
                "HealthStatusReason": "HMA has detected fault type NvidiaErrorTerminate",
                "RepairAction": "None",
                "Recommendation": "Please Replace the Faulty Node.",
            },
        },
    }


def test_a_node_health_event_wakes_its_cluster_and_names_it_for_the_node_watcher() -> None:
    body = json.dumps(_node_health())
    assert wake_keys(body) == [ARN]
    assert node_health_clusters(body) == [ARN]
    only_detail = {**_node_health(), "resources": []}
    assert node_health_clusters(json.dumps(only_detail)) == [ARN]
    # a state change wakes the waits but is no node health news; other events are neither
    assert node_health_clusters(json.dumps(_event())) == []
    assert node_health_clusters(json.dumps({**_node_health(), "source": "aws.eks"})) == []
    assert node_health_clusters("{") == []
    not_a_cluster = _node_health("arn:aws:eks:us-east-1:123456789012:cluster/c")
    assert node_health_clusters(json.dumps(not_a_cluster)) == []


def test_coverage_is_by_the_region_whose_queue_is_read() -> None:
    west = ARN.replace("us-east-1", "us-west-2")
    assert region_of(west) == "us-west-2" and region_of("vpc-1") is None
    assert covered_by_events(ARN, {"us-east-1"}) and not covered_by_events(west, {"us-east-1"})
    assert not covered_by_events(ARN, set())
    signals = ClusterSignals()
    assert not signals.covers(ARN)
    signals.live.add("us-west-2")
    assert signals.covers(west) and not signals.covers(ARN)


async def test_cluster_signals_hand_over_every_cluster_named_once() -> None:
    signals = ClusterSignals()
    assert await signals.wait(0.01) == set()
    waiting = asyncio.create_task(signals.wait(30))
    await asyncio.sleep(0)
    signals.notify([ARN])
    signals.notify([ARN, "other"])
    assert await asyncio.wait_for(waiting, 2) == {ARN, "other"}  # taken together, once
    signals.notify([])
    assert await signals.wait(0.01) == set()
    signals.notify(["later"])
    assert await signals.wait(30) == {"later"}  # already there: no wait
