"""Tags on EKS clusters, node groups, add-ons, access entries and pod identity associations."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from sim.aws.eks.base import EksBase
from sim.aws.errors import AwsError


class TagOps(EksBase):
    """Tag operations."""

    def _tagged(self, arn: str) -> dict[str, str]:
        arn = unquote(arn)
        for cluster in self.clusters.values():
            if cluster.arn == arn:
                return cluster.tags
            for collection in (
                cluster.addons,
                cluster.nodegroups,
                cluster.access_entries,
                cluster.pod_identities,
            ):
                for item in collection.values():
                    for key in ("addonArn", "nodegroupArn", "accessEntryArn", "associationArn"):
                        if item.get(key) == arn:
                            tags: dict[str, str] = item.setdefault("tags", {})
                            return tags
        raise AwsError("NotFoundException", f"Resource {arn} not found")

    def tag_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        self._tagged(p["resourceArn"]).update(p["tags"])
        return {}

    def untag_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        tags = self._tagged(p["resourceArn"])
        for key in p["tagKeys"]:
            tags.pop(key, None)
        return {}

    def list_tags_for_resource(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"tags": dict(self._tagged(p["resourceArn"]))}
