"""The regions one control plane serves, and the region an AWS call goes to.

A control plane manages clusters in several regions of one account. The served regions are a
setting (`HYPERPILOT_AWS_REGIONS=us-east-1,us-west-2`, the first being the default), read
through `served_regions`, the one validated constructor; a request naming a region is checked
against them with `check_served`.

A command or query about a cluster names the cluster's region; the service running it scopes
its AWS clients to that region with `region_scope`, so every AWS call of the command's stages
(and of the threads they start) goes to that region (`scoped_region`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

from shared.validation import RuleViolation

# An AWS Region code: us-east-1, ap-southeast-2, us-gov-west-1, eu-central-2.
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d$"
_REGION = re.compile(REGION_PATTERN)

_scoped: ContextVar[str | None] = ContextVar("hyperpilot_aws_region", default=None)


def served_regions(text: str | None, default: str) -> tuple[str, ...]:
    """The served regions from a comma-separated list (`default` alone when unset); the
    first is the default region. Raises RuleViolation naming the bad entry."""
    if text is None or not text.strip():
        entries = [default]
    else:
        entries = [part.strip() for part in text.split(",")]
    regions: list[str] = []
    for entry in entries:
        if not _REGION.match(entry):
            raise RuleViolation(
                f"HYPERPILOT_AWS_REGIONS: {entry!r} is not an AWS Region code",
                "list region codes separated by commas, e.g. us-east-1,us-west-2",
            )
        if entry in regions:
            raise RuleViolation(
                f"HYPERPILOT_AWS_REGIONS: {entry} is listed twice",
                "list each served region once",
            )
        regions.append(entry)
    return tuple(regions)


def served_words(served: tuple[str, ...]) -> str:
    """`us-east-1`, `us-east-1 and us-west-2`, `a, b and c`."""
    if len(served) <= 1:
        return "".join(served)
    return ", ".join(served[:-1]) + " and " + served[-1]


def check_served(region: str | None, served: tuple[str, ...]) -> str:
    """`region` if this control plane serves it (the default region if None); else a
    RuleViolation naming the served regions."""
    if region is None:
        return served[0]
    if region not in served:
        raise RuleViolation(
            f"region {region} is not served by this control plane"
            f" (it serves {served_words(served)})",
            f"use one of {served_words(served)}, or add {region} to HYPERPILOT_AWS_REGIONS",
        )
    return region


def scoped_region() -> str | None:
    """The region the running command or query is about, if it names one."""
    return _scoped.get()


@contextlib.contextmanager
def region_scope(region: object) -> Iterator[None]:
    """AWS calls made inside go to `region` (a region code; anything else leaves the scope)."""
    if not isinstance(region, str) or not _REGION.match(region):
        yield
        return
    token = _scoped.set(region)
    try:
        yield
    finally:
        _scoped.reset(token)
