"""Freed heap memory is given back (glibc's malloc_trim): measured here, not assumed."""

from __future__ import annotations

import asyncio

from shared.memory import release_freed_memory, trimmer


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        line = next(row for row in status if row.startswith("VmRSS"))
    return int(line.split()[1])


def test_freed_memory_goes_back_to_the_system() -> None:
    trim = trimmer()
    assert trim is not None  # the machines this runs on use glibc
    # many objects too large for Python's own allocator (over 512 bytes: glibc's heap), freed
    # at once, as a parsed answer is: glibc keeps them resident until trimmed
    held = [bytearray(600) for _ in range(130_000)]
    peak = _rss_kb()
    del held
    kept = _rss_kb()
    trim()
    trimmed = _rss_kb()
    assert kept > peak - 20_000, "glibc gave the memory back by itself: nothing to show"
    assert trimmed < kept - 40_000  # most of the ~80 MB is resident no longer


def test_a_period_of_zero_gives_nothing_back_and_returns() -> None:
    asyncio.run(asyncio.wait_for(release_freed_memory(0), timeout=1))
