"""What a fresh EKS cluster already has: system namespaces, the `kubernetes` Service, the
nodes of its managed node groups and the default add-ons' workloads (CoreDNS, VPC CNI, kube-proxy)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

ECR = "602401143452.dkr.ecr.us-east-1.amazonaws.com"
SYSTEM_WORKLOADS = (
    ("Deployment", "coredns", f"{ECR}/eks/coredns:v1.11.4-eksbuild.2"),
    ("DaemonSet", "aws-node", f"{ECR}/amazon-k8s-cni:v1.19.2-eksbuild.1"),
    ("DaemonSet", "kube-proxy", f"{ECR}/eks/kube-proxy:v1.33.0-minimal-eksbuild.2"),
)

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
    server.nodes.sync_node_groups(server.facts.node_groups)
    for kind, name, image in SYSTEM_WORKLOADS:
        labels = {"k8s-app": name}
        spec: dict[str, Any] = {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": name, "image": image}],
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        }
        if kind == "Deployment":
            spec["replicas"] = 2
            spec["template"]["spec"]["priorityClassName"] = "system-cluster-critical"
            spec["template"]["spec"]["tolerations"] = [
                {"key": "CriticalAddonsOnly", "operator": "Exists"}
            ]
        rt = server.api.resolve("apps/v1", kind)
        server.api.create(
            rt,
            "kube-system",
            {
                "metadata": {"name": name, "labels": {"eks.amazonaws.com/component": name}},
                "spec": spec,
            },
            manager="eks",
        )
