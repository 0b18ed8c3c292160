"""The drift comparison: recorded against actual, field by field, and the events between two
observations (level-triggered: the same difference twice is reported once)."""

from __future__ import annotations

from cluster_svc.domain.drift import (
    Actual,
    ActualComponent,
    ActualGroup,
    Difference,
    Recorded,
    RecordedGroup,
    differences,
    drift_changes,
    due,
)
from shared.contracts.drift import DriftDetected, DriftResolved

RECORDED = Recorded(
    cluster="c",
    hyperpod_cluster="c",
    groups={"gpu": RecordedGroup("gpu", "ml.g5.8xlarge", 1)},
    components={
        "keda": {"version": "2.17.2", "status": "installed"},
        "cert-manager": {"version": "v1.18.2-eksbuild.2", "status": "installed"},
        "kuberay-operator": {"version": "1.3.0", "status": "pending"},
    },
)
SAME = {
    "keda": ActualComponent("2.17.2", "ready"),
    "cert-manager": ActualComponent("v1.18.2-eksbuild.2", "ready"),
    "kuberay-operator": ActualComponent(None, "absent"),
}


def test_nothing_differs_when_actual_matches_the_record() -> None:
    actual = Actual("InService", {"gpu": ActualGroup("ml.g5.8xlarge", 1)}, SAME)
    assert differences(RECORDED, actual) == {}  # a pending component makes no claim yet


def test_each_difference_is_its_own_field() -> None:
    actual = Actual(
        "InService",
        {"gpu": ActualGroup("ml.g5.8xlarge", 3), "extra": ActualGroup("ml.g5.8xlarge", 2)},
        {
            **SAME,
            "keda": ActualComponent(None, "absent"),
            "cert-manager": ActualComponent("v1.17.2-eksbuild.1", "ready"),
        },
    )
    found = differences(RECORDED, actual)
    assert found["instance_groups.gpu.count"] == Difference(1, 3)
    assert found["instance_groups.extra.present"] == Difference(
        False, {"instance_type": "ml.g5.8xlarge", "count": 2}
    )
    assert found["components.keda"].actual == {"status": "absent"}
    assert found["components.cert-manager"].actual["version"] == "v1.17.2-eksbuild.1"
    assert set(found) == {
        "instance_groups.gpu.count",
        "instance_groups.extra.present",
        "components.keda",
        "components.cert-manager",
    }


def test_a_gone_hyperpod_cluster_and_unreadable_kubernetes() -> None:
    found = differences(RECORDED, Actual(None, None, None))
    assert found == {"hyperpod_cluster.status": Difference("InService", "absent")}


def test_events_between_observations_are_level_triggered() -> None:
    first = {"instance_groups.gpu.count": Difference(1, 3)}
    changes = drift_changes("c", {}, first)
    assert [type(e) for e in changes.events] == [DriftDetected]
    assert drift_changes("c", first, first).events == []  # seen again: nothing new
    moved = drift_changes("c", first, {"instance_groups.gpu.count": Difference(1, 4)})
    assert [e.actual for e in moved.events if isinstance(e, DriftDetected)] == [4]
    gone = drift_changes("c", first, {})
    assert [type(e) for e in gone.events] == [DriftResolved] and gone.resolved == [
        "instance_groups.gpu.count"
    ]


def test_the_call_budget_spaces_observations() -> None:
    # 6 calls an observation and 120 a cluster-hour: at most every 180 s, whatever the interval.
    assert due(None, 0, 1000.0, 1.0, 120.0)
    assert not due(1000.0, 6, 1100.0, 1.0, 120.0)
    assert due(1000.0, 6, 1180.0, 1.0, 120.0)
    assert not due(1000.0, 6, 1250.0, 300.0, 120.0)  # the interval, when it is longer
    assert due(1000.0, 6, 1300.0, 300.0, 120.0)
