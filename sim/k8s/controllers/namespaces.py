"""Namespaces: every namespace gets its `default` ServiceAccount and the `kube-root-ca.crt`
ConfigMap; a deleted namespace empties, then goes away (the namespace controller's finalizer)."""

from __future__ import annotations

from sim.k8s.controllers.base import Controller, Rule
from sim.k8s.store import Obj


class NamespaceController(Controller):
    name = "namespace-controller"

    def build_rules(self) -> list[Rule]:
        return [
            Rule("default-serviceaccount", "namespaces", self._needs_sa, self.create_sa),
            Rule(
                "finalize",
                "namespaces",
                lambda n: bool(n["metadata"].get("deletionTimestamp")),
                self.finalize,
            ),
        ]

    def _needs_sa(self, ns: Obj) -> bool:
        name = ns["metadata"]["name"]
        return (
            not ns["metadata"].get("deletionTimestamp")
            and self.store.get("serviceaccounts", name, "default") is None
        )

    def create_sa(self, ns: Obj) -> None:
        name = ns["metadata"]["name"]
        self.create(
            "serviceaccounts",
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": name},
            },
        )

    def _needs_ca(self, ns: Obj) -> bool:
        name = ns["metadata"]["name"]
        return (
            not ns["metadata"].get("deletionTimestamp")
            and self.store.get("configmaps", name, "kube-root-ca.crt") is None
        )

    def create_ca(self, ns: Obj) -> None:
        name = ns["metadata"]["name"]
        self.create(
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "kube-root-ca.crt",
                    "namespace": name,
                    "annotations": {
                        "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
                    },
                },
                "data": {"ca.crt": self.server.ca_pem},
            },
        )

    def finalize(self, ns: Obj) -> None:
        self.api.finalize_namespace(ns["metadata"]["name"])
