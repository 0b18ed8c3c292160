"""The Kubernetes API of an EKS cluster for cluster-svc (see `shared.adapters.eks_kube`): the
shared client, reached with DescribeCluster's endpoint and CA and an EKS token, plus waiting for
an object's state.

Objects are applied under the field manager "hyperpilot". Applying a kind the API server does
not serve yet is a temporary failure here: its CustomResourceDefinition comes with the
components cluster-svc installs and may not be registered yet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import boto3

from cluster_svc.domain.components.base import ClusterAccess, KubeObject
from shared.adapters.eks_kube import ClusterEndpoint, ClusterKube, KubeClients
from shared.adapters.eks_kube import eks_token as shared_eks_token
from shared.errors import StageError, TemporaryError
from shared.regions import scoped_region


def eks_token(session: boto3.session.Session, cluster_name: str, region: str) -> str:
    """A bearer token for `cluster_name`, signed with the session's credentials."""
    return shared_eks_token(session, cluster_name, region, KubeClient.SERVICE)


class KubeClient(ClusterKube):
    """get / apply / delete of any kind, found through API discovery; wait for a state."""

    SERVICE = "cluster-svc"
    FIELD_MANAGER = "hyperpilot"
    INVALID_HINT = (
        "the object was rejected by the API server's validation; this is a defect in the"
        " declared manifests"
    )
    FORBIDDEN_HINT = (
        "give cluster-svc's IAM principal an EKS access entry with AmazonEKSClusterAdminPolicy"
        " (the access_entries stage), then retry"
    )

    def _not_served(self, what: str, api_version: str, kind: str) -> StageError:
        return TemporaryError(
            "KindNotServed",
            f"{what}: the API server does not serve {api_version} {kind} yet",
            "its CustomResourceDefinition is still being registered; retry shortly",
        )

    async def wait(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None,
        condition: Callable[[KubeObject | None], bool],
        timeout: float = 60.0,
        interval: float = 0.2,
    ) -> KubeObject | None:
        """Poll until `condition(object)` holds (for callers outside stages, which poll instead)."""
        deadline = time.monotonic() + timeout
        while True:
            current = await self.get(api_version, kind, name, namespace)
            if condition(current):
                return current
            if time.monotonic() > deadline:
                where = f"{namespace}/{name}" if namespace else name
                raise TemporaryError(
                    "KubernetesWaitTimeout",
                    f"{kind} {where} did not reach the wanted state in {timeout:g}s",
                )
            await asyncio.sleep(interval)


class EksKubeFactory:
    """Kubernetes clients for EKS clusters, one per cluster endpoint, reused across stages."""

    def __init__(self, region: str, session: boto3.session.Session | None = None) -> None:
        self._clients = KubeClients(region, KubeClient, session)

    def __call__(self, access: ClusterAccess) -> KubeClient:
        return self._clients(
            ClusterEndpoint(access.name, access.endpoint, access.ca_data), scoped_region()
        )

    def close(self) -> None:
        self._clients.close()


__all__ = ["EksKubeFactory", "KubeClient", "eks_token"]
