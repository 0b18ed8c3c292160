"""What a fresh EKS cluster already has: system namespaces, the `kubernetes` Service, nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


def bootstrap(server: ApiServer) -> None:
    ns_rt = server.api.registry.lookup("", "v1", "namespaces")
    svc_rt = server.api.registry.lookup("", "v1", "services")
    assert ns_rt is not None and svc_rt is not None
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        server.api.create(ns_rt, "", {"metadata": {"name": name}}, manager="kube-apiserver")
    server.api.create(
        svc_rt,
        "default",
        {
            "metadata": {
                "name": "kubernetes",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "clusterIP": server.api.ips.kubernetes_ip,
                "ports": [{"name": "https", "port": 443, "targetPort": 443}],
            },
        },
        manager="kube-apiserver",
    )
    server.nodes.add_system_nodes(server.system_nodes)
