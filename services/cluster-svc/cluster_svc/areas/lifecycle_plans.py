"""Dry runs of the lifecycle mutations: buckets, cluster create, delete, import, reconcile.

Each plan reads actual state first (the bucket exists? the spec passes the account's checks?
what did the cluster's creation make?) and lists the AWS calls the operation would make, in the
order its stages would make them; nothing is created or stored.
"""

from __future__ import annotations

from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain import fsx, inspection
from cluster_svc.domain.cluster_workflow import ClusterPorts
from cluster_svc.domain.dependencies import dependency_set
from shared.contracts.commands import (
    CreateCluster,
    CreateStorageBucket,
    DeleteCluster,
    DeleteStorageBucket,
    ImportCluster,
)
from shared.contracts.dependencies import ReconcileDependencies
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.queries import BadRequest

# What each stage of cluster creation calls when it has to create (stage order of the graph).
CREATE_CALLS: tuple[tuple[str, str, str], ...] = (
    ("network", "ec2", "CreateVpc"),
    ("network", "ec2", "CreateInternetGateway"),
    ("network", "ec2", "CreateSubnet"),
    ("network", "ec2", "AllocateAddress"),
    ("network", "ec2", "CreateNatGateway"),
    ("network", "ec2", "CreateRouteTable"),
    ("security_group", "ec2", "CreateSecurityGroup"),
    ("security_group", "ec2", "AuthorizeSecurityGroupIngress"),
    ("compute_subnet", "ec2", "CreateSubnet"),
    ("eks_role", "iam", "CreateRole"),
    ("execution_role", "iam", "CreateRole"),
    ("bucket", "s3", "CreateBucket"),
    ("bucket", "s3", "PutObject"),
    ("eks_cluster", "eks", "CreateCluster"),
    ("oidc_provider", "iam", "CreateOpenIDConnectProvider"),
    ("access_entries", "eks", "CreateAccessEntry"),
    ("dependencies", "eks", "CreateAddon"),
    ("hyperpod_cluster", "sagemaker", "CreateCluster"),
    ("storage", "kubernetes", "PersistentVolume+PersistentVolumeClaim"),
)

# What delete calls for each kind of resource a create stage recorded under `created`.
DELETE_CALLS = {
    "hyperpod_cluster": ("sagemaker", "DeleteCluster"),
    "fsx": ("fsx", "DeleteFileSystem"),
    "dependencies": ("eks", "DeleteAddon"),
    # Made by an adoption (a created cluster's entries go with its EKS cluster).
    "access_entries": ("eks", "DeleteAccessEntry"),
    "eks_cluster": ("eks", "DeleteCluster"),
    "oidc_provider": ("iam", "DeleteOpenIDConnectProvider"),
    "compute_subnet": ("ec2", "DeleteSubnet"),
    "security_group": ("ec2", "DeleteSecurityGroup"),
    "network": ("ec2", "DeleteVpc"),
    "eks_role": ("iam", "DeleteRole"),
    "execution_role": ("iam", "DeleteRole"),
    "bucket": ("s3", "DeleteBucket"),
}


def _made(outputs: dict[str, Any]) -> bool:
    created = outputs.get("created")
    return bool(created) if not isinstance(created, dict) else any(created.values())


def _file_system_call(capacity_gib: int) -> PlannedCall:
    """The `fsx` stage's CreateFileSystem, as its defaults make it."""
    lustre: dict[str, Any] = {"DeploymentType": fsx.DEFAULT_DEPLOYMENT}
    if fsx.DEFAULT_DEPLOYMENT == "PERSISTENT_2":
        lustre["PerUnitStorageThroughput"] = fsx.DEFAULT_THROUGHPUT_PER_TIB
    return PlannedCall(
        service="fsx",
        operation="CreateFileSystem",
        params={
            "stage": "fsx",
            "FileSystemType": "LUSTRE",
            "StorageCapacity": capacity_gib,
            "LustreConfiguration": lustre,
        },
    )


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    async def create_bucket(payload: dict[str, Any]) -> Plan:
        cmd = CreateStorageBucket.from_payload(payload)
        if await ports.buckets.exists(cmd.name):
            return Plan(
                command="CreateStorageBucket",
                target=cmd.name,
                noop=True,
                notes=["the bucket exists"],
            )
        calls = [
            PlannedCall(service="s3", operation=op, params={"Bucket": cmd.name})
            for op in (
                "CreateBucket",
                "PutBucketTagging",
                "PutPublicAccessBlock",
                "PutBucketEncryption",
            )
        ]
        return Plan(
            command="CreateStorageBucket",
            target=cmd.name,
            noop=False,
            diff={"exists": FieldChange(actual=False, requested=True)},
            calls=calls,
        )

    async def delete_bucket(payload: dict[str, Any]) -> Plan:
        cmd = DeleteStorageBucket.from_payload(payload)
        if not await ports.buckets.exists(cmd.name):
            return Plan(
                command="DeleteStorageBucket",
                target=cmd.name,
                noop=True,
                notes=["the bucket is gone"],
            )
        return Plan(
            command="DeleteStorageBucket",
            target=cmd.name,
            noop=False,
            diff={"exists": FieldChange(actual=True, requested=False)},
            calls=[
                PlannedCall(service="s3", operation="DeleteObjects", params={"Bucket": cmd.name}),
                PlannedCall(service="s3", operation="DeleteBucket", params={"Bucket": cmd.name}),
            ],
            notes=["every object and version in the bucket is deleted first"],
        )

    async def create_cluster(payload: dict[str, Any]) -> Plan:
        cmd = CreateCluster.from_payload(payload)
        problems = await inspection.check_create(ports.inspector, cmd.spec, cmd.region)
        if problems:
            message, hint = inspection.problems_summary(problems)
            raise BadRequest(message, hint)
        addons = [
            c.name for c in dependency_set(cmd.spec.name, cmd.region) if c.kind == "eks-addon"
        ]
        calls = []
        for stage, service, operation in CREATE_CALLS:
            params: dict[str, Any] = {"stage": stage}
            if stage == "dependencies":
                params["addons"] = addons
            if stage in ("eks_cluster", "hyperpod_cluster"):
                params["name"] = cmd.spec.name
            if stage == "bucket":
                params["Bucket"] = cmd.bucket
            if stage == "hyperpod_cluster":
                params["InstanceGroups"] = [
                    {
                        "InstanceGroupName": g.name,
                        "InstanceType": g.instance_type,
                        "InstanceCount": g.count,
                    }
                    for g in cmd.spec.instance_groups
                ]
            if stage == "storage" and cmd.spec.storage.fsx_capacity_gib is not None:
                calls.append(_file_system_call(cmd.spec.storage.fsx_capacity_gib))
            calls.append(PlannedCall(service=service, operation=operation, params=params))
        return Plan(
            command="CreateCluster",
            target=cmd.spec.name,
            noop=False,
            diff={"cluster": FieldChange(actual=None, requested=cmd.spec.model_dump(mode="json"))},
            calls=calls,
            notes=[
                "each stage reads actual state first and creates only what is missing",
                f"instance groups: {', '.join(f'{g.name} ({g.count} x {g.instance_type})' for g in cmd.spec.instance_groups)}",
            ],
        )

    async def delete_cluster(payload: dict[str, Any]) -> Plan:
        cmd = DeleteCluster.from_payload(payload)
        calls = [
            PlannedCall(
                service=service,
                operation=operation,
                params={"stage": stage, "created": outputs.get("created")},
            )
            for stage, (service, operation) in DELETE_CALLS.items()
            if _made(outputs := cmd.resources.get(stage, {}))
        ]
        notes = [
            "only what Hyperpilot recorded as created is deleted; imported or shared resources are never touched"
        ]
        kept = (cmd.resources.get("adoption") or {}).get("kept")
        if kept:
            notes.append(
                f"adopted: EKS cluster {kept.get('eks_cluster')}, VPC {kept.get('vpc_id')},"
                f" node groups {', '.join(kept.get('nodegroups') or []) or 'none'} and add-ons"
                f" {', '.join(kept.get('addons') or []) or 'none'} were there before and stay"
            )
        return Plan(
            command="DeleteCluster",
            target=cmd.name,
            noop=not calls,
            calls=calls,
            notes=notes,
        )

    async def import_cluster(payload: dict[str, Any]) -> Plan:
        cmd = ImportCluster.from_payload(payload)
        found = await ports.eks.describe_cluster(cmd.spec.eks_cluster_name)
        if found is None:
            raise BadRequest(
                f"no EKS cluster named {cmd.spec.eks_cluster_name}",
                "list importable clusters with GET /api/v1/inspect/clusters",
            )
        return Plan(
            command="ImportCluster",
            target=cmd.spec.eks_cluster_name,
            noop=False,
            notes=["read-only: the cluster is described and remembered, never changed"],
        )

    async def reconcile(payload: dict[str, Any]) -> Plan:
        cmd = ReconcileDependencies.from_payload(payload)
        return Plan(
            command="ReconcileDependencies",
            target=cmd.spec.name,
            noop=False,
            calls=[
                PlannedCall(
                    service="eks", operation="CreateAddon or UpdateAddon", params={"addon": c.name}
                )
                for c in dependency_set(cmd.spec.name, cmd.region)
                if c.kind == "eks-addon"
            ],
            notes=[
                "only components whose installed version differs are installed or upgraded; the operation reports each"
            ],
        )

    return Area(
        planners={
            "CreateStorageBucket": create_bucket,
            "DeleteStorageBucket": delete_bucket,
            "CreateCluster": create_cluster,
            "DeleteCluster": delete_cluster,
            "ImportCluster": import_cluster,
            "ReconcileDependencies": reconcile,
        }
    )
