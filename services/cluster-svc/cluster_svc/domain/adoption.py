"""Adopting an existing EKS cluster: read it, say what HyperPod still needs, then add only that.

HyperPod's requirements of an EKS cluster (SageMaker developer guide, "Prerequisites for using
SageMaker HyperPod clusters orchestrated by Amazon EKS" and "Setting up access for HyperPod"):
a supported Kubernetes version, authentication mode API or API_AND_CONFIG_MAP (HyperPod adds
access entries for its nodes), a private subnet with outbound access (a NAT route) for the
nodes, the IAM OIDC provider of the cluster's issuer, the HyperPod dependencies installed, and at
most one HyperPod cluster per EKS cluster.

`assess` is the read-only inspection, pure over what the adapters read; `adopt_workflow` adds
what is missing, each step a stage, with the create's own stages where the work is the same
(the one compute-subnet function, the security group, the execution role, the bucket, the
dependencies, the HyperPod cluster). What it records under each stage's `created` is what
delete removes; the EKS cluster, its VPC, its node groups and its add-ons are recorded as not
created, so a delete leaves them where they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from cluster_svc.domain import dependencies, hyperpod, identity, inspection, network
from cluster_svc.domain.components.base import (
    KubeFactory,
    cluster_access,
    is_managed,
    object_ref,
)
from cluster_svc.domain.control_plane import (
    HYPERPOD_ENTRY_TYPE,
    EksPort,
    LifecycleBuckets,
    admin_policy_arn,
    is_ours,
    principal_arn,
    resource_tags,
)
from cluster_svc.domain.control_plane import create_stages as control_plane_stages
from cluster_svc.domain.network import RouteTable
from shared.contracts.adoption import AdoptCluster
from shared.contracts.cluster import KUBERNETES_VERSIONS
from shared.contracts.commands import DeleteCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted, Workflow

API_MODES = ("API", "API_AND_CONFIG_MAP")
ANYWHERE = "0.0.0.0/0"


@dataclass(frozen=True)
class EksView:
    """What an adoption reads of an EKS cluster (DescribeCluster)."""

    name: str
    arn: str
    status: str
    version: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]
    cluster_security_group_id: str | None
    authentication_mode: str
    endpoint: str | None
    ca_data: str | None
    oidc_issuer: str | None
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodegroupView:
    name: str
    status: str
    instance_types: tuple[str, ...]
    desired_size: int


@dataclass(frozen=True)
class AddonView:
    name: str
    version: str
    status: str
    managed: bool  # installed by Hyperpilot


class AdoptionReads(Protocol):
    """The reads (and the one configuration change) an adoption makes of EKS and HyperPod."""

    async def cluster(self, name: str) -> EksView | None: ...
    async def nodegroups(self, cluster: str) -> list[NodegroupView]: ...
    async def addons(self, cluster: str) -> list[AddonView]: ...
    async def access_entries(self, cluster: str) -> list[str]: ...
    async def access_entry_tags(
        self, cluster: str, principal_arn: str
    ) -> dict[str, str] | None: ...
    async def hyperpod_clusters_on(self, eks_arn: str) -> list[str]: ...
    async def oidc_provider_exists(self, issuer: str) -> bool: ...
    async def caller_arn(self) -> str: ...
    async def set_authentication_mode(self, cluster: str, mode: str) -> str: ...
    async def update_status(self, cluster: str, update_id: str) -> tuple[str, str]: ...
    async def delete_access_entry(self, cluster: str, principal_arn: str) -> bool: ...


@dataclass(frozen=True)
class Assessment:
    """The inspection of an EKS cluster for adoption: what it has, what is missing, and what
    stops an adoption (each blocker names the rule and what to do instead)."""

    cluster: dict[str, Any]
    nodegroups: list[dict[str, Any]]
    addons: list[dict[str, Any]]
    access_entries: list[str]
    private_route_table_id: str | None
    missing: list[dict[str, str]]  # stage -> what it adds
    blockers: list[inspection.Problem]

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "nodegroups": self.nodegroups,
            "addons": self.addons,
            "access_entries": self.access_entries,
            "private_route_table_id": self.private_route_table_id,
            "missing": self.missing,
            "blockers": [p.to_json() for p in self.blockers],
            "adoptable": not self.blockers,
        }


def nat_route_table(tables: Sequence[RouteTable | None]) -> RouteTable | None:
    """The first of the cluster subnets' route tables that sends the internet through a NAT
    gateway: where HyperPod's compute subnet is routed."""
    for table in tables:
        if table is not None and table.routes.get(ANYWHERE, "").startswith("nat-"):
            return table
    return None


def assess(
    view: EksView,
    *,
    nodegroups: Sequence[NodegroupView],
    addons: Sequence[AddonView],
    entries: Sequence[str],
    hyperpod_clusters: Sequence[str],
    oidc_registered: bool,
    route_tables: Sequence[RouteTable | None],
    caller: str,
    declared_addons: Sequence[str],
) -> Assessment:
    """Pure: what the reads say about adopting this cluster."""
    blockers: list[inspection.Problem] = []
    if view.status != "ACTIVE":
        blockers.append(
            inspection.Problem(
                "eks_cluster_name",
                "eks_cluster_active",
                f"EKS cluster {view.name} is {view.status}",
                "adopt it once it is ACTIVE (aws eks describe-cluster shows its status)",
            )
        )
    if view.version not in KUBERNETES_VERSIONS:
        blockers.append(
            inspection.Problem(
                "eks_cluster_name",
                "kubernetes_version_supported",
                f"EKS cluster {view.name} runs Kubernetes {view.version}; HyperPod clusters"
                f" are built here for {', '.join(KUBERNETES_VERSIONS)}",
                f"upgrade the cluster to {KUBERNETES_VERSIONS[0]} or later first",
            )
        )
    if hyperpod_clusters:
        blockers.append(
            inspection.Problem(
                "eks_cluster_name",
                "one_hyperpod_cluster_per_eks_cluster",
                f"EKS cluster {view.name} already orchestrates HyperPod cluster"
                f" {', '.join(hyperpod_clusters)}",
                "import it instead (POST /api/v1/clusters/import with hyperpod_cluster_name)",
            )
        )
    table = nat_route_table(route_tables)
    if table is None:
        blockers.append(
            inspection.Problem(
                "eks_cluster_name",
                "private_subnet_with_nat",
                f"none of EKS cluster {view.name}'s subnets routes {ANYWHERE} through a NAT"
                " gateway: HyperPod nodes need outbound access from a private subnet",
                f"add a NAT gateway route ({ANYWHERE} -> nat-...) to the route table of one of"
                f" the cluster's subnets ({', '.join(view.subnet_ids)}), then inspect again",
            )
        )
    missing: list[dict[str, str]] = []
    if view.authentication_mode not in API_MODES:
        missing.append(
            {
                "stage": "authentication_mode",
                "adds": f"authentication mode {view.authentication_mode} -> API_AND_CONFIG_MAP"
                " (one-way in EKS: it stays after the cluster is deleted here)",
            }
        )
    if not oidc_registered:
        missing.append(
            {"stage": "oidc_provider", "adds": f"IAM OIDC provider for {view.oidc_issuer}"}
        )
    if principal_arn(caller) not in entries:
        missing.append(
            {"stage": "access_entries", "adds": f"access entry for {principal_arn(caller)}"}
        )
    missing.append({"stage": "access_entries", "adds": "access entry for the execution role"})
    present = {a.name for a in addons}
    for name in declared_addons:
        if name not in present:
            missing.append({"stage": "dependencies", "adds": f"EKS add-on {name}"})
    missing += [
        {"stage": "execution_role", "adds": "the HyperPod execution role"},
        {"stage": "security_group", "adds": "the EFA security group in the cluster's VPC"},
        {"stage": "compute_subnet", "adds": "a /20 compute subnet per instance-group zone"},
        {"stage": "hyperpod_cluster", "adds": "the HyperPod cluster and its instance groups"},
    ]
    return Assessment(
        cluster={
            "name": view.name,
            "arn": view.arn,
            "status": view.status,
            "version": view.version,
            "vpc_id": view.vpc_id,
            "subnet_ids": list(view.subnet_ids),
            "security_group_ids": list(view.security_group_ids),
            "cluster_security_group_id": view.cluster_security_group_id,
            "authentication_mode": view.authentication_mode,
            "oidc_issuer": view.oidc_issuer,
            "oidc_provider_registered": oidc_registered,
        },
        nodegroups=[asdict(n) for n in nodegroups],
        addons=[asdict(a) for a in addons],
        access_entries=sorted(entries),
        private_route_table_id=table.route_table_id if table else None,
        missing=missing,
        blockers=blockers,
    )


async def read_assessment(
    reads: AdoptionReads, ec2: network.Ec2, name: str, region: str
) -> Assessment | None:
    """Read everything `assess` needs (None when no EKS cluster has this name)."""
    view = await reads.cluster(name)
    if view is None:
        return None
    declared = [c.name for c in dependencies.dependency_set(name, region) if c.kind == "eks-addon"]
    return assess(
        view,
        nodegroups=await reads.nodegroups(name),
        addons=await reads.addons(name),
        entries=await reads.access_entries(name),
        hyperpod_clusters=await reads.hyperpod_clusters_on(view.arn),
        oidc_registered=bool(view.oidc_issuer)
        and await reads.oidc_provider_exists(str(view.oidc_issuer)),
        route_tables=[await ec2.route_table_of_subnet(s) for s in view.subnet_ids],
        caller=await reads.caller_arn(),
        declared_addons=declared,
    )


def not_found(name: str) -> PermanentError:
    return PermanentError(
        "ResourceNotFoundException",
        f"no EKS cluster named {name} in this account and region",
        "list the account's clusters with GET /api/v1/inspect/clusters",
    )


def blocked(assessment: Assessment) -> PermanentError:
    message, hint = inspection.problems_summary(assessment.blockers)
    return PermanentError("NotAdoptable", message, hint)


# ---- the workflow -------------------------------------------------------------------------


@dataclass(frozen=True)
class AdoptionPorts:
    reads: AdoptionReads
    ec2: network.Ec2
    iam: identity.Iam
    eks: EksPort
    buckets: LifecycleBuckets
    sagemaker: hyperpod.SageMakerPort
    kube: KubeFactory
    addons: dependencies.AddonApi
    inspector: inspection.InspectionReads


def adopt_stages(ports: AdoptionPorts) -> list[Stage]:
    """The stages only an adoption has: `preflight`, `eks_cluster` and `network` read what is
    there, `authentication_mode` lets HyperPod add access entries, `access_entries` records
    which entries it made."""

    async def preflight(ctx: StageContext[AdoptCluster]) -> Done:
        cmd = ctx.cmd
        found = await read_assessment(ports.reads, ports.ec2, cmd.spec.name, cmd.region)
        if found is None:
            raise not_found(cmd.spec.name)
        problems = [
            p
            for p in await inspection.check_create(ports.inspector, cmd.spec, cmd.region)
            if p.rule != inspection.RULE_NAME  # the EKS cluster holds the name: it is adopted
        ]
        problems += found.blockers
        if problems:
            message, hint = inspection.problems_summary(problems)
            raise PermanentError("PreflightFailed", message, hint)
        return Done(found.to_json())

    async def eks_cluster(ctx: StageContext[AdoptCluster]) -> Done:
        view = await ports.reads.cluster(ctx.cmd.spec.name)
        if view is None:
            raise not_found(ctx.cmd.spec.name)
        return Done(
            {
                "cluster_arn": view.arn,
                "cluster_name": view.name,
                "endpoint": view.endpoint,
                "ca_data": view.ca_data,
                "oidc_issuer": view.oidc_issuer,
                "version": view.version,
                "created": False,  # adopted: never deleted by Hyperpilot
            },
            noop=True,
        )

    async def existing_network(ctx: StageContext[AdoptCluster]) -> Done:
        table_id = ctx.output("preflight", "private_route_table_id")
        return Done(
            {
                "vpc_id": ctx.outputs["preflight"]["cluster"]["vpc_id"],
                "private_route_table_id": table_id,
                "created": {},  # the VPC and its subnets are the cluster owner's
            },
            noop=True,
        )

    async def authentication_mode(ctx: StageContext[AdoptCluster]) -> Done | Submitted:
        name = ctx.cmd.spec.name
        view = await ports.reads.cluster(name)
        if view is None:
            raise not_found(name)
        if view.authentication_mode in API_MODES:
            return Done({"mode": view.authentication_mode, "changed": False}, noop=True)
        update = await ports.reads.set_authentication_mode(name, "API_AND_CONFIG_MAP")
        return Submitted(
            update,
            {"previous": view.authentication_mode, "mode": "API_AND_CONFIG_MAP", "changed": True},
        )

    async def authentication_mode_poll(ctx: StageContext[AdoptCluster]) -> Done | Pending:
        assert ctx.external_id is not None
        status, errors = await ports.reads.update_status(ctx.cmd.spec.name, ctx.external_id)
        if status in ("Failed", "Cancelled"):
            raise PermanentError(
                "AuthenticationModeUpdateFailed",
                f"EKS update {ctx.external_id} of {ctx.cmd.spec.name} is {status}: {errors}",
                "fix what the update's errors name (aws eks describe-update), then retry",
            )
        if status != "Successful":
            return Pending(f"authentication mode update {status}")
        return Done(dict(ctx.own_outputs))

    async def access_entries(ctx: StageContext[AdoptCluster]) -> Done:
        cluster = ctx.output("eks_cluster", "cluster_name")
        cluster_arn = ctx.output("eks_cluster", "cluster_arn")
        tags = resource_tags(ctx.cmd.spec)
        caller = principal_arn(await ports.eks.caller_arn())
        execution_role = ctx.output("execution_role", "role_arn")
        created: list[str] = []
        changed = False
        for principal, kind in ((caller, "STANDARD"), (execution_role, HYPERPOD_ENTRY_TYPE)):
            entry_tags = await ports.reads.access_entry_tags(cluster, principal)
            if entry_tags is None:
                await ports.eks.create_access_entry(cluster, principal, kind, tags)
                created.append(principal)
                changed = True
            elif is_ours(entry_tags, ctx.cmd.spec.name):
                created.append(principal)  # made by an earlier attempt of this operation
        policy = admin_policy_arn(cluster_arn)
        associated = False
        if policy not in await ports.eks.associated_policies(cluster, caller):
            await ports.eks.associate_cluster_policy(cluster, caller, policy)
            associated = True
        return Done(
            {"principal_arns": [caller, execution_role], "created": sorted(created)},
            noop=not changed and not associated,
        )

    return [
        Stage("preflight", "Inspect the EKS cluster and check the spec", preflight),
        Stage("eks_cluster", "Read the EKS cluster", eks_cluster, needs=("preflight",)),
        Stage("network", "Read the cluster's VPC", existing_network, needs=("preflight",)),
        Stage(
            "authentication_mode",
            "Let HyperPod add access entries (authentication mode)",
            authentication_mode,
            authentication_mode_poll,
            needs=("eks_cluster",),
        ),
        Stage(
            "access_entries",
            "Grant cluster access (access entries)",
            access_entries,
            needs=("eks_cluster", "execution_role", "authentication_mode"),
        ),
    ]


def adopt_workflow(ports: AdoptionPorts) -> Workflow[Any]:
    reused = [
        *[s for s in control_plane_stages(ports.eks, ports.buckets) if s.name == "bucket"],
        *[
            s
            for s in network.create_stages(ports.ec2)
            if s.name in ("security_group", "compute_subnet")
        ],
        *[
            s
            for s in identity.create_stages(ports.iam)
            if s.name in ("execution_role", "oidc_provider")
        ],
        *dependencies.create_stages(ports.kube, ports.addons),
        *hyperpod.create_stages(ports.sagemaker),
    ]
    # Nothing is added before the preflight passes.
    stages = [*adopt_stages(ports), *(_after_preflight(s) for s in reused)]
    return Workflow(
        kind=AdoptCluster.kind(),
        domain=AdoptCluster.domain,
        command=AdoptCluster,
        stages=tuple(stages),
    )


def _after_preflight(stage: Stage) -> Stage:
    return replace(stage, needs=tuple(dict.fromkeys((*stage.needs, "preflight"))))


def delete_access_entries_stage(eks: AdoptionReads) -> Stage:
    """An adopted cluster outlives its delete here: the access entries adoption made are
    removed (a cluster Hyperpilot created takes its entries with it)."""

    async def run(ctx: StageContext[DeleteCluster]) -> Done:
        resources = ctx.cmd.resources
        eks_cluster = resources.get("eks_cluster") or {}
        made = list((resources.get("access_entries") or {}).get("created") or [])
        if eks_cluster.get("created") is not False or not made:
            return Done({"removed": []}, noop=True)
        removed = [
            arn
            for arn in made
            if await eks.delete_access_entry(str(eks_cluster["cluster_name"]), arn)
        ]
        return Done({"removed": removed}, noop=not removed)

    return Stage(
        "delete_access_entries",
        "Remove the access entries adoption added",
        run,
        needs=("delete_hyperpod", "delete_dependencies", "delete_manifests"),
    )


def delete_manifests_stage(kube_factory: KubeFactory) -> Stage:
    """An adopted cluster outlives its delete here: the dependency objects Hyperpilot applied
    (labelled as its own) are removed, last installed first; objects of the same names that
    another tool made are left alone."""

    async def run(ctx: StageContext[DeleteCluster]) -> Done:
        resources = ctx.cmd.resources
        eks_cluster = resources.get("eks_cluster") or {}
        if eks_cluster.get("created") is not False or not eks_cluster.get("endpoint"):
            return Done({"removed": []}, noop=True)
        kube = kube_factory(cluster_access(eks_cluster))
        removed = []
        components = dependencies.dependency_set(str(eks_cluster["cluster_name"]), ctx.cmd.region)
        for component in reversed(components):
            if component.kind == "eks-addon":
                continue  # delete_dependencies removes the add-ons Hyperpilot installed
            for obj in reversed(component.manifests):
                ref = object_ref(obj)
                current = await kube.get(*ref)
                ours = current is not None and is_managed(current, component.name)
                if ours and await kube.delete(*ref):
                    removed.append(f"{ref[1]}/{ref[2]}")
        return Done({"removed": removed}, noop=not removed)

    return Stage(
        "delete_manifests",
        "Remove the dependency objects Hyperpilot applied",
        run,
        needs=("delete_hyperpod", "delete_storage"),
    )
