"""AWS Load Balancer Controller (chart aws-load-balancer-controller 1.13.2, controller v2.13.2):
service account, RBAC, the controller Deployment in kube-system and the `alb` IngressClass.

Its service account carries no IAM role here: the controller's AWS permissions come from an
IRSA role that the identity stages attach (annotation `eks.amazonaws.com/role-arn`)."""

from __future__ import annotations

from cluster_svc.domain.components.base import Component
from cluster_svc.domain.components.objects import container, deployment, rbac, rule

NAMESPACE = "kube-system"
CHART_VERSION = "1.13.2"
APP_VERSION = "v2.13.2"
NAME = "aws-load-balancer-controller"


def load_balancer_controller(cluster_name: str, region: str) -> Component:
    return Component(
        name=NAME,
        kind="manifests",
        version=CHART_VERSION,
        namespace=NAMESPACE,
        manifests=(
            *rbac(
                NAME,
                NAMESPACE,
                [
                    rule(
                        [""],
                        ["endpoints", "namespaces", "nodes", "pods", "secrets"],
                        ["get", "list", "watch"],
                    ),
                    rule(
                        [""],
                        ["services", "services/status"],
                        ["get", "list", "watch", "patch", "update"],
                    ),
                    rule([""], ["events"], ["create", "patch"]),
                    rule(["discovery.k8s.io"], ["endpointslices"], ["get", "list", "watch"]),
                    rule(["networking.k8s.io"], ["ingressclasses"], ["get", "list", "watch"]),
                    rule(
                        ["networking.k8s.io"],
                        ["ingresses", "ingresses/status"],
                        ["get", "list", "watch", "patch", "update"],
                    ),
                    rule(["elbv2.k8s.aws"], ["*"], ["*"]),
                    rule(["coordination.k8s.io"], ["leases"], ["create", "get", "update", "patch"]),
                ],
            ),
            deployment(
                NAME,
                NAMESPACE,
                [
                    container(
                        NAME,
                        f"public.ecr.aws/eks/aws-load-balancer-controller:{APP_VERSION}",
                        args=[
                            f"--cluster-name={cluster_name}",
                            f"--aws-region={region}",
                            "--ingress-class=alb",
                        ],
                        ports=[{"containerPort": 9443, "name": "webhook-server"}],
                    )
                ],
                account=NAME,
                replicas=2,
            ),
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "IngressClass",
                "metadata": {"name": "alb"},
                "spec": {"controller": "ingress.k8s.aws/alb"},
            },
        ),
    )
