"""Storage buckets: the shared S3 bucket for lifecycle scripts, data and models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway import keyset, pages
from gateway.accept import plan_then_accept
from gateway.deps import AdminMutation, OperatorMutation, Pool, Viewer
from gateway.errors import ApiError
from gateway.routes.models import ACCEPTED, READ_ERRORS, accepted
from gateway.routing import PrefixedRoute
from shared.contracts.commands import CreateStorageBucket, DeleteStorageBucket
from shared.naming import AWS_REGIONS, bucket_name_problem
from shared.validation import RuleViolation

router = APIRouter(
    route_class=PrefixedRoute,
    prefix="/api/v1/storage/buckets",
    tags=["storage"],
    responses=READ_ERRORS,
)

BUCKET_HINT = "use 3-63 lowercase letters, digits and hyphens, e.g. team-llm-data-123"


def _check_bucket(name: str) -> str:
    problem = bucket_name_problem(name)
    if problem:
        raise RuleViolation(f"bucket name {problem}", BUCKET_HINT)
    return name


def _check_region(region: str | None) -> str | None:
    if region is not None and region not in AWS_REGIONS:
        raise RuleViolation(
            f"{region!r} is not an AWS region", "use a region code such as us-east-1 or us-west-2"
        )
    return region


class BucketCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="S3 bucket name (3-63 lowercase letters, digits, hyphens)")
    region: str | None = Field(
        None, description="AWS region; the control plane's region if omitted"
    )

    _name = field_validator("name")(_check_bucket)
    _region = field_validator("region")(_check_region)


class BucketRead(BaseModel):
    name: str
    region: str
    status: str
    arn: str | None
    operation_id: str | None
    created_at: str
    updated_at: str


def _row(r: Any) -> dict[str, Any]:
    return {
        "name": r["name"],
        "region": r["region"],
        "status": r["status"],
        "arn": r["arn"],
        "operation_id": str(r["operation_id"]) if r["operation_id"] else None,
        "created_at": r["created_at"].isoformat(),
        "updated_at": r["updated_at"].isoformat(),
    }


BucketName = Annotated[
    str, Path(min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]+[a-z0-9]$")
]


CREATED_BUCKET = {
    "GetBucket": {
        "operationId": "get_bucket_api_v1_storage_buckets__name__get",
        "parameters": {"name": "$request.body#/name"},
        "description": "The bucket the operation creates",
    },
    "DeleteBucket": {
        "operationId": "delete_bucket_api_v1_storage_buckets__name__delete",
        "parameters": {"name": "$request.body#/name"},
        "description": "Empty and delete it again",
    },
}


@router.post("", status_code=202, responses=accepted(CREATED_BUCKET), summary="Create an S3 bucket")
async def create_bucket(
    body: BucketCreate, request: Request, mutation: OperatorMutation
) -> JSONResponse:
    region = body.region or request.app.state.settings.aws_region

    async def build() -> CreateStorageBucket:
        return CreateStorageBucket(name=body.name, region=region)

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        CreateStorageBucket,
        build,
        target_type="bucket",
        target_id=body.name,
        requested=body.model_dump(exclude_unset=True),
        verdict=False,
    )


@router.get(
    "",
    response_model=None,
    responses={**pages.paged(list[BucketRead]), **pages.BAD_TOKEN},
    summary="List buckets, by name, a page at a time",
)
async def list_buckets(
    pool: Pool,
    _: Viewer,
    response: Response,
    limit: pages.PageLimit = pages.DEFAULT_LIMIT,
    page_token: pages.PageToken = None,
) -> list[dict[str, Any]]:
    key = pages.key_of("buckets", page_token, 1)
    async with pool.acquire() as conn:
        # The primary key (name) is the index.
        rows, total = await keyset.page(conn, "storage_buckets", ("name",), key, limit)
    page = pages.send(response, "buckets", rows, limit, total, lambda r: (r["name"],))
    return [_row(r) for r in page]


@router.get("/{name}", response_model=BucketRead, summary="Describe a bucket")
async def get_bucket(name: BucketName, pool: Pool, _: Viewer) -> dict[str, Any]:
    async with pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM storage_buckets WHERE name = $1", name)
    if row is None:
        raise ApiError(
            404,
            "not_found",
            f"bucket {name} is not managed here",
            hint="list buckets with GET /api/v1/storage/buckets",
        )
    return _row(row)


@router.delete("/{name}", status_code=202, responses=ACCEPTED, summary="Empty and delete a bucket")
async def delete_bucket(
    name: BucketName, request: Request, mutation: AdminMutation
) -> JSONResponse:

    async def build() -> DeleteStorageBucket:
        async with mutation.pool.acquire() as conn:
            row = await conn.fetchrow("SELECT region FROM storage_buckets WHERE name = $1", name)
        if row is None:
            raise ApiError(
                404,
                "not_found",
                f"bucket {name} is not managed here",
                hint="list buckets with GET /api/v1/storage/buckets",
            )
        return DeleteStorageBucket(name=name, region=row["region"])

    return await plan_then_accept(
        request.app.state.bus,
        mutation,
        DeleteStorageBucket,
        build,
        target_type="bucket",
        target_id=name,
        requested={"name": name},
        verdict=False,
    )
