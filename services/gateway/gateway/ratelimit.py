"""Per-principal rate limits on mutations: a token bucket per principal and gateway process."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from gateway.errors import ApiError


@dataclass
class _Bucket:
    tokens: float
    updated: float


class MutationRateLimiter:
    def __init__(self, per_minute: int, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}

    def check(self, principal: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        bucket = self._buckets.setdefault(principal, _Bucket(self.burst, now))
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens < 1.0:
            wait = math.ceil((1.0 - bucket.tokens) / self.rate) if self.rate > 0 else 60
            raise ApiError(
                429,
                "rate_limited",
                f"{principal} sent mutations faster than {self.rate * 60:.0f} per minute",
                hint=f"retry after {wait} s with the same Idempotency-Key",
                extra={"retry_after_seconds": wait},
                headers={"Retry-After": str(wait)},
            )
        bucket.tokens -= 1.0
