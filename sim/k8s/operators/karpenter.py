"""HyperPod managed Karpenter: a HyperpodNodeClass is Ready when its instance groups exist on
the cluster's nodes; a NodePool is Ready when its node class is, and counts its nodes."""

from __future__ import annotations

from sim.k8s.controllers.base import Controller, Rule, set_condition
from sim.k8s.controllers.nodes import HP
from sim.k8s.store import Obj, WatchEvent, clone

CLASSES = "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com"
POOLS = "nodepools.karpenter.sh"


class KarpenterOperator(Controller):
    name = "karpenter"

    def active(self) -> bool:
        return self.api.registry.has_crd("karpenter.sagemaker.amazonaws.com", "hyperpodnodeclasses")

    def build_rules(self) -> list[Rule]:
        return [
            Rule("node-class", CLASSES, lambda o: True, self.node_class),
            Rule("node-pool", POOLS, lambda o: True, self.node_pool),
        ]

    def extra_watches(self) -> tuple[str, ...]:
        return ("nodes",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key == "nodes":
            return [(CLASSES, "", o["metadata"]["name"]) for o in self.store.items(CLASSES)] + [
                (POOLS, "", o["metadata"]["name"]) for o in self.store.items(POOLS)
            ]
        if event.key == CLASSES:
            return [(POOLS, "", o["metadata"]["name"]) for o in self.store.items(POOLS)]
        return []

    def _groups(self) -> dict[str, list[Obj]]:
        groups: dict[str, list[Obj]] = {}
        for node in self.store.items("nodes"):
            group = (node["metadata"].get("labels") or {}).get(f"{HP}/instance-group-name")
            if group:
                groups.setdefault(group, []).append(node)
        return groups

    def node_class(self, obj: Obj) -> None:
        wanted = obj.get("spec", {}).get("instanceGroups") or []
        groups = self._groups()
        missing = [g for g in wanted if g not in groups]
        status = clone(obj.get("status") or {})
        status["instanceGroups"] = [
            {
                "name": g,
                "instanceTypes": sorted(
                    {
                        (n["metadata"].get("labels") or {}).get(
                            "node.kubernetes.io/instance-type", ""
                        )
                        for n in groups.get(g, [])
                    }
                ),
                "subnets": [],
            }
            for g in wanted
        ]
        ok = not missing
        set_condition(
            status,
            "InstanceGroupReady",
            "True" if ok else "False",
            "InstanceGroupsFound" if ok else "InstanceGroupNotFound",
            "" if ok else f"instance groups not found: {', '.join(missing)}",
        )
        set_condition(status, "SubnetsReady", "True", "SubnetsResolved", "")
        set_condition(
            status,
            "Ready",
            "True" if ok else "False",
            "Ready" if ok else "InstanceGroupNotFound",
            "" if ok else f"instance groups not found: {', '.join(missing)}",
        )
        if status != obj.get("status"):
            obj["status"] = status
            self.update_status(CLASSES, obj)

    def node_pool(self, pool: Obj) -> None:
        ref = ((pool["spec"].get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        node_class = self.store.get(CLASSES, "", ref.get("name", ""))
        ready_class = node_class is not None and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node_class.get("status") or {}).get("conditions") or []
        )
        groups = (node_class or {}).get("spec", {}).get("instanceGroups") or []
        nodes = [n for g, members in self._groups().items() if g in groups for n in members]
        status = clone(pool.get("status") or {})
        status["nodes"] = len(nodes)
        status["resources"] = {"nodes": str(len(nodes))}
        set_condition(
            status,
            "NodeClassReady",
            "True" if ready_class else "False",
            "NodeClassReady" if ready_class else "NodeClassNotReady",
            "" if ready_class else f"HyperpodNodeClass {ref.get('name')} is not ready",
        )
        set_condition(status, "ValidationSucceeded", "True", "ValidationSucceeded", "")
        set_condition(
            status,
            "Ready",
            "True" if ready_class else "False",
            "Ready" if ready_class else "NodeClassNotReady",
            "",
        )
        if status != pool.get("status"):
            pool["status"] = status
            self.update_status(POOLS, pool)
