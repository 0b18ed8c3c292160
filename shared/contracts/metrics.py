"""Contract of the metrics read (`GET /api/v1/clusters/{name}/metrics/query`, the MCP tool
`query_metrics`, `hyperpilot metrics query`): a PromQL-lite query (shared.promql) at an instant
or over a range, always of one cluster's series."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from shared.contracts.spec import Spec
from shared.promql import MAX_POINTS, MAX_QUERY, Expr, Matcher, QueryError, duration, selectors
from shared.validation import RuleViolation

CLUSTER_LABEL = "cluster"  # every scraped series carries its cluster's name
OBSERVABILITY_NAMESPACE = "hyperpod-observability"
# (the exporter DaemonSet's app.kubernetes.io/name, its port, the job label of its series)
EXPORTERS = (("dcgm-exporter", 9400), ("efa-exporter", 9109))
DURATION_PATTERN = r"^\d{1,6}(s|m|h)$"
MAX_WINDOW = 6 * 3600.0  # seconds a range may span (what the in-process store keeps)


class MetricsQuery(Spec):
    cluster: str
    query: str = Field(min_length=1, max_length=MAX_QUERY, description="PromQL-lite")
    time: float | None = Field(None, ge=0, description="instant query at (unix s); default now")
    window: str | None = Field(
        None, pattern=DURATION_PATTERN, description="range query over the last window, e.g. 15m"
    )
    start: float | None = Field(None, ge=0, description="range start (unix s)")
    end: float | None = Field(None, ge=0, description="range end (unix s)")
    step: str | None = Field(
        None, pattern=DURATION_PATTERN, description="range step, e.g. 15s; default window/60"
    )

    @model_validator(mode="after")
    def _shape(self) -> Self:
        ranged = self.window is not None or self.start is not None or self.end is not None
        if self.window is not None and (self.start is not None or self.end is not None):
            raise RuleViolation(
                "window and start/end both name the range", "send window, or start and end"
            )
        if (self.start is None) != (self.end is None) and self.window is None:
            raise RuleViolation("a range needs both start and end", "send both, or window")
        if ranged and self.time is not None:
            raise RuleViolation(
                "time is an instant query's; the request also names a range",
                "drop time, or drop the range",
            )
        if self.step is not None and not ranged:
            raise RuleViolation("step applies to a range query", "send window (or start/end)")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise RuleViolation("end is before start", "send start <= end")
        span = self.span()
        if span is not None and span > MAX_WINDOW:
            raise RuleViolation(
                f"the range spans {span:g}s; at most {MAX_WINDOW:g}s are kept",
                "narrow the range",
            )
        if span is not None and span / self.step_seconds(span) + 1 > MAX_POINTS:
            raise RuleViolation(
                f"the range at step {self.step} is more than {MAX_POINTS} points",
                "widen step",
            )
        return self

    def span(self) -> float | None:
        if self.window is not None:
            return duration(self.window)
        if self.start is not None and self.end is not None:
            return self.end - self.start
        return None

    def step_seconds(self, span: float) -> float:
        if self.step is not None:
            return max(duration(self.step), 1.0)
        return max(span / 60.0, 1.0)


def beyond_cluster(cluster: str, expr: Expr) -> Matcher | None:
    """A matcher on the `cluster` label other than `cluster="<this one>"`: one that could reach
    another cluster's series (a route reads only the cluster in its path)."""
    for selector in selectors(expr):
        for matcher in selector.matchers:
            if matcher.label == CLUSTER_LABEL and (matcher.op, matcher.value) != ("=", cluster):
                return matcher
    return None


__all__ = ["CLUSTER_LABEL", "EXPORTERS", "MetricsQuery", "QueryError", "beyond_cluster"]
