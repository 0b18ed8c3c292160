"""FSx for Lustre file systems through boto3."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.fsx import FileSystem
from shared.errors import PermanentError

NOT_FOUND = "FileSystemNotFound"


def _file_system(view: dict[str, Any]) -> FileSystem:
    created_at = view.get("CreationTime")
    capacity = view.get("StorageCapacity")
    lustre = view.get("LustreConfiguration") or {}
    throughput = lustre.get("PerUnitStorageThroughput")
    return FileSystem(
        file_system_id=view["FileSystemId"],
        lifecycle=view.get("Lifecycle", "CREATING"),
        tags={t["Key"]: t["Value"] for t in view.get("Tags") or []},
        dns_name=view.get("DNSName"),
        mount_name=lustre.get("MountName"),
        capacity_gib=int(capacity) if capacity is not None else None,
        failure=(view.get("FailureDetails") or {}).get("Message"),
        created_at=created_at if isinstance(created_at, datetime) else None,
        deployment_type=lustre.get("DeploymentType"),
        throughput_per_tib=int(throughput) if throughput is not None else None,
    )


class FsxFileSystems:
    """Lustre file systems of the account and region."""

    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def list_file_systems(self) -> list[FileSystem]:
        systems: list[FileSystem] = []
        params: dict[str, Any] = {}
        while True:
            page = await self.aws.call("fsx", "describe_file_systems", **params)
            systems += [
                _file_system(v)
                for v in page.get("FileSystems", [])
                if v.get("FileSystemType") == "LUSTRE"
            ]
            if not page.get("NextToken"):
                return systems
            params["NextToken"] = page["NextToken"]

    async def describe(self, file_system_id: str) -> FileSystem | None:
        try:
            page = await self.aws.call(
                "fsx", "describe_file_systems", FileSystemIds=[file_system_id]
            )
        except PermanentError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise
        found = page.get("FileSystems", [])
        return _file_system(found[0]) if found else None

    async def create(self, request: dict[str, Any]) -> FileSystem:
        try:
            answer = await self.aws.call("fsx", "create_file_system", **request)
        except PermanentError as exc:
            raise PermanentError(exc.code, exc.message, _create_hint(exc.code)) from exc
        return _file_system(answer["FileSystem"])

    async def delete(self, file_system_id: str) -> None:
        try:
            await self.aws.call("fsx", "delete_file_system", FileSystemId=file_system_id)
        except PermanentError as exc:
            if exc.code != NOT_FOUND:
                raise


def _create_hint(code: str) -> str | None:
    if code == "ServiceLimitExceeded":
        return "request a higher FSx for Lustre storage quota in Service Quotas, or use less"
    if code in ("InvalidNetworkSettings", "BadRequest"):
        return "check the compute subnet and the security group (TCP 988 and 1018-1023 from itself)"
    return None
