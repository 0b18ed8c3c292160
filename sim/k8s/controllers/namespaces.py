"""Namespaces: every namespace gets its `default` ServiceAccount; a deleted namespace empties,
then goes away (the namespace controller's finalizer)."""

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

    def finalize(self, ns: Obj) -> None:
        self.api.finalize_namespace(ns["metadata"]["name"])
