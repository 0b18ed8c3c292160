"""Managed features of a cluster: training operator, inference operator, tiered checkpointing,
managed autoscaling, spaces. Read live; change by explicit diff."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import OperationStarted, ToolResult
from mcp_svc.tools.common import ClusterRef, DryRun, RequestId, submit
from shared.boundary import api_path
from shared.contracts.features import FeaturesChange

FEATURES = (
    "training_operator",
    "inference_operator",
    "tiered_checkpointing",
    "autoscaling",
    "spaces",
    "observability",
    "container_insights",
)


class Features(ToolResult):
    cluster: str = Field(description="The cluster read")
    training_operator: dict[str, Any] | None = Field(
        None, description="Training operator: its actual state"
    )
    inference_operator: dict[str, Any] | None = Field(
        None, description="Inference operator: its actual state"
    )
    tiered_checkpointing: dict[str, Any] | None = Field(
        None, description="Tiered checkpointing: its actual state"
    )
    autoscaling: dict[str, Any] | None = Field(
        None, description="Managed autoscaling: its actual state"
    )
    spaces: dict[str, Any] | None = Field(None, description="Spaces add-on: its actual state")
    observability: dict[str, Any] | None = Field(
        None, description="Observability add-on, its Prometheus and Grafana workspaces"
    )
    container_insights: dict[str, Any] | None = Field(
        None, description="Container Insights add-on: its actual state"
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="features", rest="GET /api/v1/clusters/{name}/features")
    async def get_features(cluster: ClusterRef) -> Features:
        """Each managed feature's actual state, read live (training and inference operators, tiered
        checkpointing, managed autoscaling). Read it before changing any."""
        raw = await gateway.get(api_path("clusters", cluster, "features"))
        states = {
            name: ("on" if (raw.get(name) or {}).get("enabled") else "off") for name in FEATURES
        }
        summary = f"{cluster}: " + ", ".join(f"{n} {s}" for n, s in states.items()) + "."
        return Features(
            summary=summary, **{**{k: raw.get(k) for k in FEATURES}, "cluster": cluster}
        )

    @server.write_tool(
        area="features", rest="PATCH /api/v1/clusters/{name}/features", body_param="change"
    )
    async def update_features(
        cluster: ClusterRef,
        change: Annotated[
            FeaturesChange,
            Field(description='Only the features to change, e.g. {"training_operator": true}'),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Enable or disable managed features: send only what changes (unset means unchanged).
        Each is dependency-aware; what already matches actual state is left alone."""
        return await submit(
            gateway,
            tool="update_features",
            arguments={"cluster": cluster, "change": change, "request_id": request_id},
            method="PATCH",
            path=api_path("clusters", cluster, "features"),
            body=change.requested(),
            what=f"feature change on {cluster}",
            dry_run=dry_run,
        )
