"""Which controllers and operators an API server runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim.k8s.controllers.autoscaling import HorizontalPodAutoscalerController
from sim.k8s.controllers.base import Controller
from sim.k8s.controllers.jobs import JobController
from sim.k8s.controllers.kubelet import Kubelet
from sim.k8s.controllers.namespaces import NamespaceController
from sim.k8s.controllers.nodes import NodeController
from sim.k8s.controllers.scheduler import Scheduler
from sim.k8s.controllers.services import ServiceController
from sim.k8s.controllers.volumes import VolumeController
from sim.k8s.controllers.workloads import (
    DaemonSetController,
    DeploymentController,
    ReplicaSetController,
    StatefulSetController,
)
from sim.k8s.operators import all_operators

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer


def build(server: ApiServer) -> list[Controller]:

    controllers: list[Controller] = [
        NodeController(server),
        Scheduler(server),
        Kubelet(server),
        NamespaceController(server),
        ReplicaSetController(server),
        DeploymentController(server),
        StatefulSetController(server),
        DaemonSetController(server),
        JobController(server),
        ServiceController(server),
        VolumeController(server),
        HorizontalPodAutoscalerController(server),
    ]
    controllers += all_operators(server)
    return controllers


def find(controllers: list[Controller], name: str) -> Any:
    for controller in controllers:
        if controller.name == name:
            return controller
    raise KeyError(name)
