"""GPU and EFA metrics of a cluster (the observability feature's exporters), read-only: what the
diagnostic skills read for XID errors, EFA errors and GPU-utilization stalls."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import ToolResult
from mcp_svc.tools.common import ClusterRef
from shared.boundary import api_path
from shared.contracts.metrics import DURATION_PATTERN
from shared.promql import MAX_QUERY

MAX_SERIES = 40
MAX_POINTS = 30  # the newest points of a range kept per series
# labels every series carries that tell an agent nothing new
DROPPED = frozenset({"cluster", "job", "instance", "UUID", "device", "modelName"})


class Series(BaseModel):
    labels: dict[str, str] = Field(description="The series' labels (metric name as __name__)")
    value: float | None = Field(None, description="Instant query: the value")
    values: list[float] | None = Field(None, description="Range query: oldest first")


class MetricsResult(ToolResult):
    cluster: str = Field(description="The cluster read")
    query: str = Field(description="The query answered")
    series: list[Series] = Field(description="At most 40; narrow the query for the rest")
    total: int = Field(description="Series matched in all")


def _series(row: dict[str, Any]) -> Series:
    labels = {k: str(v) for k, v in row["metric"].items() if k not in DROPPED}
    if "value" in row:
        value = float(row["value"][1])
        return Series(labels=labels, value=value)
    return Series(labels=labels, values=[float(v) for _, v in row["values"]][-MAX_POINTS:])


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="metrics", rest="GET /api/v1/clusters/{name}/metrics/query")
    async def query_metrics(
        cluster: ClusterRef,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY,
                description="PromQL-lite, e.g. DCGM_FI_DEV_XID_ERRORS > 0",
            ),
        ],
        window: Annotated[
            str | None,
            Field(pattern=DURATION_PATTERN, description="A range: the last 15m, say"),
        ] = None,
        step: Annotated[str | None, Field(pattern=DURATION_PATTERN, description="e.g. 30s")] = None,
    ) -> MetricsResult:
        """GPU (DCGM_FI_DEV_*) and EFA (node_amazonefa_*) metrics of a cluster, now or over a
        window (the observability feature)."""
        raw = await gateway.get(
            api_path("clusters", cluster, "metrics", "query"),
            {"query": query, "window": window, "step": step},
        )
        rows = raw["data"]["result"]
        series = [_series(r) for r in rows[:MAX_SERIES]]
        summary = f"{cluster}: {len(rows)} series for {query}"
        if len(rows) > MAX_SERIES:
            summary += f"; the first {MAX_SERIES} shown: narrow the query (by Hostname, pod)"
        return MetricsResult(
            summary=summary, cluster=cluster, query=query, series=series, total=len(rows)
        )
