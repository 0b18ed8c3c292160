"""Adopting an existing EKS cluster (domain/adoption.py): the workflow, its dry run, and the
read-only inspection `qry.cluster.adoption` (`eks_cluster_name`, `region`)."""

from __future__ import annotations

from typing import Any

from cluster_svc import records
from cluster_svc.adapters.adoption import EksAdoption
from cluster_svc.adapters.aws import AwsClients
from cluster_svc.areas import Area
from cluster_svc.domain.adoption import (
    AdoptionPorts,
    Assessment,
    adopt_workflow,
    delete_access_entries_stage,
    delete_manifests_stage,
    read_assessment,
)
from cluster_svc.domain.cluster_workflow import ClusterPorts
from shared.contracts.adoption import AdoptCluster
from shared.contracts.plan import FieldChange, Plan, PlannedCall
from shared.contracts.subjects import query_subject
from shared.queries import BadRequest
from shared.stages import Stage

ADOPTION = query_subject("cluster", "adoption")

# What each stage calls when something is missing (in stage order).
STAGE_CALLS = {
    "authentication_mode": ("eks", "UpdateClusterConfig"),
    "execution_role": ("iam", "CreateRole"),
    "oidc_provider": ("iam", "CreateOpenIDConnectProvider"),
    "access_entries": ("eks", "CreateAccessEntry"),
    "security_group": ("ec2", "CreateSecurityGroup"),
    "compute_subnet": ("ec2", "CreateSubnet"),
    "dependencies": ("eks", "CreateAddon"),
    "hyperpod_cluster": ("sagemaker", "CreateCluster"),
}


def adoption_plan(cmd: AdoptCluster, found: Assessment) -> Plan:
    """The dry run: what is there, what would be added, and what a later delete keeps."""
    cluster = found.cluster
    calls = [
        PlannedCall(
            service=STAGE_CALLS[m["stage"]][0],
            operation=STAGE_CALLS[m["stage"]][1],
            params={"stage": m["stage"], "adds": m["adds"]},
        )
        for m in found.missing
    ]
    calls.append(
        PlannedCall(
            service="s3",
            operation="CreateBucket (if missing) and PutObject",
            params={"stage": "bucket", "Bucket": cmd.bucket, "adds": "the lifecycle script"},
        )
    )
    calls.append(
        PlannedCall(
            service="kubernetes",
            operation="PersistentVolume+PersistentVolumeClaim",
            params={"stage": "storage"},
        )
    )
    groups = ", ".join(
        f"{g.name} ({g.count} x {g.instance_type})" for g in cmd.spec.instance_groups
    )
    nodegroups = ", ".join(
        f"{n['name']} ({n['desired_size']} x {'/'.join(n['instance_types'])}, {n['status']})"
        for n in found.nodegroups
    )
    addons = ", ".join(f"{a['name']} {a['version']}" for a in found.addons)
    notes = [
        f"EKS cluster {cluster['name']}: Kubernetes {cluster['version']}, {cluster['status']},"
        f" VPC {cluster['vpc_id']} (subnets {', '.join(cluster['subnet_ids'])}),"
        f" authentication mode {cluster['authentication_mode']}",
        f"node groups: {nodegroups or 'none'}",
        f"add-ons: {addons or 'none'}",
        f"access entries: {', '.join(found.access_entries) or 'none'}",
        f"OIDC issuer {cluster['oidc_issuer']}: "
        + ("registered with IAM" if cluster["oidc_provider_registered"] else "not registered"),
        f"HyperPod compute subnets are routed through {found.private_route_table_id}"
        if found.private_route_table_id
        else "no route table of the cluster's subnets has a NAT route",
        f"instance groups to add: {groups}",
        "kept on delete: the EKS cluster, its VPC and subnets, its node groups and the add-ons"
        " it had; delete removes only what this adoption adds",
        *[f"blocked: {p.field}: {p.message} ({p.hint})" for p in found.blockers],
    ]
    diff = {
        "hyperpod_cluster": FieldChange(actual=None, requested=cmd.spec.name),
        "instance_groups": FieldChange(
            actual=[], requested=[g.name for g in cmd.spec.instance_groups]
        ),
    }
    if any(m["stage"] == "authentication_mode" for m in found.missing):
        diff["authentication_mode"] = FieldChange(
            actual=cluster["authentication_mode"], requested="API_AND_CONFIG_MAP"
        )
    return Plan(
        command="AdoptCluster",
        target=cmd.spec.name,
        noop=False,
        diff=diff,
        calls=calls,
        notes=notes,
    )


def build(aws: AwsClients, ports: ClusterPorts) -> Area:
    reads = EksAdoption(aws)
    adoption = AdoptionPorts(
        reads=reads,
        ec2=ports.ec2,
        iam=ports.iam,
        eks=ports.eks,
        buckets=ports.buckets,
        sagemaker=ports.sagemaker,
        kube=ports.kube,
        addons=ports.addons,
        inspector=ports.inspector,
    )

    async def assessment(name: str, region: str) -> Assessment:
        found = await read_assessment(reads, ports.ec2, name, region)
        if found is None:
            raise BadRequest(
                f"eks_cluster_name: no EKS cluster named {name} in this account and region",
                "list the account's clusters with GET /api/v1/inspect/clusters",
            )
        return found

    async def plan(payload: dict[str, Any]) -> Plan:
        cmd = AdoptCluster.from_payload(payload)
        return adoption_plan(cmd, await assessment(cmd.spec.name, cmd.region))

    async def inspect(request: dict[str, Any]) -> dict[str, Any]:
        name = request.get("eks_cluster_name")
        if not isinstance(name, str) or not name:
            raise BadRequest(
                "eks_cluster_name is required",
                "ask through GET /api/v1/inspect/adoption?eks_cluster_name=<name>",
            )
        return (await assessment(name, str(request.get("region") or aws.region))).to_json()

    return Area(
        workflows=records.recorded({AdoptCluster.__name__: adopt_workflow(adoption)}),
        planners={AdoptCluster.__name__: plan},
        read_routes={ADOPTION: inspect},
    )


def delete_stages(aws: AwsClients, ports: ClusterPorts) -> list[Stage]:
    """What a cluster delete adds for an adopted cluster (noops for a created one)."""
    return [delete_manifests_stage(ports.kube), delete_access_entries_stage(EksAdoption(aws))]
