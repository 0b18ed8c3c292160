"""What the tool modules share: parameter types, the REST body of a call, the submission of a
mutation keyed by the call."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_core import to_jsonable_python

from mcp_svc.client import Gateway, idempotency_key
from mcp_svc.registry import reference
from mcp_svc.results import OperationStarted, planned, started
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.workloads import JOB_NAME_PATTERN
from shared.regions import REGION_PATTERN

Region = Annotated[
    str | None,
    Field(
        pattern=REGION_PATTERN,
        description="e.g. us-east-1; omitted: the control plane's region",
    ),
]
DryRun = Annotated[bool, Field(description="Plan only (rule 3)")]
ClusterRef = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=63,
        pattern=NAME_PATTERN,
        description="From list_clusters",
    ),
]
GroupName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=63,
        pattern=NAME_PATTERN,
        description="From list_instance_groups",
    ),
]
JobName = Annotated[
    str,
    Field(
        json_schema_extra=reference(),
        min_length=1,
        max_length=40,
        pattern=JOB_NAME_PATTERN,
        description="From list_training_jobs",
    ),
]
RequestId = Annotated[
    str | None,
    Field(
        max_length=64,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="Usually unset (rule 4)",
    ),
]


async def submit(
    gateway: Gateway,
    *,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    what: str,
    dry_run: bool = False,
    params: dict[str, Any] | None = None,
) -> OperationStarted:
    """Send a mutation keyed by the call (`idempotency_key`: a retry returns the operation the
    first call started, without another read) and describe that operation; a dry run asks for
    the plan only (nothing is stored or changed)."""
    if dry_run:
        answer = await gateway.preview(method, path, body=body, params=params)
        return planned(tool, answer, what)
    canonical = to_jsonable_python(arguments)
    accepted = await gateway.mutate(
        method, path, tool=tool, arguments=canonical, body=body, params=params
    )
    return started(tool, accepted, idempotency_key(tool, canonical), what)


def body_of(
    arguments: dict[str, Any], *, exclude: tuple[str, ...] = ("request_id", "dry_run", "cluster")
) -> dict[str, Any]:
    """The REST body: the arguments as JSON, without unset ones and MCP-only ones."""
    data: dict[str, Any] = to_jsonable_python(
        {k: v for k, v in arguments.items() if v is not None and k not in exclude}
    )
    return data


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def named(texts: list[str], most: int = 20) -> str:
    """`a, b, c` for a summary, the first `most` of them and how many more (a summary stays
    short however long the page)."""
    shown = ", ".join(texts[:most])
    return shown + (f" and {len(texts) - most} more" if len(texts) > most else "")
