"""Simulated operators: each acts only once the product has installed it (its CRD exists)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.k8s.operators.hyperpod_training import HyperPodTrainingOperator
from sim.k8s.operators.inference import InferenceOperator
from sim.k8s.operators.irsa import irsa_admission
from sim.k8s.operators.karpenter import KarpenterOperator
from sim.k8s.operators.keda import KedaOperator
from sim.k8s.operators.kueue import KueueController, admission_webhook
from sim.k8s.operators.ray import KubeRayOperator
from sim.k8s.operators.spaces import WorkspaceOperator, template_admission

if TYPE_CHECKING:
    from sim.k8s.controllers.base import Controller
    from sim.k8s.server import ApiServer


def all_operators(server: ApiServer) -> list[Controller]:

    admit: Any = irsa_admission(server)
    server.api.admission.append(admit)
    kueue_webhook: Any = admission_webhook(server)
    server.api.admission.append(kueue_webhook)
    templates: Any = template_admission(server)
    server.api.admission.append(templates)
    return [
        HyperPodTrainingOperator(server),
        KubeRayOperator(server),
        KedaOperator(server),
        InferenceOperator(server),
        KarpenterOperator(server),
        KueueController(server),
        WorkspaceOperator(server),
    ]
