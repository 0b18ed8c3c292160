"""Storage buckets: the workflows that create and delete a shared-data bucket.

create: bucket -> (public-access block || encryption)   [the last two run concurrently]
delete: empty -> delete
"""

from __future__ import annotations

from typing import Protocol

from shared.contracts.commands import CreateStorageBucket, DeleteStorageBucket
from shared.stages import Done, Stage, StageContext, Workflow


class BucketStore(Protocol):
    async def exists(self, name: str) -> bool: ...
    async def create(self, name: str, region: str) -> None: ...
    async def block_public_access(self, name: str) -> bool: ...
    async def encrypt(self, name: str) -> bool: ...
    async def tag(self, name: str) -> None: ...
    async def empty(self, name: str) -> int: ...
    async def delete(self, name: str) -> None: ...


def bucket_arn(name: str) -> str:
    return f"arn:aws:s3:::{name}"


def create_bucket_workflow(buckets: BucketStore) -> Workflow[CreateStorageBucket]:
    async def bucket(ctx: StageContext[CreateStorageBucket]) -> Done:
        name = ctx.cmd.name
        if await buckets.exists(name):
            return Done({"arn": bucket_arn(name)}, noop=True)
        await buckets.create(name, ctx.cmd.region)
        await buckets.tag(name)
        return Done({"arn": bucket_arn(name)})

    async def public_access(ctx: StageContext[CreateStorageBucket]) -> Done:
        changed = await buckets.block_public_access(ctx.cmd.name)
        return Done(noop=not changed)

    async def encryption(ctx: StageContext[CreateStorageBucket]) -> Done:
        changed = await buckets.encrypt(ctx.cmd.name)
        return Done({"algorithm": "AES256"}, noop=not changed)

    return Workflow(
        kind=CreateStorageBucket.kind(),
        domain=CreateStorageBucket.domain,
        stages=(
            Stage("bucket", "Create the S3 bucket", bucket),
            Stage("public_access", "Block public access", public_access, needs=("bucket",)),
            Stage("encryption", "Turn on default encryption", encryption, needs=("bucket",)),
        ),
        command=CreateStorageBucket,
    )


def delete_bucket_workflow(buckets: BucketStore) -> Workflow[DeleteStorageBucket]:
    async def empty(ctx: StageContext[DeleteStorageBucket]) -> Done:
        if not await buckets.exists(ctx.cmd.name):
            return Done({"objects_removed": 0}, noop=True)
        removed = await buckets.empty(ctx.cmd.name)
        return Done({"objects_removed": removed}, noop=removed == 0)

    async def delete(ctx: StageContext[DeleteStorageBucket]) -> Done:
        if not await buckets.exists(ctx.cmd.name):
            return Done(noop=True)
        await buckets.delete(ctx.cmd.name)
        return Done()

    return Workflow(
        kind=DeleteStorageBucket.kind(),
        domain=DeleteStorageBucket.domain,
        stages=(
            Stage("empty", "Remove the bucket's objects", empty),
            Stage("delete", "Delete the S3 bucket", delete, needs=("empty",)),
        ),
        command=DeleteStorageBucket,
    )
