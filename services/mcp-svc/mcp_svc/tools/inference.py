"""Inference endpoints: managed (HyperPod inference operator, JumpStart) and self-managed
(vLLM, SGLang, custom containers; internal, external or model-pool services), scaling, the
model pool, and invoking a model."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer, listed_as, reference
from mcp_svc.results import (
    PAGE,
    OperationStarted,
    Paged,
    PageLimit,
    PageToken,
    Passthrough,
    ToolResult,
    page_note,
    rest_page,
)
from mcp_svc.tools.common import DryRun, RequestId, count, named, submit
from shared.boundary import DNS_SUBDOMAIN_PATTERN, api_path
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.inference import (
    ENDPOINT_NAME_PATTERN,
    POOL_MODEL_PATTERN,
    EndpointChange,
    EndpointSpec,
    PoolAssignment,
)

EndpointName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=40,
        pattern=ENDPOINT_NAME_PATTERN,
        description="From list_endpoints",
    ),
]
ClusterOption = Annotated[
    str | None,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=63,
        pattern=NAME_PATTERN,
        description="The cluster; the active cluster if omitted",
    ),
]
# update_endpoint's change has the fields, types and rules of deploy_endpoint's endpoint: listed
# by name here, its schema once (with deploy_endpoint).
CHANGE_LISTED = (
    "Only the fields to change, each as deploy_endpoint's endpoint takes it (nested ones too,"
    f" e.g. {{container: {{env: ...}}}}): {', '.join(EndpointChange.model_fields)}"
)

PodName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="A worker pod of the model pool (get_endpoint lists them)",
    ),
]


class Endpoint(Passthrough):
    name: str = Field(description="Endpoint name")
    cluster: str | None = Field(None, description="Its cluster")
    kind: str | None = Field(None, description="container, sglang, managed or jumpstart")
    status: str | None = Field(None, description="e.g. pending, ready, failed")
    replicas: int | None = Field(None, description="Replicas asked for")
    ready_replicas: int | None = Field(None, description="Replicas ready now")
    address: str | None = Field(None, description="Where it answers (in-cluster URL)")
    message: str | None = Field(None, description="Why, when not ready")
    operation_id: str | None = Field(None, description="The operation that deployed it")


class EndpointList(Paged):
    endpoints: list[Endpoint] = Field(description="This page, by cluster and name")


class EndpointDescription(ToolResult):
    endpoint: Endpoint = Field(description="The endpoint")


class Invocation(ToolResult):
    response: Any = Field(description="The model server's answer (OpenAI-compatible)")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="inference", rest="GET /api/v1/endpoints")
    async def list_endpoints(
        cluster: Annotated[
            str | None,
            Field(
                max_length=63,
                description="The cluster; the active one if omitted; * for every cluster",
            ),
        ] = None,
        limit: PageLimit = PAGE,
        page_token: PageToken = None,
    ) -> EndpointList:
        """List inference endpoints with their status, replicas and address."""
        endpoints, next_token, total = await rest_page(
            gateway,
            "/api/v1/endpoints",
            {"cluster": cluster},
            Endpoint,
            ("endpoints", lambda r: (r["cluster"], r["name"])),
            limit,
            page_token,
        )
        note = page_note(len(endpoints), total, page_token, next_token)
        summary = f"{count(total, 'endpoint')}{note}" + (
            ": "
            + named(
                [
                    f"{e.name} ({e.status}, {e.ready_replicas or 0}/{e.replicas or 0} ready)"
                    for e in endpoints
                ]
            )
            if endpoints
            else "."
        )
        return EndpointList(
            summary=summary,
            endpoints=endpoints,
            total=total,
            next_page_token=next_token,
        )

    @server.read_tool(area="inference", rest="GET /api/v1/endpoints/{name}")
    async def get_endpoint(
        name: EndpointName,
        cluster: ClusterOption = None,
        live: Annotated[bool, Field(description="Also read the objects from the cluster")] = True,
    ) -> EndpointDescription:
        """An endpoint: its record and, live, its status, pods and objects."""
        raw = await gateway.get(api_path("endpoints", name), {"cluster": cluster, "live": live})
        found = Endpoint.model_validate(raw)
        return EndpointDescription(
            summary=f"Endpoint {found.name} is {found.status}"
            f" ({found.ready_replicas or 0}/{found.replicas or 0} ready)"
            + (f" at {found.address}." if found.address else "."),
            endpoint=found,
        )

    @server.read_tool(area="inference", rest="POST /api/v1/endpoints/{name}/invoke")
    async def invoke_endpoint(
        name: EndpointName,
        request: Annotated[
            dict[str, Any],
            Field(
                description=(
                    'An OpenAI-compatible chat request, e.g. {"messages": [{"role": "user",'
                    ' "content": "Hello"}], "max_tokens": 64}'
                )
            ),
        ],
        cluster: ClusterOption = None,
    ) -> Invocation:
        """Send a chat request to a deployed model and return its answer (changes nothing)."""
        answer = await gateway.ask(
            api_path("endpoints", name, "invoke"), request, {"cluster": cluster}
        )
        text = ""
        if isinstance(answer, dict):
            choices = answer.get("choices") or [{}]
            message = (choices[0] or {}).get("message") or {}
            text = str(message.get("content") or choices[0].get("text") or "")[:200]
        return Invocation(
            summary=f"{name} answered" + (f": {text}" if text else "."), response=answer
        )

    @server.write_tool(area="inference", rest="POST /api/v1/endpoints", body_param="endpoint")
    async def deploy_endpoint(
        endpoint: Annotated[
            EndpointSpec,
            Field(
                description=(
                    "gpus per replica: ask the user, never infer; kind: container (engine vllm,"
                    " sglang or custom), sglang (router, autoscaling), managed or jumpstart;"
                    " service: internal, external or model_pool"
                )
            ),
        ],
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Deploy (or update) an inference endpoint: a vLLM, SGLang or custom container, an SGLang
        router with KEDA, or managed (HyperPod inference operator, JumpStart). The GPU count per
        replica comes from the user."""
        return await submit(
            gateway,
            tool="deploy_endpoint",
            arguments={"endpoint": endpoint, "cluster": cluster, "request_id": request_id},
            method="POST",
            path="/api/v1/endpoints",
            body=endpoint.model_dump(mode="json", exclude_none=True),
            params={"cluster": cluster},
            what=f"endpoint {endpoint.name}",
            dry_run=dry_run,
        )

    @server.write_tool(area="inference", rest="PATCH /api/v1/endpoints/{name}", body_param="change")
    async def update_endpoint(
        name: EndpointName,
        change: Annotated[
            EndpointChange,
            Field(
                description="Only the fields to change (nested ones too), e.g. container.env",
                json_schema_extra=listed_as(CHANGE_LISTED),
            ),
        ],
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Change a deployed endpoint: only the fields sent change; the merged spec is checked
        by every rule of a deploy, and a change that equals what runs is a noop."""
        return await submit(
            gateway,
            tool="update_endpoint",
            arguments={
                "name": name,
                "change": change,
                "cluster": cluster,
                "request_id": request_id,
            },
            method="PATCH",
            path=api_path("endpoints", name),
            body=change.model_dump(mode="json", exclude_unset=True),
            params={"cluster": cluster},
            what=f"change of {name}",
            dry_run=dry_run,
        )

    @server.write_tool(area="inference", rest="POST /api/v1/endpoints/{name}/scale")
    async def scale_endpoint(
        name: EndpointName,
        replicas: Annotated[int, Field(ge=0, le=64, description="The replicas wanted")],
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Set an endpoint's replicas (0 keeps it defined with nothing running)."""
        return await submit(
            gateway,
            tool="scale_endpoint",
            arguments={
                "name": name,
                "replicas": replicas,
                "cluster": cluster,
                "request_id": request_id,
            },
            method="POST",
            path=api_path("endpoints", name, "scale"),
            body={"replicas": replicas},
            params={"cluster": cluster},
            what=f"scale of {name} to {replicas}",
            dry_run=dry_run,
        )

    @server.write_tool(area="inference", rest="POST /api/v1/endpoints/{name}/pool/assign")
    async def assign_pool_worker(
        name: EndpointName,
        pod: PodName,
        model: Annotated[
            str,
            Field(
                pattern=POOL_MODEL_PATTERN,
                description=PoolAssignment.model_fields["model"].description,
            ),
        ],
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Move a warm worker of a model pool to a model by relabelling it (no restart)."""
        return await submit(
            gateway,
            tool="assign_pool_worker",
            arguments={
                "name": name,
                "pod": pod,
                "model": model,
                "cluster": cluster,
                "request_id": request_id,
            },
            method="POST",
            path=api_path("endpoints", name, "pool", "assign"),
            body={"pod": pod, "model": model},
            params={"cluster": cluster},
            what=f"assignment of {pod} to {model}",
            dry_run=dry_run,
        )

    @server.write_tool(area="inference", rest="POST /api/v1/endpoints/{name}/pool/unassign")
    async def unassign_pool_worker(
        name: EndpointName,
        pod: PodName,
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Return a worker of a model pool to the unassigned workers."""
        return await submit(
            gateway,
            tool="unassign_pool_worker",
            arguments={"name": name, "pod": pod, "cluster": cluster, "request_id": request_id},
            method="POST",
            path=api_path("endpoints", name, "pool", "unassign"),
            body={"pod": pod},
            params={"cluster": cluster},
            what=f"unassignment of {pod}",
            dry_run=dry_run,
        )

    @server.write_tool(area="inference", rest="DELETE /api/v1/endpoints/{name}", destructive=True)
    async def delete_endpoint(
        name: EndpointName,
        cluster: ClusterOption = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Delete an endpoint and its objects. Confirm with the user first."""
        return await submit(
            gateway,
            tool="delete_endpoint",
            arguments={"name": name, "cluster": cluster, "request_id": request_id},
            method="DELETE",
            path=api_path("endpoints", name),
            body=None,
            params={"cluster": cluster},
            what=f"deletion of endpoint {name}",
            dry_run=dry_run,
        )
