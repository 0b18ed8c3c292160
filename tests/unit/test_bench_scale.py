"""The scale bench's pure arithmetic: memory growth per cluster and calls per cluster-hour."""

from __future__ import annotations

import pytest

from bench.scale import growth_per_cluster, per_cluster_hour


def test_growth_per_cluster_is_the_least_squares_slope() -> None:
    assert growth_per_cluster({10: 100.0, 25: 115.0, 49: 139.0}) == pytest.approx(1.0)
    # noise around 0.5 MB per cluster: the fit, not the last two points' difference
    slope = growth_per_cluster({10: 200.0, 25: 209.0, 49: 219.0})
    assert slope == pytest.approx(372 / 774)
    assert growth_per_cluster({10: 90.0, 49: 90.0}) == 0.0


def test_growth_needs_two_cluster_counts() -> None:
    with pytest.raises(ValueError):
        growth_per_cluster({10: 100.0})
    with pytest.raises(ValueError):
        growth_per_cluster({})


def test_calls_per_cluster_hour() -> None:
    # 50 clusters, 300 s, 250 calls: 5 calls a cluster in 5 minutes, 60 an hour
    assert per_cluster_hour(250, 50, 300.0) == pytest.approx(60.0)
    assert per_cluster_hour(0, 50, 300.0) == 0.0
