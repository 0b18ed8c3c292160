"""Diagnostics reads of a cluster's Kubernetes API: events, pods, a container's log (current or
before its last restart). Read-only: they change nothing, so an agent may call them on its own."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, reference
from mcp_svc.results import (
    LOG_BYTES,
    MaxBytes,
    PageToken,
    Passthrough,
    ToolResult,
    fitted,
    page_note,
    page_of,
    tail_fitted,
)
from mcp_svc.tools.common import ClusterRef, count
from shared.boundary import api_path
from shared.contracts.diagnostics import (
    CONTAINER_PATTERN,
    DEFAULT_TAIL,
    KIND_PATTERN,
    MAX_EVENTS,
    MAX_SELECTOR,
    MAX_TAIL,
    NAMESPACE_OR_ALL_PATTERN,
    NAMESPACE_PATTERN,
    OBJECT_PATTERN,
    POD_PATTERN,
    EventType,
)

# A pod with two containers is ~0.45 KB: 20 a page is ~9 KB, 30 (the most) ~14 KB.
DEFAULT_PODS = 20
# The events route has no cursor, only "the newest N" (REST allows up to MAX_EVENTS): an event
# is ~0.3 KB, so a result keeps to the newest 50 at most, and filters reach further back.
MCP_DEFAULT_EVENTS = 30
MCP_MAX_EVENTS = min(50, MAX_EVENTS)
MAX_PODS = 30

Namespace = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        pattern=NAMESPACE_PATTERN,
        description="The pod's namespace (list_pods shows it)",
    ),
]
PodName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        max_length=253,
        pattern=POD_PATTERN,
        description="A pod's name (see list_pods)",
    ),
]


class KubeEvent(Passthrough):
    type: str | None = Field(None, description="Normal or Warning")
    reason: str | None = Field(None, description="e.g. BackOff, Failed, FailedScheduling")
    message: str | None = Field(None, description="What happened")
    object: dict[str, Any] = Field(
        default_factory=dict, description="The object it is about: kind, name, namespace"
    )
    count: int = Field(1, description="How many times it happened")
    first_timestamp: str | None = Field(None, description="When it first happened")
    last_timestamp: str | None = Field(None, description="When it last happened")
    source: str | None = Field(None, description="The component that reported it (kubelet...)")


class KubeEvents(ToolResult):
    cluster: str = Field(description="The cluster read")
    namespace: str = Field(description="The namespace read, or * for all")
    events: list[KubeEvent] = Field(description="The newest events, newest last")
    older_left_out: int = Field(
        0, description="Older events of the limit left out to stay under 16 KB (filter for them)"
    )


class Container(Passthrough):
    name: str | None = Field(None, description="Container name")
    ready: bool = Field(False, description="Passing its readiness probe")
    restart_count: int = Field(0, description="Restarts so far")
    state: str | None = Field(None, description="running, waiting or terminated")
    reason: str | None = Field(
        None, description="Why it waits or ended: CrashLoopBackOff, ImagePullBackOff, OOMKilled"
    )
    exit_code: int | None = Field(None, description="Exit code if terminated")
    last_termination: dict[str, Any] | None = Field(
        None, description="How the instance before the last restart ended: reason, exit_code"
    )


class Pod(Passthrough):
    name: str | None = Field(None, description="Pod name")
    namespace: str | None = Field(None, description="Its namespace")
    phase: str | None = Field(None, description="Pending, Running, Succeeded, Failed, Unknown")
    status: str | None = Field(None, description="kubectl's STATUS: Running, CrashLoopBackOff...")
    node: str | None = Field(None, description="The node it runs on")
    ready: str | None = Field(None, description="ready containers / containers")
    restarts: int = Field(0, description="Restarts of its containers")
    containers: list[Container] = Field([], description="Each container's state")


class PodList(ToolResult):
    cluster: str = Field(description="The cluster read")
    namespace: str = Field(description="The namespace read, or * for all")
    selector: str = Field("", description="The label selector applied")
    pods: list[Pod] = Field(description="This page, by namespace and name")
    total: int = Field(description="Pods matched in all")
    next_page_token: str | None = Field(description="Pass as page_token; null: the last page")


class PodLog(ToolResult):
    pod: str = Field(description="The pod read")
    namespace: str = Field(description="Its namespace")
    container: str | None = Field(None, description="The container read")
    previous: bool = Field(description="True: the log of the instance before the last restart")
    restart_count: int | None = Field(None, description="The container's restarts")
    lines: list[str] = Field(description="The last lines of the log")
    truncated: bool = Field(
        description="True: earlier lines left out to stay within max_bytes (or a line cut)"
    )


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="diagnostics", rest="GET /api/v1/clusters/{name}/kubernetes-events")
    async def list_kubernetes_events(
        cluster: ClusterRef,
        namespace: Annotated[
            str | None,
            Field(
                pattern=NAMESPACE_OR_ALL_PATTERN,
                description="A namespace (default for training jobs); omitted or *: all",
            ),
        ] = None,
        kind: Annotated[
            str | None,
            Field(pattern=KIND_PATTERN, description="Only about objects of this kind, e.g. Pod"),
        ] = None,
        object_name: Annotated[
            str | None,
            Field(pattern=OBJECT_PATTERN, description="Only about the object of this name"),
        ] = None,
        event_type: Annotated[
            EventType | None,
            Field(description="Warning for problems only, Normal, or omitted for both"),
        ] = None,
        limit: Annotated[
            int,
            Field(
                ge=1,
                le=MCP_MAX_EVENTS,
                description="The newest this many events (filter to see further back)",
            ),
        ] = MCP_DEFAULT_EVENTS,
    ) -> KubeEvents:
        """A cluster's Kubernetes events, newest last (scheduling, image pulls, BackOff exit codes,
        NotReady nodes). Filter by namespace, object and type (start with type=Warning)."""
        raw = await gateway.get(
            api_path("clusters", cluster, "kubernetes-events"),
            {
                "namespace": namespace,
                "kind": kind,
                "object": object_name,
                "type": event_type,
                "limit": limit,
            },
        )
        read = [KubeEvent.model_validate(e) for e in raw.get("events") or []]
        # The newest that fit in a page: the REST list is the newest `limit`, newest last.
        events = list(reversed(fitted(list(reversed(read)))))
        left_out = len(read) - len(events)
        warnings = sum(1 for e in events if e.type == "Warning")
        latest = events[-1] if events else None
        summary = f"{cluster}: {count(len(events), 'event')} ({warnings} Warning)" + (
            f"; the latest: {latest.reason} on {latest.object.get('kind')}"
            f" {latest.object.get('name')}: {latest.message}"
            if latest
            else "."
        )
        if left_out:
            summary += (
                f" {left_out} older ones left out to stay under 16 KB: filter by namespace,"
                " kind, object_name or event_type to see them."
            )
        return KubeEvents(
            summary=summary,
            cluster=cluster,
            namespace=str(raw.get("namespace") or namespace or "*"),
            events=events,
            older_left_out=left_out,
        )

    @server.read_tool(area="diagnostics", rest="GET /api/v1/clusters/{name}/pods")
    async def list_pods(
        cluster: ClusterRef,
        namespace: Annotated[
            str,
            Field(
                pattern=NAMESPACE_OR_ALL_PATTERN,
                description="A namespace (training jobs run in default), or * for all",
            ),
        ] = "default",
        selector: Annotated[
            str,
            Field(
                max_length=MAX_SELECTOR,
                description="A label selector, e.g. hyperpilot.dev/job=<job> for a job's pods",
            ),
        ] = "",
        limit: Annotated[
            int, Field(ge=1, le=MAX_PODS, description="At most this many pods per page")
        ] = DEFAULT_PODS,
        page_token: PageToken = None,
    ) -> PodList:
        """Pods with their kubectl status (CrashLoopBackOff, OOMKilled, Pending...), node,
        readiness, restarts and containers' states. Paged; the summary names the troubled pods
        of every page."""
        raw = await gateway.get(
            api_path("clusters", cluster, "pods"), {"namespace": namespace, "selector": selector}
        )
        every = [Pod.model_validate(p) for p in raw.get("pods") or []]
        pods, next_token = page_of(
            every, lambda p: f"{p.namespace or ''}/{p.name or ''}", limit, page_token
        )
        troubled = [
            f"{p.name} ({p.status}, {p.restarts} restarts)"
            for p in every
            if p.status not in ("Running", "Completed", "Succeeded") or p.restarts
        ]
        summary = (
            f"{cluster}/{namespace}: {count(len(every), 'pod')}"
            f"{page_note(len(pods), len(every), page_token, next_token)}"
            + (f"; not running cleanly: {', '.join(troubled[:10])}." if troubled else ".")
        )
        return PodList(
            summary=summary,
            cluster=cluster,
            namespace=namespace,
            selector=selector,
            pods=pods,
            total=len(every),
            next_page_token=next_token,
        )

    @server.read_tool(
        area="diagnostics", rest="GET /api/v1/clusters/{name}/pods/{namespace}/{pod}/logs"
    )
    async def get_pod_logs(
        cluster: ClusterRef,
        namespace: Namespace,
        pod: PodName,
        container: Annotated[
            str | None,
            Field(pattern=CONTAINER_PATTERN, description="The pod's default container if omitted"),
        ] = None,
        tail_lines: Annotated[
            int, Field(ge=1, le=MAX_TAIL, description="The last this many lines")
        ] = DEFAULT_TAIL,
        previous: Annotated[
            bool,
            Field(
                description=(
                    "The log of the instance before the last restart: what it printed before it"
                    " crashed"
                )
            ),
        ] = False,
        max_bytes: MaxBytes = LOG_BYTES,
    ) -> PodLog:
        """The last lines of a container's log in any namespace; previous=true: the crashed
        instance's log before the last restart (the error is usually at its end)."""
        text, headers = await gateway.get_text(
            api_path("clusters", cluster, "pods", namespace, pod, "logs"),
            {"container": container, "tail": tail_lines, "previous": previous},
        )
        read = text.splitlines()
        lines, truncated = tail_fitted(read, max_bytes)
        restarts = headers.get("x-restart-count", "")
        chosen = headers.get("x-container") or container
        which = "previous log" if previous else "log"
        cut = (
            f", the last {len(lines)} within max_bytes={max_bytes} (truncated)" if truncated else ""
        )
        return PodLog(
            summary=f"{namespace}/{pod} ({chosen}): {count(len(read), 'line')} of its {which}"
            f"{cut}.",
            truncated=truncated,
            pod=pod,
            namespace=namespace,
            container=chosen,
            previous=previous,
            restart_count=int(restarts) if restarts.isdigit() else None,
            lines=lines,
        )
