"""Adopting an existing EKS cluster: inspect it (read-only), then adopt it (dry run first)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from mcp_svc.client import Gateway
from mcp_svc.registry import HyperpilotServer
from mcp_svc.results import OperationStarted, Passthrough, ToolResult
from mcp_svc.tools.common import DryRun, Region, RequestId, count, submit
from shared.contracts.adoption import AdoptSpec
from shared.contracts.cluster import NAME_PATTERN


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
        """Read an existing EKS cluster for adoption, changing nothing: its version,
        networking, node groups, add-ons, access entries and OIDC provider, what HyperPod still
        needs and what stops an adoption. Show it to the user before adopt_cluster."""
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
            Field(
                description="eks_cluster_name, availability_zone_id, instance_groups; bucket"
                " optional"
            ),
        ],
        region: Region = None,
        dry_run: DryRun = False,
        request_id: RequestId = None,
    ) -> OperationStarted:
        """Adopt an EKS cluster Hyperpilot did not create: add the access entries, missing
        dependencies, a HyperPod cluster (its own compute subnets, security group, execution
        role) and its instance groups. Run with dry_run first and confirm with the user; a
        later delete_cluster removes only what the adoption added."""
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
