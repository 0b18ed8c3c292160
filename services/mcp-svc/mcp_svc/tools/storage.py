"""Storage buckets: the shared S3 buckets for lifecycle scripts, data and models."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
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
from mcp_svc.tools.common import (
    ClusterRef,
    DryRun,
    Region,
    RequestId,
    body_of,
    count,
    named,
    submit,
)
from shared.boundary import api_path
from shared.contracts.storage import StorageAdd

BucketName = Annotated[
    str,
    Field(
        description="S3 bucket name: 3-63 lowercase letters, digits and hyphens",
    ),
]


class Bucket(Passthrough):
    name: str = Field(description="Bucket name")
    region: str = Field(description="AWS region")
    status: str = Field(description="pending, creating, active, failed, deleting, ...")
    arn: str | None = Field(None, description="Bucket ARN")
    operation_id: str | None = Field(None, description="The operation that made it")
    created_at: str | None = Field(None, description="ISO 8601")
    updated_at: str | None = Field(None, description="ISO 8601")


class BucketList(Paged):
    buckets: list[Bucket] = Field(description="This page, by name")


class BucketDescription(ToolResult):
    bucket: Bucket = Field(description="The bucket")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    register_claims(server, gateway)

    @server.read_tool(area="storage", rest="GET /api/v1/storage/buckets")
    async def list_storage_buckets(
        limit: PageLimit = PAGE, page_token: PageToken = None
    ) -> BucketList:
        """List the S3 buckets managed by Hyperpilot with their status."""
        buckets, next_token, total = await rest_page(
            gateway,
            "/api/v1/storage/buckets",
            {},
            Bucket,
            ("buckets", lambda r: (r["name"],)),
            limit,
            page_token,
        )
        note = page_note(len(buckets), total, page_token, next_token)
        summary = f"{count(total, 'bucket')}{note}" + (
            ": " + named([f"{b.name} ({b.status})" for b in buckets]) if buckets else "."
        )
        return BucketList(summary=summary, buckets=buckets, total=total, next_page_token=next_token)

    @server.read_tool(area="storage", rest="GET /api/v1/storage/buckets/{name}")
    async def get_storage_bucket(name: BucketName) -> BucketDescription:
        """Describe a managed S3 bucket: region, status, ARN, the operation that made it."""
        bucket = Bucket.model_validate(await gateway.get(api_path("storage", "buckets", name)))
        return BucketDescription(
            summary=f"Bucket {bucket.name} is {bucket.status} in {bucket.region}.", bucket=bucket
        )

    @server.write_tool(area="storage", rest="POST /api/v1/storage/buckets")
    async def create_storage_bucket(
        name: BucketName,
        region: Region = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Create an S3 bucket (encrypted, public access blocked) for data and models."""
        arguments = {"name": name, "region": region, "request_id": request_id}
        return await submit(
            gateway,
            tool="create_storage_bucket",
            arguments=arguments,
            method="POST",
            path="/api/v1/storage/buckets",
            body=body_of(arguments),
            what=f"bucket {name}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="storage", rest="DELETE /api/v1/storage/buckets/{name}", destructive=True
    )
    async def delete_storage_bucket(
        name: BucketName, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Empty and delete a managed S3 bucket. Needs an admin token; confirm with the user
        first: the data in it is gone."""
        return await submit(
            gateway,
            tool="delete_storage_bucket",
            arguments={"name": name, "request_id": request_id},
            method="DELETE",
            path=api_path("storage", "buckets", name),
            body=None,
            what=f"deletion of bucket {name}",
            dry_run=dry_run,
        )


class Claim(Passthrough):
    claim: str = Field(description="The claim's name")
    kind: str = Field(description="s3 or fsx")
    source: str = Field(description="default, existing (kept) or created")
    status: str = Field(description="e.g. available")
    bucket: str | None = Field(None, description="S3 bucket")
    file_system_id: str | None = Field(None, description="FSx id")


class ClaimList(ToolResult):
    claims: list[Claim] = Field(description="The claims")


def register_claims(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="storage", rest="GET /api/v1/clusters/{name}/storage")
    async def list_cluster_storage(cluster: ClusterRef) -> ClaimList:
        """A cluster's storage claims (S3, FSx): what workloads mount in `volumes`."""
        rows = await gateway.get(api_path("clusters", cluster, "storage"))
        claims = [Claim.model_validate(r) for r in rows]
        summary = f"{cluster}: {count(len(claims), 'claim')}" + (
            ": " + named([f"{c.claim} ({c.kind}, {c.source})" for c in claims]) if claims else "."
        )
        return ClaimList(summary=summary, claims=claims)

    @server.write_tool(
        area="storage", rest="POST /api/v1/clusters/{name}/storage", body_param="storage"
    )
    async def add_cluster_storage(
        cluster: ClusterRef,
        storage: Annotated[
            StorageAdd,
            Field(
                description='e.g. {"kind": "s3", "claim": "data", "bucket": "b"}'
                ' or {"kind": "fsx", "claim": "l", "file_system_id": "fs-..."}'
            ),
        ],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Attach an existing bucket or FSx (kept forever), or create one (deleted with it)."""
        return await submit(
            gateway,
            tool="add_cluster_storage",
            arguments={"cluster": cluster, "storage": storage, "request_id": request_id},
            method="POST",
            path=api_path("clusters", cluster, "storage"),
            body=storage.model_dump(mode="json", exclude_unset=True),
            what=f"storage claim {storage.claim} on {cluster}",
            dry_run=dry_run,
        )

    @server.write_tool(
        area="storage", rest="DELETE /api/v1/clusters/{name}/storage/{claim}", destructive=True
    )
    async def remove_cluster_storage(
        cluster: ClusterRef,
        claim: Annotated[str, Field(description="The claim")],
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Remove a claim (refused while mounted); what it created is deleted: confirm first."""
        return await submit(
            gateway,
            tool="remove_cluster_storage",
            arguments={"cluster": cluster, "claim": claim, "request_id": request_id},
            method="DELETE",
            path=api_path("clusters", cluster, "storage", claim),
            body=None,
            what=f"removal of storage claim {claim} from {cluster}",
            dry_run=dry_run,
        )
