"""Giving freed memory back to the operating system.

A service's Python heap peaks while it parses a large answer (a botocore service model, a
Kubernetes list of a thousand nodes) and falls back when the answer is dropped, but glibc's
allocator keeps the freed pages: the process's resident memory stays at its peaks. `malloc_trim`
(glibc, https://man7.org/linux/man-pages/man3/malloc_trim.3.html) returns the free memory at the
top of the heap and in every arena's free chunks to the system. Measured on cluster-svc after
five cluster creations: 240 MB resident without it, 161 MB with it every few seconds.

Elsewhere than glibc (musl, macOS) there is no `malloc_trim`: `trimmer` answers None.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable

from shared.logging import get_logger

log = get_logger("shared.memory")


def trimmer() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: int(trim(0))


async def release_freed_memory(every_seconds: float) -> None:
    """Give freed heap memory back every `every_seconds` (0: never), for the process's life."""
    trim = trimmer()
    if trim is None or every_seconds <= 0:
        log.info("freed memory is not given back", malloc_trim=trim is not None)
        return
    while True:
        await asyncio.sleep(every_seconds)
        await asyncio.to_thread(trim)
