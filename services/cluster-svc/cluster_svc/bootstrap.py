"""Composition root of cluster-svc: its command table, dry runs, reads and companions, area by
area (`shared.service.Area`), over one set of AWS clients."""

from __future__ import annotations

from cluster_svc import records
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.capacity_watch import CapacityWatches
from cluster_svc.adapters.inspect import Inspector
from cluster_svc.adapters.ports import build_ports
from cluster_svc.adapters.pricing import PriceList
from cluster_svc.areas import (
    adoption,
    aws_events,
    capacity,
    dependencies,
    drift,
    features,
    governance,
    instance_groups,
    lifecycle_plans,
    nodes,
    pricing,
    storage,
    training_plans,
)
from cluster_svc.domain.cluster_workflow import (
    create_cluster_workflow,
    delete_cluster_workflow,
    import_cluster_workflow,
)
from cluster_svc.domain.storage import create_bucket_workflow, delete_bucket_workflow
from cluster_svc.queries import aws_hint, inspect_area
from shared.contracts.commands import (
    CreateCluster,
    CreateStorageBucket,
    DeleteCluster,
    DeleteStorageBucket,
    ImportCluster,
)
from shared.service import Area, Service, ServiceRuntime
from shared.wake import ClusterSignals


def areas(runtime: ServiceRuntime) -> list[Area]:
    settings = runtime.settings
    aws = AwsClients(settings.aws_region, settings.aws_endpoint_url, settings.served_regions)
    ports = build_ports(aws)
    prices = PriceList(aws)
    watches = CapacityWatches()  # capacity and pending reads share one watch per cluster
    signals = ClusterSignals()  # node health events, from the event queues to the node watcher
    lifecycle = Area(
        workflows=records.recorded(
            {
                CreateStorageBucket.__name__: create_bucket_workflow(ports.buckets),
                DeleteStorageBucket.__name__: delete_bucket_workflow(ports.buckets),
                CreateCluster.__name__: create_cluster_workflow(ports),
                DeleteCluster.__name__: delete_cluster_workflow(
                    ports, adoption.delete_stages(aws, ports)
                ),
                ImportCluster.__name__: import_cluster_workflow(ports),
            }
        )
    )
    every = [
        lifecycle,
        lifecycle_plans.build(aws, ports),
        adoption.build(aws, ports),
        drift.build(aws, ports, runtime),
        aws_events.build(aws, runtime, signals),
        dependencies.build(aws, ports),
        instance_groups.build(aws, ports),
        nodes.build(aws, ports, signals),
        features.build(aws, ports),
        storage.build(aws, ports),
        capacity.build(aws, ports, prices, watches),
        governance.build(aws, ports, prices, watches),
        training_plans.build(aws),
        pricing.build(prices),
        inspect_area(Inspector(aws), prices),
    ]
    return pricing.priced(every, prices)


SERVICE = Service(
    name="cluster-svc", domains=("cluster", "storage"), areas=areas, stage_hint=aws_hint
)
