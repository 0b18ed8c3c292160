"""Freed heap memory is given back (glibc's malloc_trim): measured here, not assumed."""

from __future__ import annotations

import asyncio
import subprocess
import sys

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


ARENAS = """
import ctypes, ctypes.util, sys, threading
from shared.memory import limit_arenas
limited = limit_arenas(int(sys.argv[1]))
held, ready = [], threading.Barrier(9)
def grow():
    held.append([bytearray(600) for _ in range(2000)])  # glibc's heap, from this thread
    ready.wait()  # every thread alive at once: none can reuse a finished one's arena
threads = [threading.Thread(target=grow) for _ in range(8)]
for t in threads:
    t.start()
ready.wait()
ctypes.CDLL(ctypes.util.find_library("c")).malloc_stats()  # one "Arena N:" per arena, stderr
for t in threads:
    t.join()
print(limited)
"""


def _arenas(limit: int) -> tuple[bool, int]:
    done = subprocess.run(
        [sys.executable, "-c", ARENAS, str(limit)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True", done.stderr.count("Arena ")


def test_threads_share_the_arenas_they_are_limited_to() -> None:
    limited, arenas = _arenas(2)
    assert limited
    assert arenas <= 2
    unlimited, default = _arenas(0)  # glibc's default: threads allocating at once spread out
    assert not unlimited
    assert default > 2
