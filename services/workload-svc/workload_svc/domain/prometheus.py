"""What a Prometheus server beside the control plane is told to scrape: one scrape job per
cluster, reaching the exporters (and the model servers) the way workload-svc's own scraper does,
through the cluster's API server pod proxy with workload-svc's EKS credentials.

Pure: the configuration and the file_sd target groups as data; workload_svc.adapters.prometheus
writes them. Per job, `authorization.credentials_file` and `tls_config.ca_file` are files the
server re-reads on use, so a renewed token needs no reload; a cluster that comes or goes changes
the job list, and then the server is asked to reload. File-based discovery
(https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config)
re-reads a target file when it changes: the labels `__address__` (the API server),
`__metrics_path__` (the pod proxy path) and `__scheme__` set where each target is scraped, and
`cluster`, `job` and `instance` are the labels its series carry, as the in-process store gives
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import quote, urlsplit

from shared.contracts.metrics import CLUSTER_LABEL

SCRAPE_INTERVAL = "2s"  # as often as the in-process scraper (workload_svc.metrics.SCRAPE_SECONDS)
JOB_PREFIX = "cluster-"


@dataclass(frozen=True)
class ScrapeTarget:
    """One pod port, and the labels its samples get (`job`, `instance` and any more)."""

    job: str
    namespace: str
    pod: str
    port: int
    instance: str
    labels: tuple[tuple[str, str], ...] = ()


def job_name(cluster: str) -> str:
    return f"{JOB_PREFIX}{cluster}"


def token_file(home: PurePath, cluster: str) -> PurePath:
    return home / "auth" / f"{cluster}.token"


def ca_file(home: PurePath, cluster: str) -> PurePath:
    return home / "auth" / f"{cluster}.crt"


def targets_file(home: PurePath, cluster: str) -> PurePath:
    return home / "targets" / f"{cluster}.json"


def config(home: PurePath, clusters: Iterable[str]) -> dict[str, Any]:
    """prometheus.yml: a job per cluster, each reading its own target, token and CA files."""
    jobs = [
        {
            "job_name": job_name(cluster),
            "scheme": "https",
            "authorization": {
                "type": "Bearer",
                "credentials_file": str(token_file(home, cluster)),
            },
            "tls_config": {"ca_file": str(ca_file(home, cluster))},
            "file_sd_configs": [
                {"files": [str(targets_file(home, cluster))], "refresh_interval": "5s"}
            ],
        }
        for cluster in sorted(set(clusters))
    ]
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
        "scrape_configs": jobs,
    }


def target_groups(
    cluster: str, endpoint: str, targets: Iterable[ScrapeTarget]
) -> list[dict[str, Any]]:
    """The file_sd groups of one cluster: each target is its API server's address with the pod
    proxy path of the pod's port (`/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/metrics`)."""
    where = urlsplit(endpoint)
    prefix = where.path.rstrip("/")
    groups = []
    for target in targets:
        path = (
            f"{prefix}/api/v1/namespaces/{quote(target.namespace, safe='')}/pods/"
            f"{quote(target.pod, safe='')}:{target.port}/proxy/metrics"
        )
        labels: Mapping[str, str] = dict(target.labels) | {
            "__metrics_path__": path,
            "__scheme__": where.scheme or "https",
            CLUSTER_LABEL: cluster,
            "job": target.job,
            "instance": target.instance,
        }
        groups.append({"targets": [where.netloc], "labels": dict(labels)})
    return groups
