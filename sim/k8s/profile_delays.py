"""Delays of simulated work, named by TimeProfile fields so one profile drives the whole world."""

from __future__ import annotations

from collections.abc import Callable

from sim.profile import TimeProfile

Delay = float | str | Callable[[TimeProfile], float]


def seconds(delay: Delay, profile: TimeProfile) -> float:
    """A number is seconds; a string names a profile field (`"pod_schedule"`); a callable computes."""
    if isinstance(delay, str):
        return float(getattr(profile, delay))
    if callable(delay):
        return float(delay(profile))
    return float(delay)
