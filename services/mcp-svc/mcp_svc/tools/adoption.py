"""Bringing an outside cluster under management and keeping its record true: inspect and adopt
an existing EKS cluster (dry run first); read, refresh, accept or restore a cluster's drift."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import OperationStarted, Passthrough, ToolResult
from mcp_svc.tools.common import ClusterRef, DryRun, Region, RequestId, count, submit
from shared.boundary import api_path
from shared.contracts.adoption import AdoptSpec
from shared.contracts.cluster import NAME_PATTERN
from shared.contracts.drift import DriftFieldName


class AdoptionMissing(Passthrough):
    stage: str = Field(description="The adoption stage that adds it")
    adds: str = Field(description="What it adds")


class AdoptionBlocker(Passthrough):
    field: str = Field(description="The field to change")
    rule: str = Field(description="The rule broken")
    message: str = Field(description="What is wrong")
    hint: str = Field(description="What to do instead")


class AdoptionInspection(ToolResult):
    adoptable: bool = Field(description="No blocker: adopt_cluster can go ahead")
    cluster: dict[str, Any] = Field(
        description="Version, status, VPC, subnets, authentication mode, OIDC issuer"
    )
    nodegroups: list[dict[str, Any]] = Field(description="Its managed node groups (kept)")
    addons: list[dict[str, Any]] = Field(description="Its EKS add-ons (kept)")
    access_entries: list[str] = Field(description="Principals with an access entry")
    missing: list[AdoptionMissing] = Field(description="What adoption would add")
    blockers: list[AdoptionBlocker] = Field(description="What stops an adoption now")


def register(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="clusters", rest="GET /api/v1/inspect/adoption")
    async def inspect_adoption(
        eks_cluster_name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=63,
                pattern=NAME_PATTERN,
                description="An EKS cluster of the account (list_account_clusters)",
            ),
        ],
        region: Region = None,
    ) -> AdoptionInspection:
        """Read an existing EKS cluster for adoption, changing nothing: version, networking, node
        groups, add-ons, access entries, OIDC, what HyperPod still needs and what blocks it. Show
        it to the user before adopt_cluster."""
        found = await gateway.get(
            "/api/v1/inspect/adoption", {"eks_cluster_name": eks_cluster_name, "region": region}
        )
        result = AdoptionInspection.model_validate(found | {"summary": ""})
        cluster = result.cluster
        if result.blockers:
            verdict = "not adoptable: " + "; ".join(b.message for b in result.blockers)
        else:
            verdict = f"adoptable; adoption adds {count(len(result.missing), 'thing')}"
        result.summary = (
            f"EKS cluster {cluster.get('name')} (Kubernetes {cluster.get('version')},"
            f" {count(len(result.nodegroups), 'node group')},"
            f" {count(len(result.addons), 'add-on')}): {verdict}."
        )
        return result

    @server.write_tool(area="clusters", rest="POST /api/v1/clusters/adopt", body_param="cluster")
    async def adopt_cluster(
        cluster: Annotated[
            AdoptSpec,
            Field(description="The EKS cluster and the HyperPod instance groups to add to it"),
        ],
        region: Region = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Adopt an EKS cluster Hyperpilot did not create: add access entries, missing
        dependencies, a HyperPod cluster and its instance groups. Run with dry_run first and
        confirm with the user; a later delete_cluster removes only what the adoption added."""
        body: dict[str, Any] = cluster.model_dump(mode="json", exclude_unset=True)
        if region is not None:
            body["region"] = region
        return await submit(
            gateway,
            tool="adopt_cluster",
            arguments={"cluster": cluster, "region": region, "request_id": request_id},
            method="POST",
            path="/api/v1/clusters/adopt",
            body=body,
            what=f"adoption of {cluster.eks_cluster_name}",
            dry_run=dry_run,
        )

    register_drift(server, gateway)


class DriftDifference(Passthrough):
    field: str = Field(description="e.g. instance_groups.gpu.count, components.keda")
    recorded: Any = Field(None, description="What Hyperpilot recorded")
    actual: Any = Field(None, description="What AWS or Kubernetes says now")


class ClusterDrift(ToolResult):
    cluster: str = Field(description="The cluster")
    drifted: bool = Field(description="Some recorded value differs from the actual one")
    differences: list[DriftDifference] = Field(description="Each drifted field")
    observed_at: str | None = Field(None, description="When the drift watcher last looked")
    accepted: dict[str, Any] | None = Field(None, description="What accept_cluster_drift took")


def _drift_result(answer: dict[str, Any], verb: str = "") -> ClusterDrift:
    result = ClusterDrift.model_validate(answer | {"summary": ""})
    shown = "; ".join(
        f"{d.field}: recorded {d.recorded!r}, actual {d.actual!r}" for d in result.differences[:8]
    )
    result.summary = (
        f"{verb}{result.cluster}: "
        + (
            f"{count(len(result.differences), 'drifted field')}: {shown}."
            if result.drifted
            else "no drift."
        )
        + (
            " Accept the actual values (accept_cluster_drift) or restore the recorded ones"
            " (restore_cluster_drift, dry_run first)."
            if result.drifted
            else ""
        )
    )
    return result


DriftField = DriftFieldName


def register_drift(server: HyperpilotServer, gateway: Gateway) -> None:
    @server.read_tool(area="clusters", rest="GET /api/v1/clusters/{name}/drift")
    async def get_cluster_drift(name: ClusterRef) -> ClusterDrift:
        """Where a cluster's record and its actual state differ (someone changed AWS or
        Kubernetes behind Hyperpilot's back), as the drift watcher last saw it."""
        return _drift_result(await gateway.get(api_path("clusters", name, "drift")))

    @server.write_tool(
        area="clusters",
        rest="POST /api/v1/clusters/{name}/refresh",
        status_tool="get_cluster_drift",
    )
    async def refresh_cluster(name: ClusterRef) -> ClusterDrift:
        """Re-read a cluster's actual state now (AWS and Kubernetes are only read) and answer
        its differences from the record."""
        answer = await gateway.mutate(
            "POST",
            api_path("clusters", name, "refresh"),
            tool="refresh_cluster",
            arguments={"name": name},
            body=None,
        )
        return _drift_result(answer, "refreshed ")

    @server.write_tool(
        area="clusters",
        rest="POST /api/v1/clusters/{name}/drift/accept",
        status_tool="get_cluster_drift",
    )
    async def accept_cluster_drift(
        name: ClusterRef,
        fields: Annotated[
            list[DriftField] | None,
            Field(max_length=100, description="Drifted fields to accept; all if omitted"),
        ] = None,
    ) -> ClusterDrift:
        """Write the actual values of drifted fields into the record (nothing in AWS changes).
        Confirm with the user first: the recorded intent is replaced."""
        answer = await gateway.mutate(
            "POST",
            api_path("clusters", name, "drift", "accept"),
            tool="accept_cluster_drift",
            arguments={"name": name, "fields": fields},
            body={"fields": fields},
        )
        return _drift_result(answer, "accepted on ")

    @server.write_tool(area="clusters", rest="POST /api/v1/clusters/{name}/drift/restore")
    async def restore_cluster_drift(
        name: ClusterRef, field: DriftField, dry_run: DryRun = False, request_id: RequestId = None
    ) -> OperationStarted:
        """Put a drifted field's recorded value back with the operation that sets it (an
        instance group's count or presence, a dependency). Run with dry_run first."""
        return await submit(
            gateway,
            tool="restore_cluster_drift",
            arguments={"name": name, "field": field, "request_id": request_id},
            method="POST",
            path=api_path("clusters", name, "drift", "restore"),
            body={"field": field},
            what=f"restore of {field} on {name}",
            dry_run=dry_run,
        )
