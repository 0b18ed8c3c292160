"""Composition root of workload-svc: adapters in, handlers and companions out."""

from __future__ import annotations

import asyncio
from functools import cache

from shared.consumer import Handler
from shared.contracts.subjects import domain_commands
from shared.contracts.workloads import (
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    DownloadModel,
    SubmitJob,
)
from shared.service import ServiceRuntime
from workload_svc.access import Clusters
from workload_svc.adapters.k8s import ClusterEndpoint, KubeClients
from workload_svc.adapters.sagemaker import TrackingServers
from workload_svc.adapters.secretsmanager import SecretsManager
from workload_svc.domain.mlflow import tracking_server_workflow
from workload_svc.domain.workflows import cancel_workflow, delete_workflow, submit_workflow
from workload_svc.handlers import build_handlers
from workload_svc.queries import Responder
from workload_svc.watcher import StatusWatcher

NAME = "workload-svc"
SUBJECTS = [domain_commands("workload")]


@cache
def _kube_clients(region: str) -> KubeClients:
    return KubeClients(region)


def tracking_servers(runtime: ServiceRuntime) -> TrackingServers:
    return TrackingServers(runtime.settings.aws_region, runtime.settings.aws_endpoint_url)


def clusters(runtime: ServiceRuntime) -> Clusters:
    return Clusters(runtime.pool, _kube_clients(runtime.settings.aws_region), ClusterEndpoint)


def handlers(runtime: ServiceRuntime) -> dict[str, Handler]:
    access = clusters(runtime)
    workflows = {
        SubmitJob.__name__: submit_workflow(
            access, SubmitJob.kind(), SecretsManager(runtime.settings.aws_endpoint_url)
        ),
        DownloadModel.__name__: submit_workflow(access, DownloadModel.kind()),
        CancelJob.__name__: cancel_workflow(access),
        DeleteJob.__name__: delete_workflow(access),
        CreateTrackingServer.__name__: tracking_server_workflow(tracking_servers(runtime)),
    }
    return build_handlers(runtime.engine, workflows)


async def answer_queries(runtime: ServiceRuntime) -> None:
    """Dry runs, live job reads, log pages and token Secrets over request/reply."""
    await runtime.bus.wait_ready()
    assert runtime.bus.nc is not None
    responder = Responder(
        runtime.bus.nc, runtime.pool, clusters(runtime), tracking_servers(runtime)
    )
    await responder.start()
    try:
        await asyncio.Event().wait()
    finally:
        await responder.stop()


async def watch_jobs(runtime: ServiceRuntime) -> None:
    await StatusWatcher(runtime.pool, clusters(runtime)).run()


COMPANIONS = (answer_queries, watch_jobs)
