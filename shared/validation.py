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


def items_hint(ctx: Mapping[str, object]) -> str:
    """The way out of a list-length rule in words: "send at least 1 item"."""
    low, high, actual = ctx.get("min_length"), ctx.get("max_length"), ctx.get("actual_length")
    if high is not None and actual is not None and int(str(actual)) > int(str(high)):
        return f"send at most {high} item{'' if high == 1 else 's'}"
    least = low if low is not None else 1
    return f"send at least {least} item{'' if least == 1 else 's'}"


def items_message(ctx: Mapping[str, object]) -> str:
    """A list-length rule broken, in words: "has 0 items; at least 1 is needed"."""
    low, high, actual = ctx.get("min_length"), ctx.get("max_length"), ctx.get("actual_length")
    count = f"has {actual} item{'' if actual == 1 else 's'}" if actual is not None else "is empty"
    if high is not None and actual is not None and int(str(actual)) > int(str(high)):
        return f"{count}; at most {high} {'is' if high == 1 else 'are'} allowed"
    least = low if low is not None else 1
    return f"{count}; at least {least} {'is' if least == 1 else 'are'} needed"


def rule_message(err: Mapping[str, object]) -> str:
    """What a schema error says, as every face says it: pydantic's sentence, with a broken list
    length in words (pydantic's "List should have at least 1 item after validation, not 0")."""
    ctx = err.get("ctx")
    if err.get("type") in ("too_short", "too_long") and isinstance(ctx, Mapping):
        return items_message(ctx)
    return str(err.get("msg", "invalid")).removeprefix("Value error, ")
