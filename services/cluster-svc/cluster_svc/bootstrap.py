"""Composition root of cluster-svc: adapters in, handlers out."""

from __future__ import annotations

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.domain.storage import create_bucket_workflow, delete_bucket_workflow
from cluster_svc.handlers import build_handlers
from shared.consumer import Handler
from shared.contracts.commands import CreateStorageBucket, DeleteStorageBucket
from shared.contracts.subjects import domain_commands
from shared.service import ServiceRuntime

NAME = "cluster-svc"
SUBJECTS = [domain_commands("cluster"), domain_commands("storage")]


def handlers(runtime: ServiceRuntime) -> dict[str, Handler]:
    aws = AwsClients(runtime.settings.aws_region, runtime.settings.aws_endpoint_url)
    buckets = S3Buckets(aws)
    return build_handlers(
        runtime.engine,
        {
            CreateStorageBucket.__name__: create_bucket_workflow(buckets),
            DeleteStorageBucket.__name__: delete_bucket_workflow(buckets),
        },
    )
