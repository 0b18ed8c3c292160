"""Pages of a pod's log by line number (pure).

Lines are numbered from 0 in the life of one pod instance (its uid). A reader asks for the lines
from its cursor; it gets at most `limit` lines (and `max_bytes`), the next cursor, and whether
more can come. A pod recreated under the same name (a restart of a training job) has a new uid:
a reader holding the old uid is told `restarted` and reads the new instance from line 0, so no
line is lost or repeated within an instance. A line still being written (no newline yet) is not
served until it is complete, unless the container has stopped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class LogPage:
    uid: str | None
    start: int  # the number of the first line served
    lines: list[str]
    next: int  # the cursor to ask with next time
    running: bool  # the pod may still write lines
    more: bool  # lines beyond this page are already there
    restarted: bool  # the reader's uid was an earlier instance of the pod

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def split_complete(text: str, running: bool) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    elif running:
        lines.pop()  # partial: served once its newline arrives
    return lines


def page(
    text: str,
    *,
    start: int,
    limit: int,
    tail: int | None = None,
    max_bytes: int,
    uid: str | None,
    known_uid: str | None,
    running: bool,
) -> LogPage:
    restarted = known_uid is not None and uid is not None and known_uid != uid
    if restarted:
        start = 0
    lines = split_complete(text, running)
    if tail is not None and not restarted:
        start = max(len(lines) - tail, 0)
    if start > len(lines):
        # The log shrank under the same uid (rotated): continue from its end.
        start = len(lines)
    chosen: list[str] = []
    size = 0
    for line in lines[start : start + limit]:
        size += len(line) + 1
        if chosen and size > max_bytes:
            break
        chosen.append(line)
    end = start + len(chosen)
    return LogPage(
        uid=uid,
        start=start,
        lines=chosen,
        next=end,
        running=running,
        more=end < len(lines),
        restarted=restarted,
    )
