"""A cluster's Kubernetes API for inference endpoints, reached the way `aws eks get-token` does.

The endpoint and CA come from the `clusters` read model (cluster-svc recorded DescribeCluster's
answer there); the bearer token is `k8s-aws-v1.` + base64url of a presigned STS
GetCallerIdentity URL signing the header `x-k8s-aws-id: <EKS cluster name>`, renewed well within
the 15 minutes EKS accepts it. Objects are applied with server-side apply (field manager
"hyperpilot-inference"). The client is synchronous, so each call runs in a thread.

`invoke` reaches a model server through the API server's service proxy
(`/api/v1/namespaces/{ns}/services/{name}:{port}/proxy/{path}`): the control plane needs no
route into the cluster's network, and the request is authenticated as the service's principal.
"""

from __future__ import annotations

import asyncio
import base64
import json
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import urllib3
from botocore.signers import RequestSigner
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from shared.errors import PermanentError, StageError, TemporaryError

T = TypeVar("T")
KubeObject = dict[str, Any]
FIELD_MANAGER = "hyperpilot-inference"
RENEW_AFTER = 10 * 60.0
PROXY_TIMEOUT = 60.0


@dataclass(frozen=True)
class ClusterEndpoint:
    eks_name: str
    endpoint: str
    ca_data: str  # base64 PEM


@dataclass(frozen=True)
class ProxyAnswer:
    status: int
    body: bytes
    content_type: str


def _token(session: boto3.session.Session, cluster: str, region: str) -> str:
    credentials = session.get_credentials()
    if credentials is None:
        raise PermanentError(
            "NoCredentials",
            "no AWS credentials to sign an EKS token with",
            "configure credentials (environment, profile or instance role) for inference-svc",
        )
    sts = session.client("sts", region_name=region)
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", credentials, sts.meta.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster},
            "context": {},
        },
        region_name=region,
        expires_in=60,
        operation_name="",
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def kube_error(exc: Exception, what: str) -> StageError:
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        try:
            message = str(json.loads(exc.body or "{}").get("message") or exc.reason)
        except (TypeError, ValueError, AttributeError):
            message = str(exc.reason)
        if status == 429 or status >= 500:
            return TemporaryError(f"Kubernetes{status}", f"{what}: {message}")
        if status in (401, 403):
            return PermanentError(
                "KubernetesForbidden",
                f"{what}: {message}",
                "give inference-svc's IAM principal an EKS access entry on the cluster",
            )
        if status == 422:
            return PermanentError(
                "KubernetesInvalid",
                f"{what}: {message}",
                "the API server's schema refused the object; check the endpoint's spec",
            )
        return PermanentError(f"Kubernetes{status}", f"{what}: {message}")
    if isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError):
        return TemporaryError("KubernetesApiUnreachable", f"{what}: {exc}")
    return PermanentError(type(exc).__name__, f"{what}: {exc}")


class InferenceKube:
    """Apply, read, patch and delete endpoint objects; list pods and nodes; proxy a request."""

    def __init__(self, api: k8s.ApiClient, cache_file: Path) -> None:
        self.api = api
        self.core = k8s.CoreV1Api(api)
        self._cache_file = cache_file
        self._dynamic: DynamicClient | None = None
        self._lock = threading.Lock()

    def _resource(self, api_version: str, kind: str) -> Any:
        with self._lock:
            if self._dynamic is None:
                self._dynamic = DynamicClient(  # type: ignore[no-untyped-call]
                    self.api, cache_file=str(self._cache_file)
                )
            try:
                return self._dynamic.resources.get(api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                # A CRD installed after discovery: look again once.
                self._dynamic.resources.invalidate_cache()
                try:
                    return self._dynamic.resources.get(api_version=api_version, kind=kind)
                except ResourceNotFoundError:
                    return None

    async def _run(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(fn)
        except StageError:
            raise
        except Exception as exc:
            raise kube_error(exc, what) from exc

    async def serves(self, api_version: str, kind: str) -> bool:
        return await self._run(
            f"discover {kind}", lambda: self._resource(api_version, kind) is not None
        )

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> KubeObject | None:
        def call() -> KubeObject | None:
            resource = self._resource(api_version, kind)
            if resource is None:
                return None
            try:
                found: KubeObject = resource.get(name=name, namespace=namespace).to_dict()
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            return found

        return await self._run(f"get {kind} {namespace}/{name}", call)

    async def apply(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        what = f"apply {obj['kind']} {meta.get('namespace')}/{meta['name']}"

        def call() -> KubeObject:
            resource = self._resource(obj["apiVersion"], obj["kind"])
            if resource is None:
                raise PermanentError(
                    "OperatorMissing",
                    f"{what}: the API server does not serve {obj['apiVersion']} {obj['kind']}",
                    "install the operator that brings this kind",
                )
            applied: KubeObject = resource.server_side_apply(
                body=obj,
                name=meta["name"],
                namespace=meta.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
            ).to_dict()
            return applied

        return await self._run(what, call)

    async def merge_patch(
        self, api_version: str, kind: str, name: str, namespace: str, patch: KubeObject
    ) -> KubeObject:
        """A JSON merge patch: only the fields named change (a label, the replicas)."""

        def call() -> KubeObject:
            resource = self._resource(api_version, kind)
            if resource is None:
                raise PermanentError(
                    "OperatorMissing",
                    f"the API server does not serve {api_version} {kind}",
                    "install the operator that brings this kind",
                )
            patched: KubeObject = resource.patch(
                body=patch,
                name=name,
                namespace=namespace,
                content_type="application/merge-patch+json",
            ).to_dict()
            return patched

        return await self._run(f"patch {kind} {namespace}/{name}", call)

    async def delete(self, api_version: str, kind: str, name: str, namespace: str) -> bool:
        def call() -> bool:
            resource = self._resource(api_version, kind)
            if resource is None:
                return False
            try:
                resource.delete(
                    name=name, namespace=namespace, body={"propagationPolicy": "Background"}
                )
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        return await self._run(f"delete {kind} {namespace}/{name}", call)

    async def pods(self, namespace: str, selector: str) -> list[KubeObject]:
        def call() -> list[KubeObject]:
            found = self.core.list_namespaced_pod(namespace, label_selector=selector)
            return [self.api.sanitize_for_serialization(p) for p in found.items]  # type: ignore[no-untyped-call]

        return await self._run(f"list pods {selector}", call)

    async def nodes(self, selector: str = "") -> list[KubeObject]:
        def call() -> list[KubeObject]:
            found = self.core.list_node(label_selector=selector)
            return [self.api.sanitize_for_serialization(n) for n in found.items]  # type: ignore[no-untyped-call]

        return await self._run("list nodes", call)

    async def services(self, namespace: str, selector: str) -> list[KubeObject]:
        def call() -> list[KubeObject]:
            found = self.core.list_namespaced_service(namespace, label_selector=selector)
            return [self.api.sanitize_for_serialization(s) for s in found.items]  # type: ignore[no-untyped-call]

        return await self._run(f"list services {selector}", call)

    async def proxy(
        self, namespace: str, service: str, port: int, path: str, body: bytes
    ) -> ProxyAnswer:
        """POST `body` to `path` of a Service, through the API server's service proxy."""
        url = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/{path.lstrip('/')}"

        def call() -> ProxyAnswer:
            method, full_url, headers, payload, _ = self.api.param_serialize(
                method="POST",
                resource_path=url,
                header_params={"Content-Type": "application/json", "Accept": "application/json"},
                body=json.loads(body) if body else None,
                auth_settings=["BearerToken"],
            )
            raw = self.api.call_api(
                method,
                full_url,
                header_params=headers,
                body=payload,
                _request_timeout=PROXY_TIMEOUT,
            )
            data: bytes = raw.read() or b""  # type: ignore[no-untyped-call]
            status = int(raw.status)
            if status == 503 or (
                status == 404
                and b"not found" in data.lower()[:200]
                and b'"kind":"Status"' in data.replace(b" ", b"")
            ):
                raise PermanentError(
                    "EndpointUnavailable",
                    f"service {namespace}/{service} cannot answer: {_status_text(data)}",
                    "wait until the endpoint is available (GET /api/v1/endpoints/{name})",
                )
            return ProxyAnswer(
                status, data, str(raw.headers.get("Content-Type") or "application/json")
            )

        return await self._run(f"invoke {namespace}/{service}", call)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]


def _status_text(data: bytes) -> str:
    try:
        return str(json.loads(data).get("message") or data[:200].decode(errors="replace"))
    except (ValueError, AttributeError):
        return data[:200].decode(errors="replace")


class KubeClients:
    """One client per cluster endpoint, reused; tokens renewed before EKS refuses them."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.session = boto3.session.Session(region_name=region)
        self._dir = Path(tempfile.mkdtemp(prefix="hyperpilot-inference-"))
        self._clients: dict[ClusterEndpoint, InferenceKube] = {}
        self._lock = threading.Lock()

    def __call__(self, target: ClusterEndpoint) -> InferenceKube:
        with self._lock:
            found = self._clients.get(target)
            if found is None:
                found = InferenceKube(
                    self._api(target), self._dir / f"{target.eks_name}-{len(self._clients)}.json"
                )
                self._clients[target] = found
            return found

    def _api(self, target: ClusterEndpoint) -> k8s.ApiClient:
        ca_file = self._dir / f"{target.eks_name}-{abs(hash(target.ca_data))}.crt"
        ca_file.write_bytes(base64.b64decode(target.ca_data))
        config = k8s.Configuration(host=target.endpoint)
        config.ssl_ca_cert = str(ca_file)
        config.verify_ssl = True
        config.api_key_prefix["authorization"] = "Bearer"
        state: dict[str, Any] = {"token": "", "issued": 0.0}
        lock = threading.Lock()

        def refresh(configuration: k8s.Configuration) -> None:
            with lock:
                if not state["token"] or time.monotonic() - float(state["issued"]) > RENEW_AFTER:
                    state["token"] = _token(self.session, target.eks_name, self.region)
                    state["issued"] = time.monotonic()
                configuration.api_key["authorization"] = str(state["token"])

        config.refresh_api_key_hook = refresh  # type: ignore[assignment]
        refresh(config)
        return k8s.ApiClient(config)

    def close(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            client.close()
