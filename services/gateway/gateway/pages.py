"""Cursor pages of the REST lists (clusters, jobs, endpoints, operations, teams, tokens,
buckets, spaces, dependencies, instance groups): `limit` and `page_token` in the query; the body
stays what it was (the JSON array of the page; for teams and operations the object, its list
holding the page), and two headers say what is left: `X-Next-Page-Token` (absent on the last
page) and `X-Total-Count` (the items of the whole list).

A list kept in PostgreSQL reads its page by keyset (gateway/keyset.py); a list read live (teams
from SageMaker, spaces from Kubernetes) is read whole, then paged here by a stable sort key
(`send_read`) with the same tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import Query, Response

from gateway.errors import ApiError
from gateway.routes.models import ErrorBody
from shared import pages
from shared.pages import BadPageToken

T = TypeVar("T")

NEXT_HEADER = "X-Next-Page-Token"
TOTAL_HEADER = "X-Total-Count"
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

PageLimit = Annotated[
    int,
    Query(ge=1, le=MAX_LIMIT, description=f"Items per page (1 to {MAX_LIMIT})"),
]
PageToken = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=pages.MAX_TOKEN,
        pattern=r"^[A-Za-z0-9_-]+$",
        description=f"The page after this one: the {NEXT_HEADER} header of the page before",
    ),
]

PAGE_HEADERS: dict[str, Any] = {
    NEXT_HEADER: {
        "description": "page_token of the next page; absent on the last page",
        "schema": {"type": "string"},
    },
    TOTAL_HEADER: {
        "description": "Items in the whole list",
        "schema": {"type": "integer", "minimum": 0},
    },
}

# The 400 a list answers for a page token it did not give.
BAD_TOKEN: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "page_token is not a token of this list"},
}


def paged(model: Any = None) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` of a paged list: the 200 (its body's model, when given, and the page
    headers) and the 400 of a bad page token."""
    ok: dict[str, Any] = {"description": "A page of the list", "headers": PAGE_HEADERS}
    if model is not None:
        ok["model"] = model
    return {200: ok}


def refused(exc: BadPageToken) -> ApiError:
    hint = f"send the {NEXT_HEADER} header of the page before, or leave page_token out"
    return ApiError(
        400,
        "invalid_page_token",
        f"page_token: {exc}",
        hint=hint,
        fields=[{"field": "page_token", "rule": "page_token", "message": str(exc), "hint": hint}],
    )


def key_of(kind: str, token: str | None, size: int) -> tuple[str, ...] | None:
    """The sort key a page token names (None: the first page); 400 naming page_token if the
    token is not one this list gave."""
    if token is None:
        return None
    try:
        return pages.decode(kind, token, size)
    except BadPageToken as exc:
        raise refused(exc) from None


def instant(text: str) -> datetime:
    """A key's timestamp; 400 naming page_token if it is not one."""
    try:
        return pages.instant(text)
    except BadPageToken as exc:
        raise refused(exc) from None


def send(
    response: Response,
    kind: str,
    rows: Sequence[Any],
    limit: int,
    total: int,
    key: Callable[[Any], Sequence[str]],
) -> list[Any]:
    """The page of `rows` (read with LIMIT limit + 1) with its headers set on `response`."""
    page = list(rows[:limit])
    response.headers[TOTAL_HEADER] = str(total)
    if len(rows) > limit:
        response.headers[NEXT_HEADER] = pages.encode(kind, key(page[-1]))
    return page


def send_read(
    response: Response,
    kind: str,
    items: Sequence[T],
    limit: int,
    page_token: str | None,
    key: Callable[[T], tuple[str, ...]],
    size: int = 1,
) -> list[T]:
    """The page of a list read whole (live from AWS or Kubernetes, not a table): the items in
    `key` order (`size` strings, unique in the list) after the one `page_token` names, at most
    `limit`, with the headers set on `response`; 400 naming page_token for a token of another
    list. An item added or gone between two pages neither repeats nor skips another."""
    after = key_of(kind, page_token, size)
    ordered = sorted(items, key=key)
    rest = [item for item in ordered if after is None or key(item) > after]
    return send(response, kind, rest[: limit + 1], limit, len(items), key)
