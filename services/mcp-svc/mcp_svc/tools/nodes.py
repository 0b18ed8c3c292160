"""Nodes: health (list, describe), reboot, replace, delete, deep health checks, node recovery.

Escalation order for a faulty node: investigate (list_nodes, get_node) -> reboot -> replace.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, reference
from mcp_svc.results import (
    OperationStarted,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    page_of,
)
from mcp_svc.tools.common import ClusterRef, DryRun, RequestId, count, submit
from shared.boundary import api_path
from shared.contracts.cluster import DeepHealthCheck, NodeRecovery
from shared.contracts.nodes import MAX_NODES, NODE_ID_PATTERN

NodeIdList = Annotated[
    list[str],
    Field(
        min_length=1,
        max_length=MAX_NODES,
        description="Node ids (i-0123456789abcdef0) from list_nodes",
    ),
]
NodeId = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        pattern=NODE_ID_PATTERN,
        description="A node id from list_nodes, e.g. i-0123456789abcdef0",
    ),
]


class Node(Passthrough):
    node_id: str = Field(description="HyperPod instance id, e.g. i-0123...")
    instance_group: str | None = Field(None, description="Its instance group")
    instance_type: str | None = Field(None, description="e.g. ml.p5.48xlarge")
    instance_status: str | None = Field(None, description="HyperPod's instance status")
    health: str = Field(
        description="One verdict from HyperPod status, Kubernetes and health labels"
    )
    reasons: list[Any] = Field([], description="What the verdict rests on")
    next_step: str | None = Field(None, description="What to do about an unhealthy node")


class NodeList(ToolResult):
    cluster: str = Field(description="The cluster read")
    node_recovery: str | None = Field(None, description="Automatic or None")
    kubernetes_readable: bool | None = Field(
        None, description="False: Kubernetes could not be read"
    )
    health_counts: dict[str, int] = Field(description="Nodes per health verdict")
    source: str | None = Field(None, description="live, or recorded (the watcher's last view)")
    nodes: list[Node] = Field(description="This page, by node id")
    total: int = Field(description="Nodes matched in all")
    next_page_token: str | None = Field(description="Pass as page_token; null: the last page")


class NodeDescription(ToolResult):
    node: Node = Field(description="The node")
    details: dict[str, Any] | None = Field(None, description="HyperPod's DescribeClusterNode")
    events: list[Any] | None = Field(None, description="The node's recent HyperPod events")


# A node with its verdict, reasons and next step is up to ~400 bytes: 40 a page stays under 16 KB.
DEFAULT_NODES_PAGE = 25
MAX_NODES_PAGE = 40


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="nodes", rest="GET /api/v1/clusters/{name}/nodes")
    async def list_nodes(
        cluster: ClusterRef,
        health: Annotated[
            str | None,
            Field(description="Only nodes with this verdict, e.g. unhealthy"),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_NODES_PAGE, description="At most this many nodes per page")
        ] = DEFAULT_NODES_PAGE,
        page_token: PageToken = None,
    ) -> NodeList:
        """A cluster's nodes, each with one health verdict (HyperPod status, Kubernetes conditions,
        health labels, taints) and the next step for an unhealthy one. The first step of a node
        diagnosis; paged, the summary counts all."""
        raw = await gateway.get(api_path("clusters", cluster, "nodes"), {"health": health})
        nodes = [Node.model_validate(n) for n in raw.get("nodes", [])]
        page, next_token = page_of(nodes, lambda n: n.node_id, limit, page_token)
        counts = {str(k): int(v) for k, v in (raw.get("summary") or {}).items()}
        detail = ", ".join(f"{n} {h}" for h, n in sorted(counts.items())) or "none"
        unhealthy = [n.node_id for n in nodes if n.health not in ("healthy",)][:10]
        summary = (
            f"{cluster}: {count(len(nodes), 'node')} ({detail})"
            + (f"; not healthy: {', '.join(unhealthy)}" if unhealthy else "")
            + f"{page_note(len(page), len(nodes), page_token, next_token)}."
        )
        return NodeList(
            summary=summary,
            cluster=cluster,
            node_recovery=raw.get("node_recovery"),
            kubernetes_readable=raw.get("kubernetes_readable"),
            health_counts=counts,
            source=raw.get("source"),
            nodes=page,
            total=len(nodes),
            next_page_token=next_token,
        )

    @server.read_tool(area="nodes", rest="GET /api/v1/clusters/{name}/nodes/{node_id}")
    async def get_node(cluster: ClusterRef, node_id: NodeId) -> NodeDescription:
        """One node: its health view, HyperPod's details and its recent HyperPod events (a
        replaced node has a new id; the events name it)."""
        raw = await gateway.get(api_path("clusters", cluster, "nodes", node_id))
        node = Node.model_validate({k: v for k, v in raw.items() if k not in ("details", "events")})
        summary = f"Node {node.node_id} ({node.instance_group}) is {node.health}" + (
            f"; next step: {node.next_step}" if node.next_step else ""
        )
        return NodeDescription(
            summary=summary, node=node, details=raw.get("details"), events=raw.get("events")
        )

    def node_tool(action: str, path: str, admin: bool, description: str) -> None:
        async def run(
            cluster: ClusterRef,
            node_ids: NodeIdList,
            dry_run: DryRun = False,
            request_id: RequestId = None,
        ) -> OperationStarted:
            tool = f"{action}_nodes"
            return await submit(
                gateway,
                tool=tool,
                arguments={"cluster": cluster, "node_ids": node_ids, "request_id": request_id},
                method="POST",
                path=api_path("clusters", cluster, "nodes", path),
                body={"node_ids": node_ids},
                what=f"{action} of {count(len(node_ids), 'node')} on {cluster}",
                dry_run=dry_run,
            )

        run.__name__ = f"{action}_nodes"
        run.__doc__ = description
        server.write_tool(
            area="nodes", rest=f"POST /api/v1/clusters/{{name}}/nodes/{path}", destructive=admin
        )(run)

    node_tool(
        "reboot",
        "reboot",
        False,
        """Reboot nodes: the first state-changing step after investigating (list_nodes,
        get_node). Batches of 25, a result per node. Suggest it to the user; do not run it on
        your own during a diagnosis.""",
    )
    node_tool(
        "replace",
        "replace",
        True,
        """Replace nodes with new instances: the step after a reboot did not help. Needs an
        admin token; confirm with the user first.""",
    )
    node_tool(
        "delete",
        "delete",
        True,
        """Delete nodes: each lowers its instance group's count by one. Needs an admin token;
        confirm with the user first.""",
    )

    @server.write_tool(area="nodes", rest="POST /api/v1/clusters/{name}/nodes/health-checks")
    async def start_deep_health_check(
        cluster: ClusterRef,
        node_ids: Annotated[
            list[str] | None,
            Field(max_length=MAX_NODES, description="Nodes to check (from list_nodes)"),
        ] = None,
        instance_groups: Annotated[
            list[str] | None,
            Field(
                max_length=100,
                description="Groups to check; the whole cluster if no nodes or groups",
            ),
        ] = None,
        checks: Annotated[
            list[DeepHealthCheck] | None,
            Field(
                min_length=1,
                description="InstanceStress (GPU/CPU/memory) and/or InstanceConnectivity (EFA); both if omitted",
            ),
        ] = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Start a deep health check (stress, EFA connectivity) on nodes, groups or the whole
        cluster. Nodes under check take no work: confirm with the user."""
        arguments = {
            "cluster": cluster,
            "node_ids": node_ids,
            "instance_groups": instance_groups,
            "checks": checks,
            "request_id": request_id,
        }
        body = {
            k: v
            for k, v in {
                "node_ids": node_ids,
                "instance_groups": instance_groups,
                "checks": checks,
            }.items()
            if v is not None
        }
        return await submit(
            gateway,
            tool="start_deep_health_check",
            arguments=arguments,
            method="POST",
            path=api_path("clusters", cluster, "nodes", "health-checks"),
            body=body,
            what=f"deep health check on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(area="nodes", rest="PUT /api/v1/clusters/{name}/node-recovery")
    async def set_node_recovery(
        cluster: ClusterRef,
        mode: Annotated[
            NodeRecovery,
            Field(
                description="Automatic: HyperPod reboots or replaces faulty nodes itself; None: they wait for an operator"
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Set the cluster's node recovery mode; a no-op when it already has that mode."""
        return await submit(
            gateway,
            tool="set_node_recovery",
            arguments={"cluster": cluster, "mode": mode, "request_id": request_id},
            method="PUT",
            path=api_path("clusters", cluster, "node-recovery"),
            body={"mode": str(mode.value)},
            what=f"node recovery {mode.value} on {cluster}",
            dry_run=dry_run,
        )
