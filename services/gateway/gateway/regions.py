"""The region a request is about: one this control plane serves (the default if none named)."""

from __future__ import annotations

from fastapi import Request

from gateway.errors import field_error
from shared.regions import check_served
from shared.validation import RuleViolation


def served_region(request: Request, region: str | None, field: str = "region") -> str:
    """`region`, or the default region; a 422 naming the served regions if not served."""
    served: tuple[str, ...] = request.app.state.settings.served_regions
    try:
        return check_served(region, served)
    except RuleViolation as exc:
        raise field_error(field, "region_served", str(exc), exc.hint) from exc
