"""Composition root of cluster-svc: adapters in, handlers and companions out."""

from __future__ import annotations

import asyncio

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.inspect import Inspector
from cluster_svc.adapters.ports import build_ports
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.areas import build_areas
from cluster_svc.domain.cluster_workflow import (
    create_cluster_workflow,
    delete_cluster_workflow,
    import_cluster_workflow,
)
from cluster_svc.domain.storage import create_bucket_workflow, delete_bucket_workflow
from cluster_svc.handlers import build_handlers
from cluster_svc.planning import plan_route
from cluster_svc.queries import QueryResponder
from shared.consumer import Handler
from shared.contracts.commands import (
    CreateCluster,
    CreateStorageBucket,
    DeleteCluster,
    DeleteStorageBucket,
    ImportCluster,
)
from shared.contracts.subjects import domain_commands
from shared.service import ServiceRuntime

NAME = "cluster-svc"
SUBJECTS = [domain_commands("cluster"), domain_commands("storage")]


def aws_clients(runtime: ServiceRuntime) -> AwsClients:
    return AwsClients(runtime.settings.aws_region, runtime.settings.aws_endpoint_url)


def handlers(runtime: ServiceRuntime) -> dict[str, Handler]:
    aws = aws_clients(runtime)
    ports = build_ports(aws)
    buckets = S3Buckets(aws)
    workflows = {
        CreateStorageBucket.__name__: create_bucket_workflow(buckets),
        DeleteStorageBucket.__name__: delete_bucket_workflow(buckets),
        CreateCluster.__name__: create_cluster_workflow(ports),
        DeleteCluster.__name__: delete_cluster_workflow(ports),
        ImportCluster.__name__: import_cluster_workflow(ports),
    }
    for area in build_areas(aws, ports):
        workflows.update(area.workflows)
    return build_handlers(runtime.engine, workflows)


async def answer_queries(runtime: ServiceRuntime) -> None:
    """Inspect reads, further live reads and dry runs over request/reply."""
    await runtime.bus.wait_ready()
    assert runtime.bus.nc is not None
    aws = aws_clients(runtime)
    areas = build_areas(aws, build_ports(aws))
    planners = {k: v for area in areas for k, v in area.planners.items()}
    reads = {k: v for area in areas for k, v in area.read_routes.items()}
    responder = QueryResponder(runtime.bus.nc, Inspector(aws), {**reads, **plan_route(planners)})
    await responder.start()
    try:
        await asyncio.Event().wait()
    finally:
        await responder.stop()


async def area_companions(runtime: ServiceRuntime) -> None:
    """Run every area's companions for as long as the service runs."""
    aws = aws_clients(runtime)
    companions = [c for area in build_areas(aws, build_ports(aws)) for c in area.companions]
    await asyncio.gather(*(companion(runtime) for companion in companions))


COMPANIONS = (answer_queries, area_companions)
