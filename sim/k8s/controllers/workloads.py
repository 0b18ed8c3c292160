"""Deployments -> ReplicaSets -> Pods, StatefulSets and DaemonSets, with their status."""

from __future__ import annotations

import hashlib
import json
import math

from sim.k8s.controllers.base import (
    Controller,
    Rule,
    condition,
    random_suffix,
    set_condition,
    template_pod,
)
from sim.k8s.controllers.scheduler import affinity_ok, tolerates
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso

TERMINAL = ("Succeeded", "Failed")


def pod_ready(pod: Obj) -> bool:
    ready = condition(pod, "Ready")
    return bool(ready and ready.get("status") == "True") and not pod["metadata"].get(
        "deletionTimestamp"
    )


def active(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in TERMINAL and not pod["metadata"].get(
        "deletionTimestamp"
    )


def _alive(obj: Obj) -> bool:
    return not obj["metadata"].get("deletionTimestamp")


def template_hash(template: Obj) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"


def _revision(rs: Obj) -> int:
    return int((rs["metadata"].get("annotations") or {}).get(REVISION, 0))


def _same_template(rs: Obj, template: Obj) -> bool:
    """deployment/util EqualIgnoreHash."""
    theirs = clone(rs["spec"].get("template") or {})
    labels = (theirs.get("metadata") or {}).get("labels") or {}
    labels.pop("pod-template-hash", None)
    ours = clone(template)
    (ours.get("metadata") or {}).get("labels", {}).pop("pod-template-hash", None)
    return bool(theirs == ours)


def _int_or_percent(value: object, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        amount = total * int(value[:-1]) / 100
        return math.ceil(amount) if round_up else math.floor(amount)
    return int(value) if isinstance(value, (int, str)) and str(value).isdigit() else 0


class ReplicaSetController(Controller):
    name = "replicaset-controller"

    def build_rules(self) -> list[Rule]:
        return [Rule("reconcile", "replicasets.apps", _alive, self.reconcile)]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        return self.owner_of(event, "replicasets.apps", "ReplicaSet") if event.key == "pods" else []

    def reconcile(self, rs: Obj) -> None:
        pods = [p for p in self.children("pods", rs)]
        for pod in pods:
            if (pod.get("status") or {}).get("phase") == "Failed" and _alive(pod):
                self.delete("pods", pod)
        live = [p for p in pods if active(p)]
        want = int(rs["spec"].get("replicas", 1))
        if len(live) < want:
            for _ in range(want - len(live)):
                pod = template_pod(
                    rs, rs["spec"]["template"], f"{rs['metadata']['name']}-{random_suffix()}"
                )
                self.create("pods", pod)
        elif len(live) > want:
            ranked = sorted(
                live,
                key=lambda p: (
                    pod_ready(p),
                    bool(p["spec"].get("nodeName")),
                    p["metadata"]["creationTimestamp"],
                ),
            )
            for pod in ranked[: len(live) - want]:
                self.delete("pods", pod)
        live = [p for p in self.children("pods", rs) if active(p)]
        ready = sum(1 for p in live if pod_ready(p))
        status = {
            "replicas": len(live),
            "fullyLabeledReplicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if status != {k: (rs.get("status") or {}).get(k, 0) for k in status}:
            rs["status"] = dict(rs.get("status") or {}, **status)
            self.update_status("replicasets.apps", rs)


class DeploymentController(Controller):
    name = "deployment-controller"

    def build_rules(self) -> list[Rule]:
        return [Rule("reconcile", "deployments.apps", _alive, self.reconcile)]

    def extra_watches(self) -> tuple[str, ...]:
        return ("replicasets.apps",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        return (
            self.owner_of(event, "deployments.apps", "Deployment")
            if event.key == "replicasets.apps"
            else []
        )

    def reconcile(self, deploy: Obj) -> None:
        spec = deploy["spec"]
        want = int(spec.get("replicas", 1))
        template = spec["template"]
        digest = template_hash(template)
        owned = self.children("replicasets.apps", deploy)
        # deployment/util FindNewReplicaSet: the ReplicaSet whose template equals the
        # Deployment's but for pod-template-hash (what `rollout undo` brings back)
        new = next((rs for rs in owned if _same_template(rs, template)), None)
        revisions = {rs["metadata"]["uid"]: _revision(rs) for rs in owned}
        revision = 1 + max(revisions.values(), default=0)
        if new is not None and revisions[new["metadata"]["uid"]] < revision - 1:
            new = self._bring_back(new, revision)  # a rollback: the old revision is renumbered
        paused = bool(spec.get("paused"))
        if new is None and not paused:
            tmpl = clone(template)
            tmpl.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = digest
            selector = clone(spec["selector"])
            selector.setdefault("matchLabels", {})["pod-template-hash"] = digest
            name = f"{deploy['metadata']['name']}-{digest}"
            rs: Obj = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": name,
                    "namespace": deploy["metadata"]["namespace"],
                    "labels": dict(tmpl["metadata"]["labels"]),
                    "annotations": {
                        REVISION: str(revision),
                        "deployment.kubernetes.io/desired-replicas": str(want),
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": deploy["metadata"]["name"],
                            "uid": deploy["metadata"]["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {"replicas": want, "selector": selector, "template": tmpl},
            }
            new = self.create("replicasets.apps", rs)
            self.event(
                deploy, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {want}"
            )
            owned = self.children("replicasets.apps", deploy)
        olds = [
            rs for rs in owned if new is None or rs["metadata"]["uid"] != new["metadata"]["uid"]
        ]
        if new is not None and not paused:
            if int(new["spec"].get("replicas", 0)) != want:
                before = new["spec"].get("replicas", 0)
                scaled = clone(new)
                scaled["spec"]["replicas"] = want
                self.update("replicasets.apps", scaled)
                self.event(
                    deploy,
                    "ScalingReplicaSet",
                    f"Scaled {'up' if want > before else 'down'} replica set {new['metadata']['name']} from {before} to {want}",
                )
            new_ready = int((new.get("status") or {}).get("readyReplicas", 0))
            recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
            for rs in olds:
                target = 0 if recreate else max(0, want - new_ready)
                target = min(target, int(rs["spec"].get("replicas", 0)))
                if int(rs["spec"].get("replicas", 0)) != target:
                    scaled = clone(rs)
                    scaled["spec"]["replicas"] = target
                    self.update("replicasets.apps", scaled)
            limit = int(spec.get("revisionHistoryLimit", 10))
            idle = [
                rs
                for rs in olds
                if int(rs["spec"].get("replicas", 0)) == 0
                and not (rs.get("status") or {}).get("replicas")
            ]
            for rs in sorted(idle, key=lambda r: r["metadata"]["creationTimestamp"])[
                : max(0, len(idle) - limit)
            ]:
                self.delete("replicasets.apps", rs)
        if new is not None:
            self._note_revision(deploy, _revision(new))
        self._status(deploy, new, self.children("replicasets.apps", deploy), want)

    def _bring_back(self, rs: Obj, revision: int) -> Obj:
        """deployment/sync getNewReplicaSet: an old ReplicaSet made new again takes the next
        revision and remembers its earlier ones in `revision-history`."""
        back = clone(rs)
        annotations = back["metadata"].setdefault("annotations", {})
        history = [h for h in annotations.get(REVISION_HISTORY, "").split(",") if h]
        annotations[REVISION_HISTORY] = ",".join([*history, str(_revision(rs))])
        annotations[REVISION] = str(revision)
        return self.update("replicasets.apps", back)

    def _note_revision(self, deploy: Obj, revision: int) -> None:
        """The Deployment carries its current revision, as `rollout history` and `undo` read."""
        annotations = deploy["metadata"].get("annotations") or {}
        if annotations.get(REVISION) == str(revision):
            return
        current = self.store.get(
            "deployments.apps", deploy["metadata"]["namespace"], deploy["metadata"]["name"]
        )
        if current is None:
            return
        noted = clone(current)
        noted["metadata"].setdefault("annotations", {})[REVISION] = str(revision)
        self.update("deployments.apps", noted)

    def _status(self, deploy: Obj, new: Obj | None, owned: list[Obj], want: int) -> None:
        def total(field: str, items: list[Obj]) -> int:
            return sum(int((rs.get("status") or {}).get(field, 0)) for rs in items)

        replicas = total("replicas", owned)
        available = total("availableReplicas", owned)
        ready = total("readyReplicas", owned)
        updated = total("replicas", [new]) if new is not None else 0
        strategy = deploy["spec"].get("strategy") or {}
        max_unavailable = 0
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            max_unavailable = _int_or_percent(
                (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%"), want, False
            )
        status = clone(deploy.get("status") or {})
        status.update(
            observedGeneration=deploy["metadata"].get("generation", 1),
            replicas=replicas,
            updatedReplicas=updated,
            readyReplicas=ready,
            availableReplicas=available,
        )
        if replicas - available > 0:
            status["unavailableReplicas"] = replicas - available
        else:
            status.pop("unavailableReplicas", None)
        for key in ("readyReplicas", "availableReplicas", "updatedReplicas", "replicas"):
            if not status.get(key):
                status.pop(key, None)
        if available >= want - max_unavailable:
            set_condition(
                status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            set_condition(
                status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        name = new["metadata"]["name"] if new is not None else deploy["metadata"]["name"]
        complete = new is not None and updated == want and available >= want and replicas == want
        if complete:
            set_condition(
                status,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
            )
        else:
            set_condition(
                status,
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                f'ReplicaSet "{name}" is progressing.',
            )
        for c in status.get("conditions") or []:
            c.setdefault("lastUpdateTime", now_iso())
        old_view = {k: v for k, v in (deploy.get("status") or {}).items() if k != "conditions"}
        new_view = {k: v for k, v in status.items() if k != "conditions"}
        old_conds = [
            (c["type"], c["status"], c.get("reason"))
            for c in (deploy.get("status") or {}).get("conditions") or []
        ]
        new_conds = [
            (c["type"], c["status"], c.get("reason")) for c in status.get("conditions") or []
        ]
        if old_view != new_view or old_conds != new_conds:
            deploy["status"] = status
            self.update_status("deployments.apps", deploy)


class StatefulSetController(Controller):
    name = "statefulset-controller"

    def build_rules(self) -> list[Rule]:
        return [Rule("reconcile", "statefulsets.apps", _alive, self.reconcile)]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods",)

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        return (
            self.owner_of(event, "statefulsets.apps", "StatefulSet") if event.key == "pods" else []
        )

    def reconcile(self, sts: Obj) -> None:
        name, ns = sts["metadata"]["name"], sts["metadata"]["namespace"]
        want = int(sts["spec"].get("replicas", 1))
        ordered = sts["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        revision = f"{name}-{template_hash(sts['spec']['template'])}"
        pods = {p["metadata"]["name"]: p for p in self.children("pods", sts)}
        for i in range(want):
            pod_name = f"{name}-{i}"
            pod = pods.get(pod_name)
            if (
                pod is not None
                and (pod.get("status") or {}).get("phase") == "Failed"
                and _alive(pod)
            ):
                self.delete("pods", pod)
                break
            if pod is None:
                for tmpl in sts["spec"].get("volumeClaimTemplates") or []:
                    claim = f"{tmpl['metadata']['name']}-{pod_name}"
                    if self.store.get("persistentvolumeclaims", ns, claim) is None:
                        pvc = {
                            "apiVersion": "v1",
                            "kind": "PersistentVolumeClaim",
                            "metadata": {
                                "name": claim,
                                "namespace": ns,
                                "labels": dict(
                                    (sts["spec"].get("selector") or {}).get("matchLabels") or {}
                                ),
                            },
                            "spec": clone(tmpl.get("spec") or {}),
                        }
                        self.create("persistentvolumeclaims", pvc)
                labels = {
                    "statefulset.kubernetes.io/pod-name": pod_name,
                    "apps.kubernetes.io/pod-index": str(i),
                    "controller-revision-hash": revision,
                }
                new_pod = template_pod(sts, sts["spec"]["template"], pod_name, labels)
                new_pod["spec"].setdefault("hostname", pod_name)
                if sts["spec"].get("serviceName"):
                    new_pod["spec"].setdefault("subdomain", sts["spec"]["serviceName"])
                for tmpl in sts["spec"].get("volumeClaimTemplates") or []:
                    vols = new_pod["spec"].setdefault("volumes", [])
                    if not any(v.get("name") == tmpl["metadata"]["name"] for v in vols):
                        vols.append(
                            {
                                "name": tmpl["metadata"]["name"],
                                "persistentVolumeClaim": {
                                    "claimName": f"{tmpl['metadata']['name']}-{pod_name}"
                                },
                            }
                        )
                self.create("pods", new_pod)
                if ordered:
                    break
            elif ordered and not pod_ready(pod):
                break
        for pod_name, pod in pods.items():
            index = pod_name.rsplit("-", 1)[-1]
            if index.isdigit() and int(index) >= want and _alive(pod):
                self.delete("pods", pod)
        live = [p for p in self.children("pods", sts) if active(p)]
        ready = sum(1 for p in live if pod_ready(p))
        status = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(live),
            "readyReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
            "availableReplicas": ready,
            "currentRevision": revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        if status != {k: (sts.get("status") or {}).get(k) for k in status}:
            sts["status"] = dict(sts.get("status") or {}, **status)
            self.update_status("statefulsets.apps", sts)


class DaemonSetController(Controller):
    name = "daemonset-controller"

    def build_rules(self) -> list[Rule]:
        return [Rule("reconcile", "daemonsets.apps", _alive, self.reconcile)]

    def extra_watches(self) -> tuple[str, ...]:
        return ("pods", "nodes")

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key == "nodes":
            return [
                ("daemonsets.apps", d["metadata"]["namespace"], d["metadata"]["name"])
                for d in self.store.items("daemonsets.apps")
            ]
        return self.owner_of(event, "daemonsets.apps", "DaemonSet") if event.key == "pods" else []

    def _eligible(self, ds: Obj, node: Obj) -> bool:
        probe = {"spec": ds["spec"]["template"].get("spec") or {}}
        tolerations = probe["spec"].get("tolerations") or []
        for taint in node["spec"].get("taints") or []:
            untolerated = taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint
            )
            if untolerated and not taint["key"].startswith("node.kubernetes.io/"):
                return False
        return affinity_ok(probe, node)

    def reconcile(self, ds: Obj) -> None:
        nodes = [n for n in self.store.items("nodes") if self._eligible(ds, n)]
        pods = self.children("pods", ds)
        by_node = {p["spec"].get("nodeName"): p for p in pods if active(p)}
        for node in nodes:
            node_name = node["metadata"]["name"]
            if node_name not in by_node:
                pod = template_pod(
                    ds,
                    ds["spec"]["template"],
                    f"{ds['metadata']['name']}-{random_suffix()}",
                    {"controller-revision-hash": template_hash(ds["spec"]["template"])},
                )
                pod["spec"]["nodeName"] = node_name
                self.create("pods", pod)
        names = {n["metadata"]["name"] for n in nodes}
        for node_name, pod in by_node.items():
            if node_name not in names:
                self.delete("pods", pod)
        for pod in pods:
            if (pod.get("status") or {}).get("phase") == "Failed" and _alive(pod):
                self.delete("pods", pod)
        live = [p for p in self.children("pods", ds) if active(p)]
        ready = sum(1 for p in live if pod_ready(p))
        status = {
            "desiredNumberScheduled": len(nodes),
            "currentNumberScheduled": len(live),
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": len(live),
            "numberMisscheduled": 0,
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        if status != {k: (ds.get("status") or {}).get(k) for k in status}:
            ds["status"] = dict(ds.get("status") or {}, **status)
            self.update_status("daemonsets.apps", ds)
