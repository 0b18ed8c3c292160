"""The edge checks that need no stack: the rate limit's Retry-After, the JSON walk of the
storable-input check, the seq header, the METRICS_BIND setting."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from gateway.errors import ApiError
from gateway.limits import _in_json, _in_query, seq_text
from gateway.metrics import split_bind
from gateway.ratelimit import MutationRateLimiter
from shared.config import Settings
from shared.validation import RuleViolation


def test_a_rate_limited_mutation_carries_retry_after_in_seconds() -> None:
    limiter = MutationRateLimiter(per_minute=6, burst=1)
    limiter.check("alice", now=0.0)
    with pytest.raises(ApiError) as refused:
        limiter.check("alice", now=4.0)  # 0.4 of a token back: 6 s to the next
    assert refused.value.headers == {"Retry-After": "6"}
    assert refused.value.extra["retry_after_seconds"] == 6


def test_the_json_walk_names_every_field_that_cannot_be_stored_in_document_order() -> None:
    document = json.loads(
        '{"tags": {"team": "a\\u0000", "k\\u0000": "v", "ok": "\\\\u0000"},'
        ' "args": ["x", "\\ud800", "\\ud83d\\ude00"], "n": 99999999999999999999, "m": -5}'
    )
    found = [(f["field"], f["rule"]) for f in _in_json(document)]
    assert found == [
        ("tags.team", "no_nul"),
        ("tags", "no_nul"),
        ("args.1", "no_lone_surrogate"),
        ("n", "int64_range"),
    ]
    assert _in_json(json.loads("[" * 900 + "]" * 900)) == []  # deep, walked without recursion


def test_the_query_check_names_the_parameter() -> None:
    assert _in_query(b"limit=5&principal=a%00b") == [
        {
            "field": "query.principal",
            "rule": "no_nul",
            "message": "contains the NUL character (\\u0000), which cannot be stored",
            "hint": "remove the NUL character (\\u0000)",
        }
    ]
    assert _in_query(b"a%00=1")[0]["field"] == "query"
    assert _in_query(b"principal=ab%2500") == []  # an escaped percent sign, not a NUL


@pytest.mark.parametrize("value", ["0", "42", str(2**63 - 1), None])
def test_a_seq_header_within_a_bigint_passes(value: str | None) -> None:
    assert seq_text(value) == value


@pytest.mark.parametrize("value", [str(2**63), "-1", "1.5", "\u00b2", "", "12 "])
def test_a_seq_header_beyond_a_bigint_or_not_digits_is_refused(value: str) -> None:
    with pytest.raises(RuleViolation):
        seq_text(value)


def test_metrics_bind_is_host_and_port() -> None:
    assert Settings(metrics_bind="127.0.0.1:9464").metrics_bind == "127.0.0.1:9464"
    assert Settings(metrics_bind="").metrics_bind is None
    assert split_bind("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert split_bind("[::1]:9464") == ("::1", 9464)
    for bad in ("9464", "localhost:", "host:99999", "host:port"):
        with pytest.raises(ValidationError):
            Settings(metrics_bind=bad)
