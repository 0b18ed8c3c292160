"""Services: Endpoints and EndpointSlices from ready pods; LoadBalancer Services get an ELB
hostname after the profile's provisioning time (what the AWS Load Balancer Controller does)."""

from __future__ import annotations

import hashlib

from sim.k8s.controllers.base import Controller, Rule
from sim.k8s.controllers.workloads import pod_ready
from sim.k8s.store import Obj, WatchEvent, clone


def _needs_lb(svc: Obj) -> bool:
    return (svc.get("spec") or {}).get("type") == "LoadBalancer" and not (
        (svc.get("status") or {}).get("loadBalancer") or {}
    ).get("ingress")


class ServiceController(Controller):
    name = "service-controller"

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "endpoints",
                "services",
                lambda s: bool((s.get("spec") or {}).get("selector")),
                self.endpoints,
            ),
            Rule(
                "load-balancer",
                "services",
                _needs_lb,
                self.provision,
                delay="load_balancer_provision",
            ),
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key != "pods":
            return []
        ns = event.obj["metadata"]["namespace"]
        return [("services", ns, s["metadata"]["name"]) for s in self.store.items("services", ns)]

    def endpoints(self, svc: Obj) -> None:
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        selector = svc["spec"]["selector"]
        pods = [
            p
            for p in self.store.items("pods", ns)
            if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            and (p.get("status") or {}).get("podIP")
        ]
        ready = [p for p in pods if pod_ready(p)]
        not_ready = [
            p
            for p in pods
            if not pod_ready(p) and (p.get("status") or {}).get("phase") == "Running"
        ]

        def address(p: Obj) -> Obj:
            return {
                "ip": p["status"]["podIP"],
                "nodeName": p["spec"].get("nodeName"),
                "targetRef": {
                    "kind": "Pod",
                    "namespace": ns,
                    "name": p["metadata"]["name"],
                    "uid": p["metadata"]["uid"],
                },
            }

        ports = []
        for port in svc["spec"].get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            entry = {
                "port": target if isinstance(target, int) else port.get("port"),
                "protocol": port.get("protocol", "TCP"),
            }
            if port.get("name"):
                entry["name"] = port["name"]
            ports.append(entry)
        subset: Obj = {}
        if ready:
            subset["addresses"] = [address(p) for p in ready]
        if not_ready:
            subset["notReadyAddresses"] = [address(p) for p in not_ready]
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": dict(svc["metadata"].get("labels") or {}),
            },
            "subsets": [dict(subset, ports=ports)] if subset else [],
        }
        existing = self.store.get("endpoints", ns, name)
        if existing is None:
            self.create("endpoints", body)
        elif existing.get("subsets") != body["subsets"]:
            updated = clone(existing)
            updated["subsets"] = body["subsets"]
            self.update("endpoints", updated)
        slice_body = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-sim",
                "namespace": ns,
                "labels": {
                    "kubernetes.io/service-name": name,
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": name,
                        "uid": svc["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": "IPv4",
            "endpoints": [
                {
                    "addresses": [p["status"]["podIP"]],
                    "conditions": {"ready": pod_ready(p)},
                    "nodeName": p["spec"].get("nodeName"),
                    "targetRef": address(p)["targetRef"],
                }
                for p in ready + not_ready
            ],
            "ports": ports,
        }
        existing_slice = self.store.get("endpointslices.discovery.k8s.io", ns, f"{name}-sim")
        if existing_slice is None:
            self.create("endpointslices.discovery.k8s.io", slice_body)
        elif existing_slice.get("endpoints") != slice_body["endpoints"]:
            updated = clone(existing_slice)
            updated["endpoints"], updated["ports"] = slice_body["endpoints"], ports
            self.update("endpointslices.discovery.k8s.io", updated)

    def provision(self, svc: Obj) -> None:
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        digest = hashlib.sha256(f"{self.server.cluster}/{ns}/{name}".encode()).hexdigest()
        internal = (svc["metadata"].get("annotations") or {}).get(
            "service.beta.kubernetes.io/aws-load-balancer-scheme"
        ) == "internal"
        prefix = "internal-" if internal else ""
        hostname = f"{prefix}k8s-{ns[:8]}-{name[:8]}-{digest[:10]}-{digest[10:26]}.elb.{self.server.region}.amazonaws.com"
        svc["status"] = {"loadBalancer": {"ingress": [{"hostname": hostname}]}}
        self.update_status("services", svc)
        self.event(svc, "EnsuredLoadBalancer", "Ensured load balancer")
