"""Defaulting the API server does on write (what `kubectl get -o yaml` shows but nobody sent)."""

from __future__ import annotations

import base64
import ipaddress
import threading
from typing import Any

Obj = dict[str, Any]


def canonical_quantity(value: Any) -> Any:
    """Numbers in quantity fields are stored as strings, as the API server serializes them."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def canonical_quantities(resources: Any) -> None:
    if not isinstance(resources, dict):
        return
    for field in ("limits", "requests", "capacity"):
        values = resources.get(field)
        if isinstance(values, dict):
            resources[field] = {k: canonical_quantity(v) for k, v in values.items()}


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    if "serviceAccountName" not in spec:
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(container, dict):
            continue
        image = container.get("image") or ""
        tag = image.rsplit("/", 1)[-1]
        latest = ":" not in tag or tag.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        canonical_quantities(container["resources"])
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def default_template(spec: Obj) -> None:
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        template.setdefault("metadata", {})
        default_pod_spec(template["spec"])


def qos_class(spec: Obj) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    limits = [(c.get("resources") or {}).get("limits") or {} for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    for req, lim in zip(requests, limits, strict=True):
        if not (lim.get("cpu") and lim.get("memory")):
            return "Burstable"
        if any(req.get(k) not in (None, lim.get(k)) for k in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


class IpAllocator:
    """Cluster IPs from the cluster's service CIDR (the `kubernetes` Service takes its first
    address, as on EKS), node ports from 30000-32767."""

    def __init__(self, cidr: str) -> None:
        self.hosts = ipaddress.ip_network(cidr).hosts()
        self.kubernetes_ip = str(next(self.hosts))
        self.next_port = 30000
        self.lock = threading.Lock()

    def cluster_ip(self) -> str:
        with self.lock:
            return str(next(self.hosts))

    def node_port(self) -> int:
        with self.lock:
            port = self.next_port
            self.next_port += 1
            return port


INITIAL_STATUS: dict[str, Obj] = {
    "replicasets.apps": {"replicas": 0},
    "statefulsets.apps": {"replicas": 0, "availableReplicas": 0},
    "daemonsets.apps": {
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
    },
}


def apply_defaults(kind_key: str, obj: Obj, old: Obj | None, ips: IpAllocator) -> None:
    """Fill in the defaults of built-in kinds (create and update alike, as the server does)."""
    meta = obj["metadata"]
    spec = obj.get("spec")
    if kind_key == "pods" and isinstance(spec, dict):
        default_pod_spec(spec)
        if old is None:
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
    elif kind_key in (
        "deployments.apps",
        "replicasets.apps",
        "statefulsets.apps",
        "daemonsets.apps",
    ):
        if isinstance(spec, dict):
            if kind_key != "daemonsets.apps":
                spec.setdefault("replicas", 1)
            spec.setdefault("revisionHistoryLimit", 10)
            if kind_key == "deployments.apps":
                spec.setdefault("progressDeadlineSeconds", 600)
                spec.setdefault(
                    "strategy",
                    {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                    },
                )
            if kind_key == "statefulsets.apps":
                spec.setdefault("podManagementPolicy", "OrderedReady")
                spec.setdefault(
                    "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
                )
            default_template(spec)
        if old is None:
            obj["status"] = dict(INITIAL_STATUS.get(kind_key, {}))
    elif kind_key == "jobs.batch" and isinstance(spec, dict):
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        if not spec.get("manualSelector") and old is None:
            uid = meta["uid"]
            labels = {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": meta["name"],
                "controller-uid": uid,
                "job-name": meta["name"],
            }
            template = spec.setdefault("template", {})
            template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        default_template(spec)
        if old is None:
            obj["status"] = {}
    elif kind_key == "services" and isinstance(spec, dict):
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
                if spec["type"] in ("NodePort", "LoadBalancer") and "nodePort" not in port:
                    port["nodePort"] = ips.node_port()
        if spec["type"] != "ExternalName":
            if old is not None and not spec.get("clusterIP"):
                spec["clusterIP"] = (old.get("spec") or {}).get("clusterIP")
            if not spec.get("clusterIP"):
                spec["clusterIP"] = ips.cluster_ip()
            spec["clusterIPs"] = [spec["clusterIP"]]
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if old is None:
            obj["status"] = {"loadBalancer": {}}
    elif kind_key == "namespaces":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        if old is None:
            obj["status"] = {"phase": "Active"}
    elif kind_key == "persistentvolumeclaims" and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
        canonical_quantities(spec.get("resources"))
        if old is None:
            obj["status"] = {"phase": "Pending"}
    elif kind_key == "persistentvolumes" and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
        canonical_quantities(spec)
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        if old is None:
            obj["status"] = {"phase": "Available"}
    elif kind_key == "secrets":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            for k, v in string_data.items():
                data[k] = base64.b64encode(str(v).encode()).decode()
    elif kind_key == "customresourcedefinitions.apiextensions.k8s.io" and old is None:
        obj["status"] = {}
