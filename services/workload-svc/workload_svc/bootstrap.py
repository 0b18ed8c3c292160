"""Composition root of workload-svc: its command table, dry runs, reads and companions
(`shared.service.Area`), over one set of adapters."""

from __future__ import annotations

from shared.contracts.subjects import query_subject
from shared.contracts.workloads import (
    CancelJob,
    CreateTrackingServer,
    DeleteJob,
    DownloadModel,
    SubmitJob,
)
from shared.service import Area, Service, ServiceRuntime
from workload_svc import records
from workload_svc.access import Clusters
from workload_svc.adapters.k8s import ClusterEndpoint, KubeClients
from workload_svc.adapters.mlflow import MlflowIdentity, MlflowRuns
from workload_svc.adapters.prometheus import Prometheus
from workload_svc.adapters.sagemaker import TrackingServers
from workload_svc.adapters.secretsmanager import SecretsManager
from workload_svc.domain.mlflow import tracking_server_workflow
from workload_svc.domain.workflows import cancel_workflow, delete_workflow, submit_workflow
from workload_svc.metrics import Metrics
from workload_svc.queries import Reads
from workload_svc.run_reads import RunReads
from workload_svc.spaces import Spaces
from workload_svc.terminal import Terminal
from workload_svc.watcher import StatusWatcher


def areas(runtime: ServiceRuntime) -> list[Area]:
    settings = runtime.settings
    servers = TrackingServers(settings.aws_region, settings.aws_endpoint_url)
    clusters = Clusters(
        runtime.pool, KubeClients(settings.aws_region), ClusterEndpoint, hyperpod=servers
    )
    secrets = SecretsManager(settings.aws_endpoint_url)
    identity = MlflowIdentity(settings.aws_region, settings.aws_endpoint_url)
    reads = Reads(runtime.pool, clusters, servers)
    runs = RunReads(clusters, MlflowRuns(settings.aws_region, settings.aws_endpoint_url))

    async def watch_jobs(runtime: ServiceRuntime) -> None:
        await StatusWatcher(runtime.pool, clusters).run()

    jobs = Area(
        workflows=records.recorded(
            {
                SubmitJob.__name__: submit_workflow(
                    clusters, SubmitJob.kind(), secrets, identity, clusters.eks_name
                ),
                DownloadModel.__name__: submit_workflow(clusters, DownloadModel.kind()),
                CancelJob.__name__: cancel_workflow(clusters),
                DeleteJob.__name__: delete_workflow(clusters),
                CreateTrackingServer.__name__: tracking_server_workflow(servers),
            }
        ),
        planners=reads.planners(),
        read_routes={**reads.routes(), **runs.routes()},
        companions=(watch_jobs,),
    )
    metrics = Metrics(clusters, prometheus=Prometheus.from_env())

    async def scrape_metrics(runtime: ServiceRuntime) -> None:
        await metrics.run()

    observed = Area(
        read_routes={query_subject("workload", "metrics"): metrics.query},
        companions=(scrape_metrics,),
    )
    return [jobs, observed, Spaces(clusters).area(), Terminal(clusters, runtime.bus).area()]


# Quiet: a query may carry a secret (hf_token, store_secret).
SERVICE = Service(name="workload-svc", domains=("workload",), areas=areas, quiet=True)
