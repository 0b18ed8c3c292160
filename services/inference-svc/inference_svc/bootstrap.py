"""Composition root of inference-svc: adapters in, handlers and companions out."""

from __future__ import annotations

import asyncio
from functools import cache

from inference_svc.access import Clusters
from inference_svc.adapters.k8s import ClusterEndpoint, KubeClients
from inference_svc.domain.workflows import (
    assign_workflow,
    delete_workflow,
    deploy_workflow,
    scale_workflow,
)
from inference_svc.handlers import build_handlers
from inference_svc.queries import Responder
from inference_svc.watcher import StatusWatcher
from shared.consumer import Handler
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    ScaleEndpoint,
)
from shared.contracts.subjects import domain_commands
from shared.service import ServiceRuntime

NAME = "inference-svc"
SUBJECTS = [domain_commands("inference")]


@cache
def _kube_clients(region: str) -> KubeClients:
    return KubeClients(region)


def clusters(runtime: ServiceRuntime) -> Clusters:
    return Clusters(runtime.pool, _kube_clients(runtime.settings.aws_region), ClusterEndpoint)


def handlers(runtime: ServiceRuntime) -> dict[str, Handler]:
    access = clusters(runtime)
    workflows = {
        DeployEndpoint.__name__: deploy_workflow(access),
        ScaleEndpoint.__name__: scale_workflow(access),
        AssignPoolWorker.__name__: assign_workflow(access),
        DeleteEndpoint.__name__: delete_workflow(access),
    }
    return build_handlers(runtime.engine, workflows)


async def answer_queries(runtime: ServiceRuntime) -> None:
    """Dry runs, live endpoint reads and invocations over request/reply."""
    await runtime.bus.wait_ready()
    assert runtime.bus.nc is not None
    responder = Responder(runtime.bus.nc, clusters(runtime))
    await responder.start()
    try:
        await asyncio.Event().wait()
    finally:
        await responder.stop()


async def watch_endpoints(runtime: ServiceRuntime) -> None:
    await StatusWatcher(runtime.pool, clusters(runtime)).run()


COMPANIONS = (answer_queries, watch_endpoints)
