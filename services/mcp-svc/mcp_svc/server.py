"""Composition root: the MCP server with every area's tools, bound to one gateway client."""

from __future__ import annotations

from pathlib import Path

from mcp_svc import skills
from mcp_svc.client import Gateway
from mcp_svc.config import McpSettings
from mcp_svc.registry import HyperpilotServer
from mcp_svc.tools import AREAS

VERSION = "1.0.0"

INSTRUCTIONS = """\
Hyperpilot runs GPU clusters on Amazon EKS + SageMaker HyperPod. These tools call its REST API
with this server's token; the API validates every request the same way for every face.

Rules:
1. Inspect before creating: list_clusters, list_availability_zones, list_instance_types
   (and get_instance_type_quota) before offering choices.
2. Ask the user only decision-grade questions: Availability Zone, instance type, count, capacity
   type (on-demand, spot, training plan); the GPU count of a job or an endpoint always comes
   from the user, never inferred. Never ask about CIDRs, subnets, route tables or
   security groups: the control plane settles them.
3. Every mutating tool returns an operation_id and names its status tool. Poll
   get_operation(operation_id, wait_seconds=45) until `terminal` is true, and report the
   terminal status, not the submission. The status tool waits: no sleep is needed.
   With dry_run=true a mutating tool only answers its plan (changing nothing), which works
   on a read-only server too.
4. Repeating a mutating call with the same arguments returns the same operation while nothing
   else changed its target; it never repeats the change. Leave `request_id` unset, or set it to
   name a request for good (a retry with it always returns that operation), or a new value to
   repeat a finished change.
5. A failed operation names its failed stage and the reason; fix the cause, then
   retry_operation re-runs only the failed stages.
6. A result's text is a one-paragraph summary (also its `summary` field); the data is its
   structured content. A long list comes in pages: pass next_page_token back as page_token
   (an event log: next_after as after, while `more` is true).
7. The tool list names the fields of an object inside a tool's arguments (and of a large
   argument such as create_cluster's cluster) without their schemas: get_tool_schema(tool,
   field) gives one with its types, enums, defaults and rules before you fill it in.

The playbooks for whole tasks (create a cluster, add an instance group, enable managed
features, submit training, deploy inference, diagnose NCCL failures, node health or a failed
cluster creation) are served as prompts.
"""


def build_server(
    settings: McpSettings, gateway: Gateway | None = None, skills_dir: Path | None = None
) -> HyperpilotServer:
    if gateway is None:
        token = settings.gateway_token.get_secret_value() if settings.gateway_token else None
        gateway = Gateway(settings.gateway_url, token, timeout=settings.request_timeout_seconds)
    server = HyperpilotServer(
        allow_write=settings.allow_write,
        name="hyperpilot",
        title="Hyperpilot",
        instructions=INSTRUCTIONS,
        version=VERSION,
    )
    server.http_token = settings.resolved_http_token()
    server.http_allowed_hosts = list(settings.http_allowed_hosts)
    server.http_allowed_origins = list(settings.http_allowed_origins)
    for _area, register in AREAS:
        register(server, gateway)
    skills.register(server, skills_dir or skills.skills_dir())
    server.gateway = gateway
    return server
