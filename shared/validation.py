"""A rule violation carries the fix, so every face can say what to do instead; the sentences
for the schema's rules (number bounds, lengths) are shared by every face that words them."""

from __future__ import annotations

from collections.abc import Mapping


class RuleViolation(ValueError):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def bounds_hint(ctx: Mapping[str, object]) -> str:
    """The way out of a number-bounds rule in words: "use a number between 1 and 6758"."""
    ge, le, gt, lt = (ctx.get(k) for k in ("ge", "le", "gt", "lt"))
    if ge is not None and le is not None:
        return f"use a number between {ge} and {le}"
    parts = [
        text
        for value, text in (
            (ge, f"{ge} or more"),
            (gt, f"greater than {gt}"),
            (le, f"{le} or less"),
            (lt, f"less than {lt}"),
        )
        if value is not None
    ]
    return f"use a number {' and '.join(parts)}" if parts else "use a number"


def length_hint(ctx: Mapping[str, object]) -> str:
    """The way out of a length rule in words: "use 1 to 63 characters"."""
    low, high = ctx.get("min_length"), ctx.get("max_length")
    if low is not None and high is not None:
        return f"use {low} to {high} characters"
    if high is not None:
        return f"use at most {high} characters"
    least = low if low is not None else 1
    return f"use at least {least} character{'' if least == 1 else 's'}"
