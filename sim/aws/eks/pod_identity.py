"""EKS Pod Identity associations."""

from __future__ import annotations

from typing import Any

from sim.aws.eks.base import EksBase
from sim.aws.eks.model import EksCluster, page_of
from sim.aws.errors import AwsError


class PodIdentityOps(EksBase):
    """Pod identity association operations."""

    def create_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        return {"association": self._put_pod_identity(cluster, p)}

    def _association(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        association = cluster.pod_identities.get(p["associationId"])
        if association is None:
            raise AwsError(
                "ResourceNotFoundException", f"Association not found: {p['associationId']}"
            )
        return cluster, association

    def describe_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"association": self._association(p)[1]}

    def list_pod_identity_associations(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._get(p["clusterName"])
        items = [
            a
            for a in cluster.pod_identities.values()
            if p.get("namespace") in (None, a["namespace"])
            and p.get("serviceAccount") in (None, a["serviceAccount"])
        ]
        page, token = page_of(items, p)
        return {
            "associations": [
                {
                    k: a[k]
                    for k in (
                        "clusterName",
                        "namespace",
                        "serviceAccount",
                        "associationArn",
                        "associationId",
                        "ownerArn",
                    )
                }
                for a in page
            ],
            "nextToken": token,
        }

    def update_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        _, association = self._association(p)
        if p.get("roleArn"):
            self._check_role(p["roleArn"])
            association["roleArn"] = p["roleArn"]
        for key in ("disableSessionTags", "targetRoleArn", "policy"):
            if p.get(key) is not None:
                association[key] = p[key]
        association["modifiedAt"] = self.ctx.now()
        return {"association": association}

    def delete_pod_identity_association(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, association = self._association(p)
        del cluster.pod_identities[association["associationId"]]
        return {"association": association}
