"""One GET to a space's web app through the API server's service proxy
(`/api/v1/namespaces/{ns}/services/{name}:{port}/proxy/{path}`), with workload-svc's own EKS
credentials: the control plane opens no port and the caller never reaches the cluster's
network. Every segment of `path` is checked and encoded on its own, so a path cannot climb out
of the space's Service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.boundary import dns_label, path_segment
from shared.errors import PermanentError

TIMEOUT = 30.0
MAX_BODY = 2 * 1024 * 1024


@dataclass(frozen=True)
class SpaceAnswer:
    status: int
    content_type: str
    body: str


def proxy_template(
    namespace: str, service: str, port: int, path: str
) -> tuple[str, dict[str, str]]:
    """The path template and its parameters, each one checked segment."""
    params = {
        "namespace": dns_label(namespace, "namespace"),
        "service": dns_label(service, "space") + ":" + str(int(port)),
    }
    template = "/api/v1/namespaces/{namespace}/services/{service}/proxy"
    segments = [s for s in path.split("/") if s != ""]
    for index, segment in enumerate(segments):
        path_segment(segment, "path")
        params[f"p{index}"] = segment
        template += "/{p" + str(index) + "}"
    if path.endswith("/") or not segments:
        template += "/"
    return template, params


async def space_request(
    kube: Any, namespace: str, service: str, port: int, path: str
) -> SpaceAnswer:
    """GET `path` of the space's Service (a `shared.adapters.eks_kube.ClusterKube`)."""
    template, params = proxy_template(namespace, service, port, path)

    def call() -> SpaceAnswer:
        method, url, headers, payload, _ = kube.api.param_serialize(
            method="GET",
            resource_path=template,
            path_params=params,
            header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
        )
        raw = kube.api.call_api(
            method, url, header_params=headers, body=payload, _request_timeout=TIMEOUT
        )
        data: bytes = raw.read() or b""
        status = int(raw.status)
        if status == 503:
            raise PermanentError(
                "SpaceUnavailable",
                f"space {service} cannot answer yet",
                "wait until the space is Running (GET .../spaces/{space})",
            )
        return SpaceAnswer(
            status,
            str(raw.headers.get("Content-Type") or "text/plain"),
            data[:MAX_BODY].decode(errors="replace"),
        )

    result: SpaceAnswer = await kube._run(f"open space {namespace}/{service}", call)
    return result
