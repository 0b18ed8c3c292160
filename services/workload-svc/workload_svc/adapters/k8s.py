"""A cluster's Kubernetes API for workloads (see `shared.adapters.eks_kube`): the shared
client plus what workloads read and write: claims, pod logs and Secrets."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.client.exceptions import ApiException

from shared.adapters.eks_kube import ClusterEndpoint, ClusterKube, KubeObject
from shared.adapters.eks_kube import KubeClients as _KubeClients
from shared.errors import PermanentError, TemporaryError

__all__ = ["ClusterEndpoint", "KubeClients", "KubeObject", "WorkloadKube"]


class WorkloadKube(ClusterKube):
    """Apply, read and delete workload objects; pods, their logs, nodes, claims, secrets."""

    SERVICE = "workload-svc"
    FIELD_MANAGER = "hyperpilot-workloads"
    INVALID_HINT = "the API server's schema refused the object; check the recipe's inputs"

    async def claim_exists(self, namespace: str, name: str) -> bool:
        def call() -> bool:
            try:
                self.core.read_namespaced_persistent_volume_claim(name, namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        return await self._run(f"get pvc {namespace}/{name}", call)

    async def pod_log(self, namespace: str, pod: str, container: str | None = None) -> str:
        """The container's whole current log ('' when the pod has not started)."""

        def call() -> str:
            try:
                response = self.core.read_namespaced_pod_log(
                    pod, namespace, container=container, _preload_content=False
                )
            except ApiException as exc:
                if exc.status in (400, 404):
                    return ""
                raise
            data: bytes = response.data  # type: ignore[attr-defined]
            return data.decode("utf-8", errors="replace")

        return await self._run(f"logs {namespace}/{pod}", call)

    async def put_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Create or replace an Opaque Secret (values are not echoed in any error)."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "hyperpilot"},
            },
            "stringData": data,
        }

        def call() -> None:
            try:
                self.core.create_namespaced_secret(namespace, body)  # type: ignore[arg-type]
            except ApiException as exc:
                if exc.status != 409:
                    raise
                self.core.replace_namespaced_secret(name, namespace, body)  # type: ignore[arg-type]

        try:
            await asyncio.to_thread(call)
        except ApiException as exc:
            # The API server's message may quote the body: keep only the status.
            raise PermanentError(
                f"Kubernetes{exc.status}",
                f"writing Secret {namespace}/{name} failed with HTTP {exc.status}",
                "check workload-svc's access to the cluster",
            ) from None
        except Exception as exc:
            raise TemporaryError(
                "KubernetesApiUnreachable",
                f"writing Secret {namespace}/{name} failed ({type(exc).__name__})",
            ) from None

    async def secret_exists(self, namespace: str, name: str) -> bool:
        def call() -> bool:
            try:
                self.core.read_namespaced_secret(name, namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        return await self._run(f"get secret {namespace}/{name}", call)


class KubeClients(_KubeClients[WorkloadKube]):
    """One WorkloadKube per cluster endpoint."""

    def __init__(self, region: str) -> None:
        super().__init__(region, WorkloadKube)
