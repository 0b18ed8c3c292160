"""The scheduler: binds pending pods to nodes that fit (resources incl. GPUs and EFA, node
selectors and affinity, taints, bound volumes), or leaves them Pending with the reason."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from sim.k8s import gpu_devices
from sim.k8s.controllers.base import Controller, Rule, set_condition
from sim.k8s.controllers.nodes import is_ready
from sim.k8s.errors import ApiError
from sim.k8s.quantity import parse, pod_requests
from sim.k8s.selectors import match_expression
from sim.k8s.store import Obj, Store, WatchEvent, clone

TERMINAL = ("Succeeded", "Failed")


def unscheduled(pod: Obj) -> bool:
    """Pending, bound to no node and not gated: the scheduler does not consider a pod with
    scheduling gates (KEP-3521, spec.schedulingGates) until they are all removed."""
    return (
        not pod["spec"].get("nodeName")
        and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
        and not pod["metadata"].get("deletionTimestamp")
        and not pod["spec"].get("schedulingGates")
    )


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def _term_matches(term: Obj, labels: dict[str, str], node: Obj) -> bool:
    if not all(match_expression(e, labels) for e in term.get("matchExpressions") or []):
        return False
    fields = {"metadata.name": node["metadata"]["name"]}
    return all(match_expression(e, fields) for e in term.get("matchFields") or [])


def affinity_ok(pod: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod["spec"].get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(_term_matches(t, labels, node) for t in terms)


def node_usage(
    store: Store, ignore: frozenset[str] = frozenset()
) -> dict[str, defaultdict[str, float]]:
    """What the bound, unfinished pods request on each node (pods whose uid is in `ignore` aside)."""
    used: dict[str, defaultdict[str, float]] = {}
    for pod in store.items("pods"):
        node = pod["spec"].get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL:
            continue
        if pod["metadata"].get("uid") in ignore:
            continue
        counter = used.setdefault(node, defaultdict(float))
        for name, qty in pod_requests(pod["spec"]).items():
            counter[name] += qty
        counter["pods"] += 1
        gpu_devices.charge(counter, gpu_devices.allocation(pod))
    return used


def room_for(store: Store, pods: list[Obj], ignore: frozenset[str] = frozenset()) -> int:
    """How many of `pods` (in order, each on the first node it fits, by the scheduler's rules)
    fit on the nodes now, the pods whose uid is in `ignore` counted as gone: what an elastic
    workload can grow or shrink to, its own pods' places included."""
    used = node_usage(store, ignore)
    nodes = [n for n in store.items("nodes") if not n["metadata"].get("deletionTimestamp")]
    placed = 0
    for pod in pods:
        requests = pod_requests(pod["spec"])
        tolerations = pod["spec"].get("tolerations") or []
        fits = [
            n["metadata"]["name"]
            for n in nodes
            if Scheduler.misfit(n, pod, requests, tolerations, used) is None
        ]
        if not fits:
            break
        counter = used.setdefault(fits[0], defaultdict(float))
        target = next(n for n in nodes if n["metadata"]["name"] == fits[0])
        if gpu_devices.devices(target) is not None:
            gpu_devices.charge(counter, gpu_devices.hami_place(target, requests, counter)[1])
        for name, qty in requests.items():
            counter[name] += qty
        counter["pods"] += 1
        placed += 1
    return placed


class Scheduler(Controller):
    name = "default-scheduler"

    def build_rules(self) -> list[Rule]:
        return [Rule("schedule", "pods", unscheduled, self.schedule, delay="pod_schedule")]

    def extra_watches(self) -> tuple[str, ...]:
        return ("nodes", "persistentvolumeclaims")

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key in ("nodes", "persistentvolumeclaims") or (
            event.key == "pods" and event.type == "DELETED"
        ):
            return [
                ("pods", p["metadata"]["namespace"], p["metadata"]["name"])
                for p in self.store.items("pods")
                if unscheduled(p)
            ]
        return []

    def _used(self) -> dict[str, defaultdict[str, float]]:
        return node_usage(self.store)

    def _volume_problem(self, pod: Obj) -> str | None:
        for vol in pod["spec"].get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self.store.get("persistentvolumeclaims", pod["metadata"]["namespace"], claim)
            if pvc is None:
                return f'persistentvolumeclaim "{claim}" not found'
            if (pvc.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return None

    def schedule(self, pod: Obj) -> None:
        nodes = self.store.items("nodes")
        volume_problem = self._volume_problem(pod)
        reasons: Counter[str] = Counter()
        fits: list[tuple[float, str]] = []
        if volume_problem is None:
            used = self._used()
            requests = pod_requests(pod["spec"])
            tolerations = pod["spec"].get("tolerations") or []
            for node in nodes:
                reason = self.misfit(node, pod, requests, tolerations, used)
                if reason:
                    reasons[reason] += 1
                else:
                    alloc = node["status"].get("allocatable") or {}
                    load = used.get(node["metadata"]["name"], defaultdict(float))
                    gpus = parse(alloc.get("nvidia.com/gpu", 0)) or 1
                    # least allocated first (GPUs, CPU, then pod count), as the default scorer
                    score = (
                        load["nvidia.com/gpu"] / gpus
                        + load["cpu"] / max(parse(alloc.get("cpu", 1)), 1)
                        + load["pods"] / max(parse(alloc.get("pods", 110)), 1)
                    )
                    fits.append((score, node["metadata"]["name"]))
        if fits:
            fits.sort()
            target = next(n for n in nodes if n["metadata"]["name"] == fits[0][1])
            shares: list[Obj] | None = None
            if gpu_devices.devices(target) is not None:
                load = self._used().get(fits[0][1], defaultdict(float))
                shares = gpu_devices.hami_place(target, pod_requests(pod["spec"]), load)[1]
            self.bind(pod["metadata"]["namespace"], pod["metadata"]["name"], fits[0][1], shares)
            return
        if volume_problem:
            message = f"0/{len(nodes)} nodes are available: {volume_problem}. preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not helpful for scheduling."
        else:
            detail = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
            message = (
                f"0/{len(nodes)} nodes are available: {detail}."
                if nodes
                else "no nodes available to schedule pods"
            )
            if nodes:
                message += f" preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not helpful for scheduling."
        status = clone(pod.get("status") or {})
        before = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
        )
        if before and before.get("message") == message:
            return
        set_condition(status, "PodScheduled", "False", "Unschedulable", message, probe=True)
        pod["status"] = status
        self.update_status("pods", pod)
        self.event(pod, "FailedScheduling", message, "Warning")

    @staticmethod
    def misfit(
        node: Obj,
        pod: Obj,
        requests: dict[str, float],
        tolerations: list[Obj],
        used: dict[str, defaultdict[str, float]],
    ) -> str | None:
        if node["metadata"].get("deletionTimestamp"):
            return "node(s) were being deleted"
        if node["spec"].get("unschedulable") and not tolerates(
            tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        ):
            return "node(s) were unschedulable"
        for taint in node["spec"].get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(
                tolerations, taint
            ):
                value = f": {taint['value']}" if taint.get("value") else ""
                return f"node(s) had untolerated taint {{{taint['key']}{value}}}"
        if not is_ready(node):
            return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
        if not affinity_ok(pod, node):
            return "node(s) didn't match Pod's node affinity/selector"
        alloc = node["status"].get("allocatable") or {}
        load = used.get(node["metadata"]["name"], defaultdict(float))
        if load["pods"] + 1 > parse(alloc.get("pods", 110)):
            return "Too many pods"
        hami = gpu_devices.devices(node) is not None
        for name, qty in sorted(requests.items()):
            if qty <= 0 or (hami and name in (gpu_devices.HAMI_MEMORY, gpu_devices.HAMI_CORES)):
                continue
            have = parse(alloc.get(name, 0))
            if load[name] + qty > have + 1e-9:
                return f"Insufficient {name}"
        if hami:  # HAMi's scheduler: each virtual GPU on its own device with the share free
            return gpu_devices.hami_place(node, requests, load)[0]
        return None

    def bind(
        self, namespace: str, name: str, node_name: str, shares: list[Obj] | None = None
    ) -> Obj:
        current = self.store.get("pods", namespace, name)
        if current is None:
            raise ApiError(404, f'pods "{name}" not found')
        if current["spec"].get("nodeName"):
            raise ApiError(
                409, f'pod {name} is already assigned to node "{current["spec"]["nodeName"]}"'
            )
        pod = clone(current)
        pod["spec"]["nodeName"] = node_name
        if shares:  # where HAMi put the pod's virtual GPUs
            notes = pod["metadata"].setdefault("annotations", {})
            notes[gpu_devices.HAMI_ALLOCATED] = json.dumps(shares)
        updated = self.update("pods", pod)
        status = clone(updated.get("status") or {})
        set_condition(status, "PodScheduled", "True", "", "", probe=True)
        updated["status"] = status
        result = self.update_status("pods", updated)
        self.event(result, "Scheduled", f"Successfully assigned {namespace}/{name} to {node_name}")
        return result
