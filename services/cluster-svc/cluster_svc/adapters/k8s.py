"""The Kubernetes API of an EKS cluster, reached the way `aws eks update-kubeconfig` does.

Endpoint and CA come from DescribeCluster; the bearer token is what `aws eks get-token` makes:
`k8s-aws-v1.` + base64url(a presigned STS GetCallerIdentity URL that signs the header
`x-k8s-aws-id: <cluster>`). EKS accepts such a token for 15 minutes, so it is renewed well
before that. Objects are applied with server-side apply (field manager "hyperpilot"): a
re-apply of the same object changes nothing, fields other managers own and we do not declare
are left alone, and a field we declare is taken over (the declared state is authoritative).

The official client is synchronous; each call runs in a thread so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import base64
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import boto3
import urllib3
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from cluster_svc.domain.components.base import ClusterAccess, KubeObject
from shared.adapters.eks_kube import eks_token as shared_eks_token
from shared.errors import PermanentError, StageError, TemporaryError

T = TypeVar("T")

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_LIFETIME = 15 * 60.0  # seconds EKS accepts a token for
TOKEN_RENEW_AFTER = 10 * 60.0  # renew with margin for clock skew and slow calls
PRESIGN_EXPIRES = 60  # what `aws eks get-token` asks for; EKS applies its own 15 minutes
FIELD_MANAGER = "hyperpilot"


def eks_token(session: boto3.session.Session, cluster_name: str, region: str) -> str:
    """A bearer token for `cluster_name`, signed with the session's credentials."""
    return shared_eks_token(session, cluster_name, region, "cluster-svc")


class EksTokens:
    """One cluster's token, renewed before EKS stops accepting it."""

    def __init__(
        self,
        session: boto3.session.Session,
        cluster_name: str,
        region: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session = session
        self.cluster_name = cluster_name
        self.region = region
        self.clock = clock
        self._token: str | None = None
        self._issued = 0.0
        self._lock = threading.Lock()

    def token(self) -> str:
        with self._lock:
            if self._token is None or self.clock() - self._issued >= TOKEN_RENEW_AFTER:
                self._token = eks_token(self.session, self.cluster_name, self.region)
                self._issued = self.clock()
            return self._token


def api_client(access: ClusterAccess, tokens: EksTokens, ca_dir: Path) -> k8s_client.ApiClient:
    """An ApiClient for the cluster; the bearer token is renewed on each request if due."""
    ca_file = ca_dir / f"{access.name}-ca.crt"
    ca_file.write_bytes(base64.b64decode(access.ca_data))
    config = k8s_client.Configuration(host=access.endpoint)
    config.ssl_ca_cert = str(ca_file)
    config.verify_ssl = True
    config.api_key_prefix["authorization"] = "Bearer"

    def refresh(configuration: k8s_client.Configuration) -> None:
        configuration.api_key["authorization"] = tokens.token()

    config.refresh_api_key_hook = refresh  # type: ignore[assignment]
    refresh(config)
    return k8s_client.ApiClient(config)


def kube_error(exc: Exception, what: str) -> StageError:
    """Classify a Kubernetes API failure; keep the API server's own message."""
    if isinstance(exc, ApiException):
        message = _status_message(exc) or str(exc.reason)
        status = int(exc.status or 0)
        if status == 429 or status >= 500:
            return TemporaryError(f"Kubernetes{status}", f"{what}: {message}")
        if status in (401, 403):
            return PermanentError(
                "KubernetesForbidden",
                f"{what}: {message}",
                "give cluster-svc's IAM principal an EKS access entry with"
                " AmazonEKSClusterAdminPolicy (the access_entries stage), then retry",
            )
        if status == 422:
            return PermanentError(
                "KubernetesInvalid",
                f"{what}: {message}",
                "the object was rejected by the API server's validation; this is a defect in"
                " the declared manifests",
            )
        return PermanentError(f"Kubernetes{status}", f"{what}: {message}")
    if isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError):
        return TemporaryError("KubernetesApiUnreachable", f"{what}: {exc}")
    return PermanentError(type(exc).__name__, f"{what}: {exc}")


def _status_message(exc: ApiException) -> str | None:
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message) if message else None


class KubeClient:
    """get / apply / delete / wait of any kind, found through API discovery."""

    def __init__(self, api: k8s_client.ApiClient, cache_file: Path) -> None:
        self.api = api
        self._dynamic: DynamicClient | None = None
        self._cache_file = cache_file
        self._lock = threading.Lock()

    def _client(self) -> DynamicClient:
        with self._lock:
            if self._dynamic is None:  # discovery: several requests, done once per cluster
                self._dynamic = DynamicClient(  # type: ignore[no-untyped-call]
                    self.api, cache_file=str(self._cache_file)
                )
            return self._dynamic

    def _resource(self, api_version: str, kind: str) -> Any:
        """The API resource serving this kind, or None. Discovery fills a shared cache lazily,
        so lookups are serialized; the calls made on the resource run in parallel."""
        client = self._client()
        with self._lock:
            try:
                return client.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                return None

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except StageError:
            raise
        except Exception as exc:
            raise kube_error(exc, what) from exc

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> KubeObject | None:
        def call() -> KubeObject | None:
            resource = self._resource(api_version, kind)
            if resource is None:
                return None  # the kind is not served (its CRD is absent), so neither is the object
            try:
                found = resource.get(name=name, namespace=_ns(resource, namespace))
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            result: KubeObject = found.to_dict()
            return result

        return await self._run(f"get {kind} {_ref(name, namespace)}", call)

    async def apply(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        what = f"apply {obj['kind']} {_ref(meta['name'], meta.get('namespace'))}"

        def call() -> KubeObject:
            resource = self._resource(obj["apiVersion"], obj["kind"])
            if resource is None:
                raise TemporaryError(
                    "KindNotServed",
                    f"{what}: the API server does not serve {obj['apiVersion']} {obj['kind']} yet",
                    "its CustomResourceDefinition is still being registered; retry shortly",
                )
            applied = resource.server_side_apply(
                body=obj,
                name=meta["name"],
                namespace=_ns(resource, meta.get("namespace")),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
            )
            result: KubeObject = applied.to_dict()
            return result

        return await self._run(what, call)

    async def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> bool:
        """False when the object was already gone."""

        def call() -> bool:
            resource = self._resource(api_version, kind)
            if resource is None:
                return False
            try:
                resource.delete(name=name, namespace=_ns(resource, namespace))
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        return await self._run(f"delete {kind} {_ref(name, namespace)}", call)

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
                raise TemporaryError(
                    "KubernetesWaitTimeout",
                    f"{kind} {_ref(name, namespace)} did not reach the wanted state in {timeout:g}s",
                )
            await asyncio.sleep(interval)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]


def _ns(resource: Any, namespace: str | None) -> str | None:
    return (namespace or "default") if resource.namespaced else None


def _ref(name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if namespace else name


class EksKubeFactory:
    """Kubernetes clients for EKS clusters, one per cluster endpoint, reused across stages."""

    def __init__(self, region: str, session: boto3.session.Session | None = None) -> None:
        self.region = region
        self.session = session or boto3.session.Session(region_name=region)
        self._dir = Path(tempfile.mkdtemp(prefix="hyperpilot-kube-"))
        self._clients: dict[tuple[str, str, str], KubeClient] = {}
        self._lock = threading.Lock()

    def __call__(self, access: ClusterAccess) -> KubeClient:
        key = (access.name, access.endpoint, access.ca_data)
        with self._lock:
            found = self._clients.get(key)
            if found is None:
                tokens = EksTokens(self.session, access.name, self.region)
                index = len(self._clients)
                found = KubeClient(
                    api_client(access, tokens, self._dir),
                    self._dir / f"{access.name}-{index}-discovery.json",
                )
                self._clients[key] = found
            return found

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for kube in clients:
            kube.close()


__all__ = [
    "FIELD_MANAGER",
    "EksKubeFactory",
    "EksTokens",
    "KubeClient",
    "eks_token",
]
