"""HAMi GPU sharing as a managed feature: its Helm chart's objects and the steps that install or
remove them (pure).

The objects are those the project's chart renders (Project-HAMi/HAMi `charts/hami`, release
`hami` in `kube-system`, so every name is `hami-<part>`; `helm install hami hami-charts/hami -n
kube-system` in its install guide): the scheduler (a Deployment running kube-scheduler with
HAMi's `vgpu-scheduler-extender`, its Service and the device ConfigMap `hami-scheduler-device`
with the chart's defaults: 10 virtual GPUs per device, memory scaling 1), the device plugin
DaemonSet `hami-device-plugin` on nodes labelled `gpu=on`, and the MutatingWebhookConfiguration
`hami-webhook` that hands pods requesting `nvidia.com/gpumem` / `nvidia.com/gpucores` to
`hami-scheduler`. Each carries Hyperpilot's component label and the chart version.

Dependency order: service accounts, RBAC and configuration first; the webhook only once the
scheduler Deployment it calls is available (a webhook without its service would fail every
admission it matches); removal goes the other way, webhook first. Objects of the same names
that another tool installed are never changed or removed.
"""

from __future__ import annotations

from typing import Any

from cluster_svc.domain.components.base import KubeObject, is_managed, labelled, object_ref
from cluster_svc.domain.components.objects import (
    TOLERATE_ALL,
    container,
    daemon_set,
    deployment,
    rbac,
    rule,
)

HAMI_COMPONENT = "hami"
HAMI_VERSION = "2.6.1"  # the chart's appVersion (global.imageTag v2.6.1)
HAMI_NAMESPACE = "kube-system"
SCHEDULER = "hami-scheduler"
DEVICE_PLUGIN = "hami-device-plugin"
WEBHOOK = "hami-webhook"
NODE_LABEL = {"gpu": "on"}  # the chart's devicePlugin.nvidianodeSelector
IMAGE = f"projecthami/hami:v{HAMI_VERSION}"
KUBE_SCHEDULER = "registry.k8s.io/kube-scheduler:v1.31.0"
DEVICE_CONFIG = (
    "nvidia:\n"
    "  resourceCountName: nvidia.com/gpu\n"
    "  resourceMemoryName: nvidia.com/gpumem\n"
    "  resourceCoreName: nvidia.com/gpucores\n"
    "  deviceSplitCount: 10\n"
    "  deviceMemoryScaling: 1\n"
    "  defaultMemory: 0\n"
    "  defaultCores: 0\n"
)


# the chart's scheduler ClusterRole (charts/hami/templates/scheduler/clusterrole.yaml); the
# device plugin reads pods and writes its devices onto its node's annotations
SCHEDULER_RULES = [
    rule([""], ["pods", "configmaps"], ["get", "list", "watch", "patch", "update"]),
    rule([""], ["pods/binding"], ["create"]),
    rule([""], ["nodes"], ["get", "list", "patch", "update", "watch"]),
    rule([""], ["events"], ["create", "get", "list"]),
]
DEVICE_PLUGIN_RULES = [
    rule([""], ["pods"], ["get", "list", "watch", "patch", "update"]),
    rule([""], ["nodes"], ["get", "list", "patch", "update", "watch"]),
]


def _config_map(name: str, data: dict[str, str]) -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": HAMI_NAMESPACE},
        "data": data,
    }


def _service() -> KubeObject:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SCHEDULER, "namespace": HAMI_NAMESPACE},
        "spec": {
            "selector": {"app.kubernetes.io/name": SCHEDULER},
            "ports": [
                {"name": "http", "port": 443, "targetPort": 443, "protocol": "TCP"},
                {"name": "monitor", "port": 31993, "targetPort": 9395, "protocol": "TCP"},
            ],
        },
    }


def _scheduler() -> KubeObject:
    return deployment(
        SCHEDULER,
        HAMI_NAMESPACE,
        [
            container(
                "kube-scheduler",
                KUBE_SCHEDULER,
                command=["kube-scheduler"],
                args=[
                    "--config=/config/config.yaml",
                    "--leader-elect=false",
                    f"--leader-elect-resource-name={SCHEDULER}",
                ],
            ),
            container(
                "vgpu-scheduler-extender",
                IMAGE,
                command=["scheduler"],
                args=[
                    "--http_bind=0.0.0.0:443",
                    "--cert_file=/tls/tls.crt",
                    "--key_file=/tls/tls.key",
                    f"--scheduler-name={SCHEDULER}",
                    "--device-config-file=/device-config.yaml",
                ],
                ports=[{"name": "http", "containerPort": 443}],
            ),
        ],
        account=SCHEDULER,
        tolerations=TOLERATE_ALL,
    )


def _device_plugin() -> KubeObject:
    body = daemon_set(
        DEVICE_PLUGIN,
        HAMI_NAMESPACE,
        [
            container(
                "device-plugin",
                IMAGE,
                command=["nvidia-device-plugin"],
                args=["--device-config-file=/device-config.yaml"],
            ),
            container("vgpu-monitor", IMAGE, command=["vGPUmonitor"]),
        ],
        account=DEVICE_PLUGIN,
        tolerations=TOLERATE_ALL,
    )
    body["spec"]["template"]["spec"]["nodeSelector"] = dict(NODE_LABEL)
    return body


def _webhook() -> KubeObject:
    """Pods that ask for HAMi's resources go to hami-scheduler; HAMi's own pods (and those
    labelled hami.io/webhook: ignore) are left alone; failurePolicy Ignore, as the chart sets."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK},
        "webhooks": [
            {
                "name": "vgpu.hami.io",
                "admissionReviewVersions": ["v1beta1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "timeoutSeconds": 10,
                "clientConfig": {
                    "service": {
                        "name": SCHEDULER,
                        "namespace": HAMI_NAMESPACE,
                        "path": "/webhook",
                        "port": 443,
                    }
                },
                "objectSelector": {
                    "matchExpressions": [
                        {"key": "hami.io/webhook", "operator": "NotIn", "values": ["ignore"]}
                    ]
                },
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "hami.io/webhook", "operator": "NotIn", "values": ["ignore"]}
                    ]
                },
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "*",
                    }
                ],
            }
        ],
    }


def hami_objects() -> list[KubeObject]:
    """The chart, rendered, in install order (the webhook last)."""
    objects = [
        *rbac(SCHEDULER, HAMI_NAMESPACE, SCHEDULER_RULES),
        _config_map(f"{SCHEDULER}-device", {"device-config.yaml": DEVICE_CONFIG}),
        _service(),
        _scheduler(),
        *rbac(DEVICE_PLUGIN, HAMI_NAMESPACE, DEVICE_PLUGIN_RULES),
        _device_plugin(),
        _webhook(),
    ]
    return [labelled(o, HAMI_COMPONENT, HAMI_VERSION) for o in objects]


Ref = tuple[str, str, str, str | None]


def hami_refs() -> list[Ref]:
    return [object_ref(o) for o in hami_objects()]


def scheduler_available(found: KubeObject | None) -> bool:
    status = (found or {}).get("status") or {}
    return int(status.get("availableReplicas") or 0) >= 1


def hami_enabled(objects: dict[Ref, KubeObject | None]) -> bool:
    """HAMi is on when its device plugin DaemonSet is there (whoever installed it)."""
    plugin = next(o for o in hami_objects() if o["kind"] == "DaemonSet")
    return objects.get(object_ref(plugin)) is not None


def hami_steps(objects: dict[Ref, KubeObject | None], enabled: bool) -> list[tuple[str, Any]]:
    """("apply", object) | ("remove", ref) | ("wait", reason) steps, in order. Refuses, through
    ValueError(kind, name), removing an object another tool installed."""
    wanted = hami_objects()
    steps: list[tuple[str, Any]] = []
    if enabled:
        for obj in wanted:
            ref = object_ref(obj)
            current = objects.get(ref)
            if obj["kind"] == "MutatingWebhookConfiguration":
                scheduler = next(o for o in wanted if o["kind"] == "Deployment")
                if not scheduler_available(objects.get(object_ref(scheduler))):
                    steps.append(("wait", f"the {SCHEDULER} Deployment is available"))
                    break
            if current is None or (
                is_managed(current, HAMI_COMPONENT)
                and ((current.get("metadata") or {}).get("labels") or {})
                != (obj["metadata"].get("labels") or {})
            ):
                steps.append(("apply", obj))
        return steps
    for obj in reversed(wanted):
        ref = object_ref(obj)
        current = objects.get(ref)
        if current is None:
            continue
        if not is_managed(current, HAMI_COMPONENT):
            raise ValueError(obj["kind"], obj["metadata"]["name"])
        steps.append(("remove", ref))
    return steps
