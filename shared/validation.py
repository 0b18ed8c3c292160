"""A rule violation carries the fix, so every face can say what to do instead."""

from __future__ import annotations


class RuleViolation(ValueError):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint
