"""Giving freed memory back to the operating system.

A service's Python heap peaks while it parses a large answer (a botocore service model, a
Kubernetes list of a thousand nodes) and falls back when the answer is dropped, but glibc's
allocator keeps the freed pages: the process's resident memory stays at its peaks. `malloc_trim`
(glibc, https://man7.org/linux/man-pages/man3/malloc_trim.3.html) returns the free memory at the
top of the heap and in every arena's free chunks to the system. Measured on cluster-svc after
five cluster creations: 240 MB resident without it, 161 MB with it every few seconds.

A service's threads (the blocking SDK calls' pool, a capacity watch's two streams per cluster)
each get a glibc arena of their own, up to eight per core, and each arena keeps its own free
memory and fragments: `limit_arenas` caps them (mallopt M_ARENA_MAX,
https://man7.org/linux/man-pages/man3/mallopt.3.html). Measured on cluster-svc with 50 live
clusters: 286 MB resident when idle and 415 MB with every cluster's capacity watched, at glibc's
default; 185 and 315 with two arenas (docs/performance.md).

Elsewhere than glibc (musl, macOS) there is neither: `trimmer` answers None and `limit_arenas`
False.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import json
from collections.abc import Callable
from typing import Any

from shared.logging import get_logger


def compact_json(value: Any) -> bytes:
    """`value` as compact JSON, to hold a parsed value a process reads seldom in a fraction of
    its dicts' memory (botocore's shapes, a daemon pod of the capacity watch). json, not
    orjson: an orjson bytes object keeps the capacity of its 4 KB write buffer (1,000 small
    `orjson.dumps` results trace to 4.1 MB)."""
    return json.dumps(value, separators=(",", ":")).encode()


log = get_logger("shared.memory")


M_ARENA_MAX = -8  # glibc's malloc.h


def _libc_function(name: str) -> Any:
    """A function of the C library, or None where it has none (not glibc)."""
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    try:
        return getattr(ctypes.CDLL(library), name)
    except (OSError, AttributeError):
        return None


def limit_arenas(count: int) -> bool:
    """At most `count` malloc arenas for the process's threads (0: glibc's default, eight per
    core). Takes effect for the arenas made after it: called before the process starts its
    threads. False where the C library has no `mallopt` or refuses."""
    mallopt = _libc_function("mallopt")
    if mallopt is None or count <= 0:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, count))


def trimmer() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    trim = _libc_function("malloc_trim")
    if trim is None:
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
