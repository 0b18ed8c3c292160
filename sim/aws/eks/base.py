"""The state every EKS operation shares: the clusters, lookups, the CA of clusters without
an emulator, timers, role checks, and the shape of an access entry."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import trustme

from sim.aws import moto_state
from sim.aws.context import SimContext, hex_id
from sim.aws.eks.model import EksCluster
from sim.aws.errors import AwsError


class EksBase:
    """The clusters and the helpers of every operation family."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self.clusters: dict[str, EksCluster] = {}
        self._ca: trustme.CA | None = None
        self._replies: dict[tuple[str, str], dict[str, Any]] = {}
        ctx.eks_kube_ready = lambda name: bool(
            (c := self.clusters.get(name)) is not None and c.kube_started
        )

    def _get(self, name: str) -> EksCluster:
        cluster = self.clusters.get(name)
        if cluster is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No cluster found for name: {name}.",
                extra={"clusterName": name},
            )
        return cluster

    def _active(self, name: str) -> EksCluster:
        cluster = self._get(name)
        if cluster.status != "ACTIVE":
            raise AwsError(
                "InvalidRequestException",
                f"Cluster '{name}' is in {cluster.status} state. It must be ACTIVE.",
                extra={"clusterName": name},
            )
        return cluster

    def _ca_pem(self) -> str:
        if self._ca is None:
            self._ca = trustme.CA()
        return self._ca.cert_pem.bytes().decode()

    def _later(self, delay: float, action: Callable[[], None]) -> None:
        self.ctx.scheduler.after(delay, action)

    def _check_role(self, arn: str, what: str = "Role") -> None:
        if not moto_state.role_exists(self.ctx.account_id, arn):
            raise AwsError("InvalidParameterException", f"{what} with arn: {arn}, does not exist")

    def _put_access_entry(self, cluster: EksCluster, p: dict[str, Any]) -> dict[str, Any]:
        principal = p["principalArn"]
        entry = {
            "clusterName": cluster.name,
            "principalArn": principal,
            "kubernetesGroups": p.get("kubernetesGroups") or [],
            "accessEntryArn": self.ctx.arn(
                "eks", f"access-entry/{cluster.name}/{principal.split(':')[-1]}/{uuid.uuid4()}"
            ),
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "tags": p.get("tags") or {},
            "username": p.get("username") or principal,
            "type": p.get("type") or "STANDARD",
        }
        cluster.access_entries[principal] = entry
        return entry

    def _put_pod_identity(
        self, cluster: EksCluster, p: dict[str, Any], owner: str | None = None
    ) -> dict[str, Any]:
        for existing in cluster.pod_identities.values():
            if (existing["namespace"], existing["serviceAccount"]) == (
                p["namespace"],
                p["serviceAccount"],
            ):
                raise AwsError(
                    "ResourceInUseException",
                    f"Association already exists: {existing['associationId']}",
                    extra={"clusterName": cluster.name},
                )
        self._check_role(p["roleArn"])
        association_id = "a-" + hex_id(17)
        association = {
            "clusterName": cluster.name,
            "namespace": p["namespace"],
            "serviceAccount": p["serviceAccount"],
            "roleArn": p["roleArn"],
            "associationArn": self.ctx.arn(
                "eks", f"podidentityassociation/{cluster.name}/{association_id}"
            ),
            "associationId": association_id,
            "tags": p.get("tags") or {},
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "ownerArn": owner,
            "disableSessionTags": bool(p.get("disableSessionTags", False)),
            "targetRoleArn": p.get("targetRoleArn"),
        }
        cluster.pod_identities[association_id] = association
        return association
