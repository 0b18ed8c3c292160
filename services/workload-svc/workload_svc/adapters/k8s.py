"""A cluster's Kubernetes API for workloads (see `shared.adapters.eks_kube`): the shared
client plus what workloads read and write: claims, pods and their logs (current and previous),
Kubernetes events and Secrets."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.client.exceptions import ApiException

from shared.adapters.eks_kube import ClusterEndpoint, ClusterKube, KubeObject
from shared.adapters.eks_kube import KubeClients as _KubeClients
from shared.errors import PermanentError, TemporaryError

__all__ = ["ClusterEndpoint", "KubeClients", "KubeObject", "WorkloadKube"]


class WorkloadKube(ClusterKube):
    """Apply, read and delete workload objects; pods, their logs, events, nodes, claims, secrets."""

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

    async def scrape(self, namespace: str, pod: str, port: int, path: str = "metrics") -> str:
        """GET a pod's port through the API server's pod proxy (how an exporter is read)."""

        def call() -> str:
            text: str = self.core.connect_get_namespaced_pod_proxy_with_path(
                f"{pod}:{port}", namespace, path
            )
            return text

        return await self._run(f"scrape pod {namespace}/{pod}:{port}/{path}", call)

    async def bearer(self) -> str:
        """The bearer token this client sends (renewed when due): what a scraper outside the
        client, a Prometheus server, authenticates with."""

        def call() -> str:
            value = self.api.configuration.get_api_key_with_prefix("authorization") or ""
            return str(value).removeprefix("Bearer ").strip()

        return await self._run("read the bearer token", call)

    async def pod(self, namespace: str, name: str) -> KubeObject | None:
        """One pod, or None when there is none by that name."""

        def call() -> KubeObject | None:
            try:
                found = self.core.read_namespaced_pod(name, namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            pod: KubeObject = self.api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
            return pod

        return await self._run(f"get pod {namespace}/{name}", call)

    async def pods_in(self, namespace: str | None, selector: str = "") -> list[KubeObject]:
        """Pods matching a label selector in one namespace, or in every namespace (None)."""
        if namespace is not None:
            return await self.pods(namespace, selector)

        def call() -> list[KubeObject]:
            found = self.core.list_pod_for_all_namespaces(label_selector=selector)
            return [self.api.sanitize_for_serialization(p) for p in found.items]  # type: ignore[no-untyped-call]

        return await self._run(f"list pods in every namespace {selector}", call)

    async def events(
        self, namespace: str | None, field_selector: str | None, limit: int
    ) -> list[KubeObject]:
        """core/v1 Events of one namespace (or every namespace: None) matching the field
        selector, at most `limit` of them, read a page at a time; in the API server's order
        (the caller orders them by time)."""

        def call() -> list[KubeObject]:
            items: list[KubeObject] = []
            token: str | None = None
            while len(items) < limit:
                page = min(500, limit - len(items))
                kwargs: dict[str, Any] = {"limit": page}
                if field_selector:
                    kwargs["field_selector"] = field_selector
                if token:
                    kwargs["_continue"] = token
                if namespace is None:
                    found = self.core.list_event_for_all_namespaces(**kwargs)
                else:
                    found = self.core.list_namespaced_event(namespace, **kwargs)
                items.extend(
                    self.api.sanitize_for_serialization(e)  # type: ignore[no-untyped-call]
                    for e in found.items
                )
                token = found.metadata._continue if found.metadata else None
                if not token:
                    break
            return items[:limit]

        where = namespace if namespace is not None else "every namespace"
        return await self._run(f"list events in {where}", call)

    async def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str | None = None,
        previous: bool = False,
        tail: int | None = None,
    ) -> str:
        """The container's current log, or (previous) the log of its instance before the last
        restart; the last `tail` lines if given. '' when there is none (not started yet, no
        earlier instance)."""

        def call() -> str:
            kwargs: dict[str, Any] = {"container": container, "_preload_content": False}
            if previous:
                kwargs["previous"] = True
            if tail is not None:
                kwargs["tail_lines"] = tail
            try:
                response = self.core.read_namespaced_pod_log(pod, namespace, **kwargs)
            except ApiException as exc:
                if exc.status in (400, 404):
                    return ""
                raise
            data: bytes = response.data  # type: ignore[attr-defined]
            return data.decode("utf-8", errors="replace")

        what = f"{'previous ' if previous else ''}logs {namespace}/{pod}"
        return await self._run(what, call)

    async def put_secret(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        annotations: dict[str, str] | None = None,
    ) -> None:
        """Create or replace an Opaque Secret holding exactly `data` (values are not echoed in
        any error)."""
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "hyperpilot"},
        }
        if annotations:
            metadata["annotations"] = dict(annotations)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": metadata,
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

    async def secret_keys(self, namespace: str) -> list[KubeObject]:
        """The namespace's Secrets as name, type, keys and whether Hyperpilot wrote them: the
        values are dropped here, as they are read."""

        def call() -> list[KubeObject]:
            found = self.core.list_namespaced_secret(namespace)
            out: list[KubeObject] = []
            for item in found.items:
                meta = item.metadata
                labels = (meta.labels if meta else None) or {}
                out.append(
                    {
                        "name": meta.name if meta else None,
                        "type": item.type,
                        "keys": sorted({*(item.data or {}), *(item.string_data or {})}),
                        "managed": labels.get("app.kubernetes.io/managed-by") == "hyperpilot",
                    }
                )
            return sorted(out, key=lambda s: str(s["name"]))

        return await self._run(f"list secrets in {namespace}", call)


class KubeClients(_KubeClients[WorkloadKube]):
    """One WorkloadKube per cluster endpoint."""

    def __init__(self, region: str) -> None:
        super().__init__(region, WorkloadKube)
