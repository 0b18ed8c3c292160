import pytest

from gateway.errors import ApiError
from gateway.ratelimit import MutationRateLimiter


def test_burst_then_refill_per_principal() -> None:
    limiter = MutationRateLimiter(per_minute=60, burst=3)
    for _ in range(3):
        limiter.check("alice", now=0.0)
    with pytest.raises(ApiError) as refused:
        limiter.check("alice", now=0.0)
    assert refused.value.status == 429 and refused.value.extra["retry_after_seconds"] == 1
    limiter.check("bob", now=0.0)  # another principal has its own bucket
    limiter.check("alice", now=1.0)  # one token back after a second at 60/min
