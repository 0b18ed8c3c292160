"""Composition root of inference-svc: its command table, dry runs, reads and companions
(`shared.service.Area`), over one set of adapters."""

from __future__ import annotations

from inference_svc import records
from inference_svc.access import Clusters
from inference_svc.adapters.k8s import ClusterEndpoint, KubeClients
from inference_svc.domain.workflows import (
    assign_workflow,
    delete_workflow,
    deploy_workflow,
    scale_workflow,
)
from inference_svc.queries import Reads
from inference_svc.watcher import StatusWatcher
from shared.contracts.inference import (
    AssignPoolWorker,
    DeleteEndpoint,
    DeployEndpoint,
    ScaleEndpoint,
)
from shared.service import Area, Service, ServiceRuntime


def areas(runtime: ServiceRuntime) -> list[Area]:
    clusters = Clusters(runtime.pool, KubeClients(runtime.settings.aws_region), ClusterEndpoint)
    reads = Reads(clusters)

    async def watch_endpoints(runtime: ServiceRuntime) -> None:
        await StatusWatcher(runtime.pool, clusters).run()

    endpoints = Area(
        workflows=records.recorded(
            {
                DeployEndpoint.__name__: deploy_workflow(clusters),
                ScaleEndpoint.__name__: scale_workflow(clusters),
                AssignPoolWorker.__name__: assign_workflow(clusters),
                DeleteEndpoint.__name__: delete_workflow(clusters),
            }
        ),
        planners=reads.planners(),
        read_routes=reads.routes(),
        companions=(watch_endpoints,),
    )
    return [endpoints]


SERVICE = Service(name="inference-svc", domains=("inference",), areas=areas)
