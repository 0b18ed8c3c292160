"""Page tokens of the REST lists (and the MCP tools that page them): opaque to a client, the sort
key of the last item of the page before. A list reads the rows after that key (keyset, not
OFFSET), so an insert or a delete between two pages neither repeats nor skips a row.

A token is base64url of the JSON array `[list, *key]`: the list it belongs to is part of it, so
a token of one list given to another is refused rather than read as a key it is not.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import datetime

# The longest token accepted: a key of a timestamp and two names of at most 253 characters.
MAX_TOKEN = 800


class BadPageToken(ValueError):
    """A page token this list did not answer (or that was altered)."""


def encode(kind: str, key: Sequence[str]) -> str:
    """The token of the page after the item whose sort key is `key`."""
    raw = json.dumps([kind, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(kind: str, token: str, size: int) -> tuple[str, ...]:
    """The sort key a token of list `kind` names, of `size` strings; BadPageToken otherwise."""
    if len(token) > MAX_TOKEN:
        raise BadPageToken(f"longer than {MAX_TOKEN} characters")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        raise BadPageToken("not a page token") from None
    if (
        not isinstance(value, list)
        or len(value) != size + 1
        or not all(isinstance(part, str) for part in value)
    ):
        raise BadPageToken("not a page token")
    if value[0] != kind:
        raise BadPageToken(f"a token of the {value[0]} list, not of the {kind} list")
    return tuple(value[1:])


def instant(text: str) -> datetime:
    """A timestamp of a key, as `datetime.isoformat` wrote it; BadPageToken otherwise."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise BadPageToken("not a page token") from None
    if found.tzinfo is None:
        raise BadPageToken("not a page token")
    return found
