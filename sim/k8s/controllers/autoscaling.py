"""HorizontalPodAutoscalers: the target is kept within [minReplicas, maxReplicas]. The simulated
cluster serves no resource metrics, so metric-driven scaling reports ScalingActive=False with
the reason the real controller gives when metrics are missing (KEDA-owned HPAs are left to KEDA)."""

from __future__ import annotations

from sim.k8s.controllers.base import Controller, Rule, set_condition
from sim.k8s.errors import ApiError
from sim.k8s.store import Obj, clone
from sim.k8s.timeutil import now_iso

KEY = "horizontalpodautoscalers.autoscaling"


def _without_time(status: Obj) -> Obj:
    return {k: v for k, v in status.items() if k != "lastScaleTime"}


class HorizontalPodAutoscalerController(Controller):
    name = "horizontal-pod-autoscaler"

    def build_rules(self) -> list[Rule]:
        return [
            Rule(
                "bound-replicas",
                KEY,
                lambda h: not h["metadata"].get("deletionTimestamp"),
                self.reconcile,
            )
        ]

    def reconcile(self, hpa: Obj) -> None:
        spec = hpa["spec"]
        ref = spec["scaleTargetRef"]
        ns = hpa["metadata"]["namespace"]
        status = clone(hpa.get("status") or {})
        try:
            rt = self.api.resolve(ref.get("apiVersion", "apps/v1"), ref["kind"])
            scale = self.api.get_scale(rt, ns, ref["name"])
        except ApiError as exc:
            set_condition(
                status,
                "AbleToScale",
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {exc.message}",
            )
            self._save(hpa, status)
            return
        current = int(scale["spec"]["replicas"])
        low, high = int(spec.get("minReplicas", 1)), int(spec["maxReplicas"])
        desired = min(max(current, low), high)
        keda = (hpa["metadata"].get("labels") or {}).get("scaledobject.keda.sh/name")
        if desired != current and not keda:
            self.api.update_scale(rt, ns, ref["name"], {"spec": {"replicas": desired}})
            status["lastScaleTime"] = now_iso()
        status.update(currentReplicas=current, desiredReplicas=desired)
        set_condition(
            status,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        )
        if not keda:
            if spec.get("metrics"):
                set_condition(
                    status,
                    "ScalingActive",
                    "False",
                    "FailedGetResourceMetric",
                    "the HPA was unable to compute the replica count: unable to get metrics for resource: no metrics returned from resource metrics API",
                )
            limited = desired in (low, high) and current != desired
            set_condition(
                status,
                "ScalingLimited",
                "True" if limited else "False",
                "TooFewReplicas"
                if desired == low and limited
                else ("TooManyReplicas" if limited else "DesiredWithinRange"),
                "",
            )
        self._save(hpa, status)

    def _save(self, hpa: Obj, status: Obj) -> None:
        old = hpa.get("status") or {}
        if _without_time(status) != _without_time(old):
            hpa["status"] = status
            self.update_status(KEY, hpa)
