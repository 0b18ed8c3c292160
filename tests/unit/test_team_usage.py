"""A team's usage as the teams read shows it (pure): from its Kueue ClusterQueue, per instance
type and accelerator resource, its quota, what it uses, what of that is borrowed, and its idle
quota others may borrow; cpu and memory and resources it neither has nor uses are left out."""

from __future__ import annotations

from cluster_svc.domain.governance.pending import team_usage
from tests.unit.test_governance import P5, _queue


def test_usage_quota_borrowed_and_idle_per_team() -> None:
    lender = _queue("team-b", 8, 2, 0)
    borrower = _queue("team-a", 8, 12, 8, borrowed=4)
    empty = _queue("team-c", 0, 0, 0)
    assert team_usage([lender, borrower, empty]) == {
        "team-b": [
            {
                "instance_type": P5,
                "resource": "nvidia.com/gpu",
                "quota": 8.0,
                "used": 2.0,
                "borrowed": 0.0,
                "idle": 6.0,
            }
        ],
        "team-a": [
            {
                "instance_type": P5,
                "resource": "nvidia.com/gpu",
                "quota": 8.0,
                "used": 12.0,
                "borrowed": 4.0,
                "idle": 0.0,
            }
        ],
        "team-c": [],
    }
