"""Naming rules AWS enforces, checked once for REST, MCP, the UI and the services alike."""

from __future__ import annotations

import ipaddress
import re

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_DIGITS_AND_DOTS = re.compile(r"^[0-9.]+$")


def _looks_like_ipv4(name: str) -> bool:
    # A bucket name has no ':', so only the dotted IPv4 form applies.
    if not _DIGITS_AND_DOTS.match(name):
        return False
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


def bucket_name_problem(name: str) -> str | None:
    """Why `name` is not a valid S3 bucket name, or None when it is."""
    if not 3 <= len(name) <= 63:
        return "must be 3 to 63 characters long"
    if not _BUCKET.match(name):
        return "may contain only lowercase letters, digits, dots and hyphens, and must start and end with a letter or digit"
    if ".." in name or ".-" in name or "-." in name:
        return "must not contain two adjacent periods or a period next to a hyphen"
    if _looks_like_ipv4(name):
        return "must not be formatted as an IP address"
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if name.startswith(prefix):
            return f"must not start with {prefix!r}"
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"):
        if name.endswith(suffix):
            return f"must not end with {suffix!r}"
    return None


AWS_REGIONS = frozenset(
    {
        "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
        "eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-central-2", "eu-north-1",
        "eu-south-1", "eu-south-2", "ap-south-1", "ap-south-2", "ap-northeast-1", "ap-northeast-2",
        "ap-northeast-3", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
        "ap-east-1", "me-south-1", "me-central-1", "af-south-1", "il-central-1",
    }
)  # fmt: skip
