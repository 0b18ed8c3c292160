"""KEDA: a ScaledObject scales its target between min and max replicas from its triggers,
through an HPA named `keda-hpa-<name>`: the metric fed with `ApiServer.set_metric`, and each
prometheus trigger whose query is a request rate, from the traffic the simulated servers got
(`traffic`); the replicas wanted are the most any trigger asks for."""

from __future__ import annotations

import math

from sim.k8s.controllers.base import Controller, Rule, owner_ref, set_condition
from sim.k8s.errors import ApiError
from sim.k8s.operators.traffic import traffic_of
from sim.k8s.store import Obj, clone
from sim.k8s.timeutil import now_iso

KEY = "scaledobjects.keda.sh"


class KedaOperator(Controller):
    name = "keda-operator"

    def active(self) -> bool:
        return self.api.registry.has_crd("keda.sh", "scaledobjects")

    def build_rules(self) -> list[Rule]:
        return [
            Rule("scale", KEY, lambda o: not o["metadata"].get("deletionTimestamp"), self.scale)
        ]

    def resync(self) -> None:
        if self.active():
            for obj in self.store.items(KEY):
                self.evaluate(KEY, obj)

    def _target_value(self, so: Obj) -> float:
        for trigger in so["spec"].get("triggers") or []:
            meta = trigger.get("metadata") or {}
            for key in ("threshold", "targetValue", "value", "queueLength", "desiredReplicas"):
                if key in meta:
                    try:
                        return max(float(meta[key]), 1e-9)
                    except ValueError:
                        continue
        return 1.0

    def _activation(self, so: Obj) -> float:
        for trigger in so["spec"].get("triggers") or []:
            value = (trigger.get("metadata") or {}).get("activationThreshold")
            if value is not None:
                try:
                    return float(value)
                except ValueError:
                    continue
        return 0.0

    def _rates(self, so: Obj) -> list[tuple[float, float]]:
        """(request rate, per-replica threshold) of each prometheus trigger whose query is a
        request rate the simulated traffic answers (`traffic.Traffic.rate`)."""
        traffic = traffic_of(self.server)
        found = []
        for trigger in so["spec"].get("triggers") or []:
            meta = trigger.get("metadata") or {}
            if trigger.get("type") != "prometheus" or "query" not in meta:
                continue
            value = traffic.rate(str(meta["query"]))
            if value is None:
                continue
            try:
                threshold = max(float(meta.get("threshold", 1)), 1e-9)
            except ValueError:
                continue
            found.append((value, threshold))
        return found

    def scale(self, so: Obj) -> None:
        spec = so["spec"]
        ns, name = so["metadata"]["namespace"], so["metadata"]["name"]
        ref = spec["scaleTargetRef"]
        api_version = ref.get("apiVersion", "apps/v1")
        kind = ref.get("kind", "Deployment")
        status = clone(so.get("status") or {})
        try:
            rt = self.api.resolve(api_version, kind)
            target = self.api.get_raw(rt, ns, ref["name"])
        except ApiError as exc:
            set_condition(
                status,
                "Ready",
                "False",
                "ScaledObjectCheckFailed",
                f"ScaledObject doesn't have correct scaleTargetRef specification: {exc.message}",
            )
            so["status"] = status
            if status != (self.store.get(KEY, ns, name) or {}).get("status"):
                self.update_status(KEY, so)
            return
        low = int(spec.get("minReplicaCount", 0))
        high = int(spec.get("maxReplicaCount", 100))
        metric = self.server.metrics.get((ns, name), 0.0)
        wanted = [math.ceil(metric / self._target_value(so))] if metric else []
        rates = self._rates(so)
        wanted += [math.ceil(value / threshold) for value, threshold in rates]
        active = metric > self._activation(so) or any(value > 0 for value, _ in rates)
        if active:
            desired = max(1, low, min(high, max(wanted, default=1)))
        else:
            desired = int(spec["idleReplicaCount"]) if "idleReplicaCount" in spec else low
        current = int(self.api.scale_of(rt, target)["spec"]["replicas"])
        if "originalReplicaCount" not in status:
            status["originalReplicaCount"] = current
        if current != desired:
            self.api.update_scale(rt, ns, ref["name"], {"spec": {"replicas": desired}})
        hpa_name = f"keda-hpa-{name}"
        self._ensure_hpa(so, hpa_name, api_version, kind, ref["name"], max(1, low), high)
        status.update(
            hpaName=hpa_name,
            scaleTargetKind=f"{api_version}.{kind}",
            scaleTargetGVKR={
                "group": rt.group,
                "version": rt.version,
                "kind": kind,
                "resource": rt.plural,
            },
            externalMetricNames=[
                f"s{n}-{t.get('type', 'metric')}" for n, t in enumerate(spec.get("triggers") or [])
            ],
            triggersTypes=",".join(t.get("type", "") for t in spec.get("triggers") or []),
        )
        if active:
            status["lastActiveTime"] = now_iso()
        set_condition(
            status,
            "Ready",
            "True",
            "ScaledObjectReady",
            "ScaledObject is defined correctly and is ready for scaling",
        )
        set_condition(
            status,
            "Active",
            "True" if active else "False",
            "ScalerActive" if active else "ScalerNotActive",
            "Scaling is performed because triggers are active"
            if active
            else "Scaling is not performed because triggers are not active",
        )
        set_condition(
            status,
            "Fallback",
            "False",
            "NoFallbackFound",
            "No fallbacks are active on this scaled object",
        )
        so["status"] = status
        stored = (self.store.get(KEY, ns, name) or {}).get("status") or {}
        if {k: v for k, v in status.items() if k != "lastActiveTime"} != {
            k: v for k, v in stored.items() if k != "lastActiveTime"
        }:
            self.update_status(KEY, so)

    def _ensure_hpa(
        self, so: Obj, name: str, api_version: str, kind: str, target: str, low: int, high: int
    ) -> None:
        ns = so["metadata"]["namespace"]
        if self.store.get("horizontalpodautoscalers.autoscaling", ns, name) is not None:
            return
        hpa = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {"scaledobject.keda.sh/name": so["metadata"]["name"]},
                "ownerReferences": [owner_ref(so)],
            },
            "spec": {
                "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
                "minReplicas": low,
                "maxReplicas": high,
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"name": "s0-keda"},
                            "target": {"type": "AverageValue", "averageValue": "1"},
                        },
                    }
                ],
            },
        }
        self.create("horizontalpodautoscalers.autoscaling", hpa)
