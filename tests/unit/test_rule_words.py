"""Schema rules in words, shared by REST and MCP: what broke and what to send instead."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from shared.contracts.cluster import NAME_PATTERN
from shared.pattern_words import pattern_hint, schema_message
from shared.validation import bounds_hint, items_hint, length_hint, rule_message


class Pool(BaseModel):
    groups: list[str] = Field(min_length=1, max_length=2)
    name: str = Field("a", min_length=1, max_length=63)
    weight: int = Field(1, ge=1, le=100)


def _error(**body: object) -> dict[str, object]:
    with pytest.raises(ValidationError) as caught:
        Pool.model_validate(body)
    return dict(caught.value.errors()[0])


def test_an_empty_list_says_how_many_items_it_needs() -> None:
    err = _error(groups=[])
    assert rule_message(err) == "has 0 items; at least 1 is needed"
    assert items_hint(err["ctx"]) == "send at least 1 item"  # type: ignore[arg-type]


def test_a_long_list_says_how_many_are_allowed() -> None:
    err = _error(groups=["a", "b", "c"])
    assert rule_message(err) == "has 3 items; at most 2 are allowed"
    assert items_hint(err["ctx"]) == "send at most 2 items"  # type: ignore[arg-type]


def test_other_rules_keep_their_sentence_and_get_their_way_out() -> None:
    err = _error(groups=["a"], weight=0)
    assert rule_message(err) == "Input should be greater than or equal to 1"
    assert bounds_hint({"ge": 1, "le": 100}) == "use a number between 1 and 100"
    assert length_hint({"min_length": 1, "max_length": 63}) == "use 1 to 63 characters"
    assert rule_message({"type": "value_error", "msg": "Value error, no such group"}) == (
        "no such group"
    )


class Named(BaseModel):
    name: str = Field(pattern=NAME_PATTERN)
    other: str = Field("a", pattern=r"^[a-c]+$")


def test_a_name_pattern_is_said_in_words_and_an_unlisted_one_by_its_expression() -> None:
    with pytest.raises(ValidationError) as caught:
        Named.model_validate({"name": "-bad", "other": "z"})
    name, other = (dict(e) for e in caught.value.errors())
    assert schema_message(name) == "is not in the form this field takes"
    assert pattern_hint(name["ctx"]["pattern"]) == (  # type: ignore[index]
        "use 1 to 63 letters, digits and hyphens, starting and ending with a letter or digit"
    )
    assert schema_message(other) == "String should match pattern '^[a-c]+$'"
    assert pattern_hint(other["ctx"]["pattern"]) == "use a value matching ^[a-c]+$"  # type: ignore[index]
