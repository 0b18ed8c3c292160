"""`hyperpilot metrics`: a cluster's GPU (DCGM) and EFA metrics, PromQL-lite, now or over a
window; a range prints one sparkline per series. Reads only: a viewer token is enough."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hyperpilot.commands.common import Area, Cluster, Output, active_cluster, client, examples, fmt
from hyperpilot.output import Column, emit, table
from shared.boundary import api_path

app = Area("metrics", "GPU (DCGM) and EFA metrics of a cluster: instant values and sparklines.")

BARS = "▁▂▃▄▅▆▇█"
# labels every series carries that say nothing new on a terminal
QUIET = frozenset({"cluster", "job", "instance", "UUID", "device", "modelName", "__name__"})


def sparkline(values: list[float]) -> str:
    """One bar per value, scaled between the series' lowest and highest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(
        BARS[0] if span == 0 else BARS[round((v - low) / span * (len(BARS) - 1))] for v in values
    )


def _labels(metric: dict[str, Any]) -> str:
    shown = {k: v for k, v in metric.items() if k not in QUIET}
    name = metric.get("__name__")
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(shown.items()))
    return f"{name or ''}{{{inner}}}" if inner or not name else str(name)


def render(answer: dict[str, Any]) -> Any:
    data = answer["data"]
    rows = data["result"]
    if not rows:
        return "(no series)"
    if data["resultType"] == "vector":
        return table(
            [{"series": _labels(r["metric"]), "value": r["value"][1]} for r in rows],
            [Column("SERIES", "series"), Column("VALUE", "value")],
        )
    lines = []
    for row in rows:
        values = [float(v) for _, v in row["values"]]
        last = f"{values[-1]:g}" if values else "-"
        lines.append(f"{_labels(row['metric'])}  {sparkline(values)}  last {last}")
    return "\n".join(lines)


@app.command(
    epilog=examples(
        "hyperpilot metrics query 'avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)' --window 15m",
        "hyperpilot metrics query 'DCGM_FI_DEV_XID_ERRORS > 0'",
        "hyperpilot metrics query 'rate(node_amazonefa_tx_bytes[1m])' -w 10m --step 30s",
    )
)
def query(
    expression: Annotated[str, typer.Argument(help="PromQL-lite, e.g. DCGM_FI_DEV_GPU_UTIL")],
    cluster: Cluster = None,
    window: Annotated[
        str | None,
        typer.Option("--window", "-w", help="A range over the last window (15m): sparklines"),
    ] = None,
    step: Annotated[str | None, typer.Option(help="The range's step, e.g. 15s")] = None,
    output: Output = None,
) -> None:
    """Query the cluster's metrics: the values now, or a sparkline per series over a window.

    Needs the observability feature (hyperpilot features set --observability).
    """
    with client() as api:
        answer = api.get(
            api_path("clusters", active_cluster(api, cluster), "metrics", "query"),
            query=expression,
            window=window,
            step=step,
        )
    emit(answer, fmt(output), render)
