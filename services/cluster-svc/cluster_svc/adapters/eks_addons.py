"""EKS managed add-ons: describe, the versions EKS offers, create, update, delete.

Add-ons this control plane installs are tagged `managed-by=hyperpilot`, so what it owns is read
from AWS itself (level-triggered), not only from what an operation remembers.
"""

from __future__ import annotations

from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.dependencies import AddonState
from shared.errors import PermanentError

MANAGED_BY = {"managed-by": "hyperpilot"}


def addon_state(addon: dict[str, Any]) -> AddonState:
    tags = addon.get("tags") or {}
    issues = tuple(
        f"{i.get('code', 'Issue')}: {i.get('message', '')}".strip()
        for i in (addon.get("health") or {}).get("issues") or []
    )
    return AddonState(
        name=str(addon["addonName"]),
        version=str(addon.get("addonVersion", "")),
        status=str(addon.get("status", "")),
        managed=tags.get("managed-by") == MANAGED_BY["managed-by"],
        issues=issues,
    )


class EksAddons:
    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def describe(self, cluster: str, name: str) -> AddonState | None:
        try:
            found = await self.aws.call(
                "eks", "describe_addon", clusterName=cluster, addonName=name
            )
        except PermanentError as exc:
            if exc.code == "ResourceNotFoundException":
                return None
            raise
        return addon_state(found["addon"])

    async def versions(self, name: str, kubernetes_version: str) -> list[str]:
        versions: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"addonName": name, "kubernetesVersion": kubernetes_version}
            if token:
                params["nextToken"] = token
            page = await self.aws.call("eks", "describe_addon_versions", **params)
            for addon in page.get("addons") or []:
                versions += [v["addonVersion"] for v in addon.get("addonVersions") or []]
            token = page.get("nextToken")
            if not token:
                return versions

    async def create(self, cluster: str, name: str, version: str, request_token: str) -> None:
        try:
            await self.aws.call(
                "eks",
                "create_addon",
                clusterName=cluster,
                addonName=name,
                addonVersion=version,
                clientRequestToken=request_token,
                tags=MANAGED_BY,
            )
        except PermanentError as exc:
            if exc.code == "ResourceInUseException":
                return  # created meanwhile (another delivery); the next pass reads its state
            raise PermanentError(
                exc.code,
                f"EKS could not create add-on {name} {version} on {cluster}: {exc.message}",
                exc.hint
                or "check the add-on's requirements (IAM role, cluster version), then retry",
            ) from exc

    async def update(self, cluster: str, name: str, version: str) -> None:
        await self.aws.call(
            "eks",
            "update_addon",
            clusterName=cluster,
            addonName=name,
            addonVersion=version,
            resolveConflicts="PRESERVE",
        )

    async def delete(self, cluster: str, name: str) -> None:
        try:
            await self.aws.call("eks", "delete_addon", clusterName=cluster, addonName=name)
        except PermanentError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
