"""S3 buckets for shared data and lifecycle scripts."""

from __future__ import annotations

from cluster_svc.adapters.aws import AwsClients
from shared.errors import PermanentError

MANAGED_BY_TAG = {"Key": "managed-by", "Value": "hyperpilot"}


class S3Buckets:
    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def exists(self, name: str) -> bool:
        try:
            await self.aws.call("s3", "head_bucket", Bucket=name)
        except PermanentError as exc:
            if exc.code in ("404", "NoSuchBucket", "NotFound"):
                return False
            if exc.code in ("403", "AccessDenied"):
                raise PermanentError(
                    "BucketNameTaken",
                    f"bucket {name} exists and belongs to another account",
                    "choose another bucket name",
                ) from exc
            raise
        return True

    async def create(self, name: str, region: str) -> None:
        params: dict[str, object] = {"Bucket": name}
        if region != "us-east-1":
            params["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            await self.aws.call("s3", "create_bucket", **params)
        except PermanentError as exc:
            if exc.code != "BucketAlreadyOwnedByYou":
                raise

    async def block_public_access(self, name: str) -> bool:
        """Returns False when the bucket already blocks all public access."""
        wanted = {
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        }
        try:
            current = await self.aws.call("s3", "get_public_access_block", Bucket=name)
            if current.get("PublicAccessBlockConfiguration") == wanted:
                return False
        except PermanentError as exc:
            if exc.code != "NoSuchPublicAccessBlockConfiguration":
                raise
        await self.aws.call(
            "s3", "put_public_access_block", Bucket=name, PublicAccessBlockConfiguration=wanted
        )
        return True

    async def encrypt(self, name: str) -> bool:
        """Default encryption with S3-managed keys; returns False when already so."""
        rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        try:
            current = await self.aws.call("s3", "get_bucket_encryption", Bucket=name)
            rules = current.get("ServerSideEncryptionConfiguration", {}).get("Rules", [])
            if any(
                r.get("ApplyServerSideEncryptionByDefault")
                == rule["ApplyServerSideEncryptionByDefault"]
                for r in rules
            ):
                return False
        except PermanentError as exc:
            if exc.code != "ServerSideEncryptionConfigurationNotFoundError":
                raise
        await self.aws.call(
            "s3",
            "put_bucket_encryption",
            Bucket=name,
            ServerSideEncryptionConfiguration={"Rules": [rule]},
        )
        return True

    async def tag(self, name: str) -> None:
        await self.aws.call(
            "s3", "put_bucket_tagging", Bucket=name, Tagging={"TagSet": [MANAGED_BY_TAG]}
        )

    async def empty(self, name: str) -> int:
        """Delete every object (and version); returns how many were removed."""
        removed = 0
        while True:
            listing = await self.aws.call("s3", "list_object_versions", Bucket=name, MaxKeys=1000)
            keys = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in listing.get("Versions", []) + listing.get("DeleteMarkers", [])
            ]
            if not keys:
                return removed
            await self.aws.call(
                "s3", "delete_objects", Bucket=name, Delete={"Objects": keys, "Quiet": True}
            )
            removed += len(keys)

    async def delete(self, name: str) -> None:
        try:
            await self.aws.call("s3", "delete_bucket", Bucket=name)
        except PermanentError as exc:
            if exc.code not in ("NoSuchBucket", "404"):
                raise

    async def tags(self, name: str) -> dict[str, str]:
        """The bucket's tags ({} when it has none)."""
        try:
            answer = await self.aws.call("s3", "get_bucket_tagging", Bucket=name)
        except PermanentError as exc:
            if exc.code == "NoSuchTagSet":
                return {}
            raise
        return {t["Key"]: t["Value"] for t in answer.get("TagSet", [])}

    async def add_tags(self, name: str, tags: dict[str, str]) -> None:
        """Merge `tags` into the bucket's tags (PutBucketTagging replaces the whole set)."""
        merged = {**await self.tags(name), **tags}
        await self.aws.call(
            "s3",
            "put_bucket_tagging",
            Bucket=name,
            Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in sorted(merged.items())]},
        )

    async def object_etag(self, name: str, key: str) -> str | None:
        """The object's ETag without quotes, or None when there is no such object."""
        try:
            head = await self.aws.call("s3", "head_object", Bucket=name, Key=key)
        except PermanentError as exc:
            if exc.code in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return str(head.get("ETag", "")).strip('"') or None

    async def put_object(
        self, name: str, key: str, body: bytes, content_type: str = "application/octet-stream"
    ) -> None:
        await self.aws.call(
            "s3", "put_object", Bucket=name, Key=key, Body=body, ContentType=content_type
        )
