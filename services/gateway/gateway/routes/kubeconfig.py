"""A cluster's kubeconfig: how kubectl (and `hyperpilot jobs exec`, `endpoints port-forward`)
reach its Kubernetes API with the caller's own AWS identity.

It names the EKS endpoint and its certificate authority (public data, as `aws eks
update-kubeconfig` writes them) and authenticates with an exec credential plugin: by default
`hyperpilot clusters token`, which signs an EKS token from the caller's AWS credentials (the
same token `aws eks get-token` makes), or `aws eks get-token` itself (`?plugin=aws`). No token
or secret is ever in it: what the caller may do is what the cluster's access entries give their
IAM identity. Viewers may read it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query

from gateway import records
from gateway.deps import Pool, Viewer
from gateway.routes.models import LIVE_READ_ERRORS
from gateway.routing import PrefixedRoute
from shared.contracts.cluster import NAME_PATTERN

router = APIRouter(
    route_class=PrefixedRoute, prefix="/api/v1", tags=["clusters"], responses=LIVE_READ_ERRORS
)

ClusterNamePath = Annotated[str, Path(min_length=1, max_length=63, pattern=NAME_PATTERN)]


def kubeconfig(
    name: str, eks_cluster: str, region: str, endpoint: str, ca_data: str, plugin: str
) -> dict[str, Any]:
    if plugin == "aws":
        command = "aws"
        args = ["eks", "get-token", "--cluster-name", eks_cluster, "--region", region]
    else:
        command = "hyperpilot"
        args = ["clusters", "token", eks_cluster, "--region", region]
    context = f"hyperpilot-{name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": endpoint, "certificate-authority-data": ca_data},
            }
        ],
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": command,
                        "args": args,
                        "interactiveMode": "Never",
                        "provideClusterInfo": False,
                    }
                },
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "preferences": {},
    }


@router.get(
    "/clusters/{name}/kubeconfig",
    response_model=None,
    summary="A kubeconfig for the cluster's Kubernetes API: its endpoint and certificate"
    " authority, authenticated by the caller's own AWS identity (no token inside)",
)
async def cluster_kubeconfig(
    name: ClusterNamePath,
    pool: Pool,
    _: Viewer,
    plugin: Annotated[
        Literal["hyperpilot", "aws"],
        Query(
            description="the credential plugin: `hyperpilot clusters token` or `aws eks get-token`"
        ),
    ] = "hyperpilot",
) -> dict[str, Any]:
    cluster = await records.cluster(pool, name)
    endpoint, ca_data = await records.kubernetes_api(pool, cluster)
    eks = cluster.feature_target().eks_cluster
    return kubeconfig(cluster.name, eks, cluster.region, endpoint, ca_data, plugin)
