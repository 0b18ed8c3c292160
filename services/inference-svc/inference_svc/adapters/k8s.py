"""A cluster's Kubernetes API for inference endpoints (see `shared.adapters.eks_kube`): the
shared client plus merge patches, services and invoking a model server.

`proxy` reaches a model server through the API server's service proxy
(`/api/v1/namespaces/{ns}/services/{name}:{port}/proxy/{path}`): the control plane needs no
route into the cluster's network, and the request is authenticated as the service's principal.
Its URL is a fixed template whose every parameter is checked (a namespace users may deploy to,
a DNS-1123 Service name, a port, the segments of one of the inference paths, confined there) and
percent-encoded on its own by the client, so no value can add a segment, climb with `..`, or
carry a query or another host.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import boto3

from inference_svc.domain.render import INVOKE_PATHS
from shared.adapters.eks_kube import (
    ClusterEndpoint,
    ClusterKube,
    KubeObject,
    eks_token,
    list_items,
)
from shared.adapters.eks_kube import KubeClients as _KubeClients
from shared.boundary import confined_subpath, dns_label, path_segment
from shared.boundary import namespace as user_namespace
from shared.errors import PermanentError
from shared.validation import RuleViolation

__all__ = [
    "ClusterEndpoint",
    "InferenceKube",
    "KubeClients",
    "KubeObject",
    "ProxyAnswer",
    "proxy_path",
]

PROXY_TIMEOUT = 60.0


@dataclass(frozen=True)
class ProxyAnswer:
    status: int
    body: bytes
    content_type: str


def proxy_path(
    ns: str, service: str, port: int, path: str, allowed: Sequence[str] = INVOKE_PATHS
) -> tuple[str, dict[str, str]]:
    """The service proxy's path template and its parameters, each value checked: the client
    percent-encodes every parameter on its own (`param_serialize(path_params=...)`), so a
    parameter is always exactly one segment. `path` must be one of `allowed` or below one, as
    it is (no escape, no '.' or '..' segment, no trailing '/')."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise RuleViolation(f"port {port!r} is not a port", "use a port from 1 to 65535")
    plain = confined_subpath(path, allowed, "path")
    if plain != path:
        # Escaped or dotted, even when it resolves to an allowed path: the proxy gets one form.
        raise RuleViolation(
            f"path {path[:80]!r} is not in its plain form",
            "use " + ", ".join(allowed),
        )
    segments = plain.strip("/").split("/")
    params = {
        "namespace": user_namespace(ns, "namespace"),
        "service": dns_label(service, "service") + ":" + str(port),
    }
    template = "/api/v1/namespaces/{namespace}/services/{service}/proxy"
    for index, segment in enumerate(segments):
        path_segment(segment, "path")
        params[f"p{index}"] = segment
        template += "/{p" + str(index) + "}"
    return template, params


class InferenceKube(ClusterKube):
    """Apply, read, patch and delete endpoint objects; list pods and nodes; proxy a request."""

    SERVICE = "inference-svc"
    FIELD_MANAGER = "hyperpilot-inference"
    INVALID_HINT = "the API server's schema refused the object; check the endpoint's spec"

    async def services(self, namespace: str, selector: str) -> list[KubeObject]:
        def call() -> list[KubeObject]:
            services = self.api_path("api", "v1", "namespaces", namespace, "services")
            return list_items(services, labelSelector=selector)

        return await self._run(f"list services {selector}", call)

    async def proxy(
        self,
        namespace: str,
        service: str,
        port: int,
        path: str,
        body: bytes,
        allowed: Sequence[str] = INVOKE_PATHS,
    ) -> ProxyAnswer:
        """POST `body` to `path` (one of `allowed`) of a Service, through the API server's
        service proxy. A value that is not safe in its segment is refused (RuleViolation)
        before anything is sent."""
        template, params = proxy_path(namespace, service, port, path, allowed)

        def call() -> ProxyAnswer:
            method, full_url, headers, payload, _ = self.api.param_serialize(
                method="POST",
                resource_path=template,
                path_params=params,
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


def _status_text(data: bytes) -> str:
    try:
        return str(json.loads(data).get("message") or data[:200].decode(errors="replace"))
    except (ValueError, AttributeError):
        return data[:200].decode(errors="replace")


class KubeClients(_KubeClients[InferenceKube]):
    """One InferenceKube per cluster endpoint."""

    def __init__(self, region: str) -> None:
        super().__init__(region, InferenceKube)


def _token(session: boto3.session.Session, cluster: str, region: str) -> str:
    return eks_token(session, cluster, region, InferenceKube.SERVICE)
