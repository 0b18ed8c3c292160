"""The HyperPod inference operator: an InferenceEndpointConfig or JumpStartModel becomes a
Deployment of model workers and a Service, and reports DeploymentInProgress/Complete."""

from __future__ import annotations

from typing import Any

from sim.k8s.controllers.base import Controller, Rule, owner_ref
from sim.k8s.store import Obj, WatchEvent, clone
from sim.k8s.timeutil import now_iso

GROUP = "inference.sagemaker.aws.amazon.com"
IEC = f"inferenceendpointconfigs.{GROUP}"
JSM = f"jumpstartmodels.{GROUP}"


def _condition(ctype: str, ok: bool, reason: str, message: str) -> Obj:
    return {
        "type": ctype,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now_iso(),
    }


def _alive(obj: Obj) -> bool:
    return not obj["metadata"].get("deletionTimestamp")


class InferenceOperator(Controller):
    name = "hyperpod-inference-operator"

    def active(self) -> bool:
        return self.api.registry.has_crd(GROUP, "inferenceendpointconfigs")

    def build_rules(self) -> list[Rule]:
        return [
            Rule("deploy", IEC, _alive, self.deploy_custom),
            Rule("deploy", JSM, _alive, self.deploy_jumpstart),
        ]

    def watched(self) -> set[str]:
        return {IEC, JSM, "deployments.apps"}

    def related(self, event: WatchEvent) -> list[tuple[str, str, str]]:
        if event.key != "deployments.apps":
            return []
        ref = next(
            (
                r
                for r in event.obj["metadata"].get("ownerReferences") or []
                if r.get("kind") in ("InferenceEndpointConfig", "JumpStartModel")
            ),
            None,
        )
        if ref is None:
            return []
        key = IEC if ref["kind"] == "InferenceEndpointConfig" else JSM
        return [(key, event.obj["metadata"]["namespace"], ref["name"])]

    def deploy_custom(self, obj: Obj) -> None:
        spec = obj["spec"]
        worker = spec["worker"]
        port = int(worker["modelInvocationPort"]["containerPort"])
        container: dict[str, Any] = {
            "name": "model-worker",
            "image": worker["image"],
            "ports": [
                {"containerPort": port, "name": worker["modelInvocationPort"].get("name", "http")}
            ],
            "resources": clone(worker.get("resources") or {}),
            "env": [
                e
                for e in worker.get("environmentVariables") or []
                if isinstance(e, dict) and "name" in e
            ],
            "volumeMounts": [
                {
                    "name": worker["modelVolumeMount"]["name"],
                    "mountPath": worker["modelVolumeMount"]["mountPath"],
                }
            ],
        }
        for field in ("args", "command", "workingDir"):
            if worker.get(field):
                container[field] = worker[field]
        volume = {"name": worker["modelVolumeMount"]["name"], "emptyDir": {}}
        types = spec.get("instanceTypes") or (
            [spec["instanceType"]] if spec.get("instanceType") else []
        )
        self._reconcile(obj, IEC, container, volume, types, port)

    def deploy_jumpstart(self, obj: Obj) -> None:
        model = obj["spec"]["model"]
        container = {
            "name": "model-worker",
            "image": f"763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:lmi-{model['modelId']}",
            "ports": [{"containerPort": 8080, "name": "http"}],
            "env": [{"name": "SM_MODEL_ID", "value": model["modelId"]}]
            + [
                e
                for e in obj["spec"].get("environmentVariables") or []
                if isinstance(e, dict) and "name" in e
            ],
        }
        types = [obj["spec"]["server"]["instanceType"]]
        self._reconcile(obj, JSM, container, None, types, 8080)

    def _replicas(self, obj: Obj) -> int:
        spec = obj["spec"]
        if spec.get("replicas") is not None:
            return int(spec["replicas"])
        scaling = spec.get("autoScalingSpec") or {}
        return max(1, int(scaling.get("minReplicaCount", 1)))

    def _reconcile(
        self, obj: Obj, key: str, container: Obj, volume: Obj | None, types: list[str], port: int
    ) -> None:
        ns = obj["metadata"]["namespace"]
        name = obj["spec"].get("endpointName") or obj["metadata"]["name"]
        labels = {"app": name, "deploying-service": "hyperpod-inference"}
        pod_spec: dict[str, Any] = {"containers": [container]}
        if volume:
            pod_spec["volumes"] = [volume]
        if types:
            pod_spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "node.kubernetes.io/instance-type",
                                        "operator": "In",
                                        "values": types,
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
        replicas = self._replicas(obj)
        deploy = self.store.get("deployments.apps", ns, name)
        if deploy is None:
            self.create(
                "deployments.apps",
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [owner_ref(obj)],
                    },
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels}, "spec": pod_spec},
                    },
                },
            )
            deploy = self.store.get("deployments.apps", ns, name)
        elif (
            int(deploy["spec"].get("replicas", 1)) != replicas
            and obj["spec"].get("replicas") is not None
        ):
            scaled = clone(deploy)
            scaled["spec"]["replicas"] = replicas
            self.update("deployments.apps", scaled)
        if self.store.get("services", ns, f"{name}-routing-service") is None:
            self.create(
                "services",
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": f"{name}-routing-service",
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [owner_ref(obj)],
                    },
                    "spec": {
                        "selector": labels,
                        "ports": [{"name": "http", "port": port, "targetPort": port}],
                    },
                },
            )
        dstatus = (deploy or {}).get("status") or {}
        available = int(dstatus.get("availableReplicas", 0))
        complete = deploy is not None and available >= replicas
        state = "DeploymentComplete" if complete else "DeploymentInProgress"
        status = {
            "state": state,
            "replicas": int(dstatus.get("replicas", 0)),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
            "observedGeneration": obj["metadata"].get("generation", 1),
            "deploymentStatus": {
                "name": name,
                "deploymentObjectOverallState": state,
                "lastUpdated": now_iso(),
                "status": {
                    k: dstatus.get(k, 0)
                    for k in ("availableReplicas", "readyReplicas", "replicas", "updatedReplicas")
                },
            },
            "conditions": [
                _condition(
                    "DeploymentReady",
                    complete,
                    "Ready" if complete else "InProgress",
                    f"{available}/{replicas} model workers available",
                ),
            ],
            "endpoints": {"service": f"{name}-routing-service.{ns}.svc.cluster.local:{port}"},
        }
        old = obj.get("status") or {}
        if {k: v for k, v in status.items() if k not in ("deploymentStatus", "conditions")} != {
            k: old.get(k) for k in status if k not in ("deploymentStatus", "conditions")
        } or [c["status"] for c in status["conditions"]] != [
            c.get("status") for c in old.get("conditions") or []
        ]:
            obj["status"] = status
            self.update_status(key, obj)
