"""Drift of storage claims and managed features: the pure comparison and the recorded state of
features folded from their events."""

from __future__ import annotations

from cluster_svc.domain.drift import (
    Actual,
    ActualClaim,
    Difference,
    Recorded,
    RecordedClaim,
    differences,
    recorded_features,
)


def _recorded(**extra: object) -> Recorded:
    return Recorded(cluster="c", hyperpod_cluster="c", groups={}, components={}, **extra)  # type: ignore[arg-type]


def test_a_claim_whose_pvc_pv_or_source_is_gone_differs_by_field() -> None:
    recorded = _recorded(
        claims={
            "data": RecordedClaim("data", "s3", "existing", bucket="b", volume="pv-data"),
            "l": RecordedClaim("l", "fsx", "existing", file_system_id="fs-1", volume="pv-l"),
            "ok": RecordedClaim("ok", "s3", "default", bucket="own", volume="pv-ok"),
        }
    )
    actual = Actual(
        "InService",
        {},
        claims={
            "data": ActualClaim(False, True, False),
            "l": ActualClaim(True, False, False),
            "ok": ActualClaim(True, True, True),
        },
    )
    assert differences(recorded, actual) == {
        "storage.data.claim": Difference("present", "absent"),
        "storage.data.bucket": Difference("b", "absent"),
        "storage.l.volume": Difference("pv-l", "absent"),
        "storage.l.file_system": Difference("fs-1", "absent"),
    }
    assert differences(recorded, Actual("InService", {}, claims=None)) == {}  # not read


def test_features_are_recorded_from_their_updates_and_accepted_drift() -> None:
    updates = [
        {"tiered_checkpointing.enabled": {"actual": False, "requested": True}},
        {"autoscaling.enabled": {"actual": False, "requested": True}, "hami": {"requested": True}},
        {"autoscaling.enabled": {"actual": True, "requested": False}},
    ]
    assert recorded_features(updates, []) == {"tiered_checkpointing": True, "autoscaling": False}
    assert recorded_features(updates, ["tiered_checkpointing"])["tiered_checkpointing"] is False
    on = _recorded(features={"tiered_checkpointing": True, "spaces": True, "autoscaling": False})
    found = differences(
        on, Actual("InService", {}, features={"tiered_checkpointing": False, "spaces": True})
    )
    assert found == {"features.tiered_checkpointing.role": Difference("present", "absent")}
