"""Capacity now: free GPUs per cluster, group and node, pending pods and list price per hour."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import Passthrough, ToolResult
from mcp_svc.tools.common import ClusterRef, count
from shared.boundary import api_path


class Capacity(ToolResult):
    capacity: Passthrough = Field(description="As REST answers it (docs/capacity.md)")


def _gpus(resources: dict[str, Any]) -> str:
    gpus = resources.get("gpus") or {}
    return f"{gpus.get('free', 0)} of {gpus.get('total', 0)} GPUs free"


def _price(raw: dict[str, Any]) -> str:
    prices = raw.get("prices") or {}
    return f"${raw.get('cost_per_hour', 0):,.2f}/h list price ({prices.get('as_of')})"


def cluster_summary(raw: dict[str, Any]) -> str:
    nodes = raw.get("nodes") or []
    total = raw.get("node_total")
    total = len(nodes) if total is None else int(total)
    blocked = [n["name"] for n in nodes if not n.get("schedulable")]
    pending = raw.get("pending") or []
    groups = "; ".join(f"{g['name']}: {_gpus(g['resources'])}" for g in raw.get("groups") or [])
    more = raw.get("next_after")
    return (
        f"{raw.get('cluster')}: {_gpus(raw.get('resources') or {})} on {count(total, 'node')}"
        + (f" ({groups})" if groups else "")
        + (f"; not schedulable: {', '.join(blocked[:10])}" if blocked else "")
        + f"; {count(len(pending), 'pod')} pending"
        + f" asking {sum(p.get('gpus', 0) for p in pending)} GPUs; {_price(raw)}"
        + (f"; {len(nodes)} nodes listed, after='{more}' for the next." if more else ".")
    )


def fleet_summary(raw: dict[str, Any]) -> str:
    clusters = raw.get("clusters") or []
    unreadable = [c["cluster"] for c in clusters if not c.get("readable")]
    return (
        f"{count(len(clusters), 'cluster')}: {_gpus(raw.get('resources') or {})}"
        + f"; {count(int(raw.get('pending_pods', 0)), 'pod')} pending; {_price(raw)}"
        + (f"; unreadable: {', '.join(unreadable)}." if unreadable else ".")
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="capacity", rest="GET /api/v1/clusters/{name}/capacity")
    async def get_capacity(
        cluster: ClusterRef,
        after: Annotated[
            str | None, Field(max_length=320, description="next_after of the page before")
        ] = None,
    ) -> Capacity:
        """GPUs, EFA and memory total/allocated/free per instance group and node (100 a page),
        nodes taking no pods, pending pods with their asks, list price per hour."""
        raw = await gateway.get(api_path("clusters", cluster, "capacity"), {"after": after})
        return Capacity(summary=cluster_summary(raw), capacity=Passthrough.model_validate(raw))

    @server.read_tool(area="capacity", rest="GET /api/v1/capacity")
    async def get_fleet_capacity() -> Capacity:
        """Capacity and list price per hour of every cluster, and in all."""
        raw = await gateway.get(api_path("capacity"))
        return Capacity(summary=fleet_summary(raw), capacity=Passthrough.model_validate(raw))
