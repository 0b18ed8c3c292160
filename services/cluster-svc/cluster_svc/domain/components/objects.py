"""Builders of the plain Kubernetes objects the components are made of.

Helm charts render to exactly these kinds; building them here keeps each component module a
short declaration of what differs (names, images, rules, node affinity).
"""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.components.base import KubeObject

TOLERATE_ALL = [
    {"operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists", "effect": "NoExecute"},
]


def namespace(name: str) -> KubeObject:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account(name: str, ns: str, annotations: dict[str, str] | None = None) -> KubeObject:
    metadata: dict[str, Any] = {"name": name, "namespace": ns}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}


def rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def cluster_role(name: str, rules: list[dict[str, Any]]) -> KubeObject:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


def cluster_role_binding(name: str, role: str, account: str, ns: str) -> KubeObject:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
    }


def rbac(name: str, ns: str, rules: list[dict[str, Any]]) -> list[KubeObject]:
    """A service account with a cluster role of the same name bound to it."""
    return [
        service_account(name, ns),
        cluster_role(name, rules),
        cluster_role_binding(name, name, name, ns),
    ]


def container(
    name: str,
    image: str,
    *,
    args: list[str] | None = None,
    command: list[str] | None = None,
    env: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    mounts: list[dict[str, Any]] | None = None,
    security: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
    for key, value in (
        ("command", command),
        ("args", args),
        ("env", env),
        ("ports", ports),
        ("volumeMounts", mounts),
        ("securityContext", security),
    ):
        if value:
            spec[key] = value
    if requests or limits:
        spec["resources"] = {
            k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None
        }
    return spec


def instance_type_affinity(instance_types: list[str]) -> dict[str, Any]:
    """Schedule only on nodes of these instance types (HyperPod labels nodes with ml.* types)."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": instance_types,
                            }
                        ]
                    }
                ]
            }
        }
    }


def _pod_template(
    app: str,
    containers: list[dict[str, Any]],
    *,
    account: str | None,
    affinity: dict[str, Any] | None,
    tolerations: list[dict[str, Any]] | None,
    volumes: list[dict[str, Any]] | None,
    priority_class: str | None,
    host_network: bool,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if account:
        spec["serviceAccountName"] = account
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if volumes:
        spec["volumes"] = volumes
    if priority_class:
        spec["priorityClassName"] = priority_class
    if host_network:
        spec["hostNetwork"] = True
    return {"metadata": {"labels": {"app.kubernetes.io/name": app}}, "spec": spec}


def deployment(
    name: str,
    ns: str,
    containers: list[dict[str, Any]],
    *,
    account: str | None = None,
    replicas: int = 1,
    tolerations: list[dict[str, Any]] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> KubeObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/name": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": _pod_template(
                name,
                containers,
                account=account,
                affinity=None,
                tolerations=tolerations,
                volumes=volumes,
                priority_class=None,
                host_network=False,
            ),
        },
    }


def daemon_set(
    name: str,
    ns: str,
    containers: list[dict[str, Any]],
    *,
    account: str | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    priority_class: str | None = None,
    host_network: bool = False,
) -> KubeObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/name": name}},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": _pod_template(
                name,
                containers,
                account=account,
                affinity=affinity,
                tolerations=tolerations,
                volumes=volumes,
                priority_class=priority_class,
                host_network=host_network,
            ),
        },
    }


def host_path(name: str, path: str, kind: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"path": path}
    if kind:
        source["type"] = kind
    return {"name": name, "hostPath": source}


def mount(name: str, path: str, read_only: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        spec["readOnly"] = True
    return spec


def field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
