"""The cluster's network: VPC, gateways, subnets, routes and the EFA security group.

create: network -> (security_group || compute_subnet)
delete: (delete_compute_subnet || delete_security_group) -> delete_network

Every create stage reads actual state first and finds its earlier work by tags
(`hyperpilot:cluster`, `hyperpilot:role`), so a crash between a cloud call and the persist never
repeats a mutation. A resource found by those tags was made by Hyperpilot for this cluster and is
recorded under `created`; a VPC, gateway or subnet the user brought is not, and delete leaves it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cluster_svc.domain.control_plane import recorded
from cluster_svc.domain.subnets import (
    CLUSTER_TAG,
    COMPUTE_TAG,
    COMPUTE_TAG_VALUE,
    CreateSubnet,
    Subnet,
    Zone,
    control_plane_zones,
    plan_compute_subnet,
    plan_support_subnets,
)
from shared.contracts.cluster import ClusterSpec
from shared.contracts.commands import CreateCluster
from shared.errors import PermanentError
from shared.stages import Done, Pending, Stage, StageContext, Submitted

MANAGED_BY = {"managed-by": "hyperpilot"}
ROLE_TAG = "hyperpilot:role"
ANYWHERE = "0.0.0.0/0"
ALL_TRAFFIC = "-1"
# ENIs of a deleted EKS or HyperPod cluster can hold a subnet or group for many minutes.
RELEASE_DEADLINE_SECONDS = 45 * 60


@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    cidrs: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RouteTable:
    route_table_id: str
    vpc_id: str
    routes: Mapping[str, str]  # destination CIDR -> target id (igw-, nat-, local)
    associations: Mapping[str, str]  # association id -> subnet id (explicit ones only)
    main: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NatGateway:
    nat_gateway_id: str
    state: str  # pending | available | deleting | deleted | failed
    subnet_id: str
    failure: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    """One all-traffic permission: to/from a security group or a CIDR."""

    protocol: str = ALL_TRAFFIC
    group_id: str | None = None
    cidr: str | None = None


@dataclass(frozen=True)
class SecurityGroup:
    group_id: str
    vpc_id: str
    name: str
    ingress: frozenset[Rule]
    egress: frozenset[Rule]
    tags: Mapping[str, str] = field(default_factory=dict)


class Ec2(Protocol):
    """What the network stages need from EC2. Deletes of missing things return False; a resource
    still in use raises PermanentError with code `DependencyViolation`."""

    async def zones(self) -> list[Zone]: ...
    async def vpc(self, vpc_id: str) -> Vpc | None: ...
    async def find_vpc(self, tags: Mapping[str, str]) -> Vpc | None: ...
    async def create_vpc(self, cidr: str, tags: Mapping[str, str]) -> Vpc: ...
    async def enable_dns(self, vpc_id: str) -> bool: ...
    async def delete_vpc(self, vpc_id: str) -> bool: ...
    async def subnets(self, vpc_id: str) -> list[Subnet]: ...
    async def subnet(self, subnet_id: str) -> Subnet | None: ...
    async def create_subnet(
        self, vpc_id: str, cidr: str, zone_id: str, tags: Mapping[str, str]
    ) -> Subnet: ...
    async def delete_subnet(self, subnet_id: str) -> bool: ...
    async def attached_internet_gateway(self, vpc_id: str) -> str | None: ...
    async def find_internet_gateway(self, tags: Mapping[str, str]) -> str | None: ...
    async def create_internet_gateway(self, tags: Mapping[str, str]) -> str: ...
    async def attach_internet_gateway(self, gateway_id: str, vpc_id: str) -> None: ...
    async def delete_internet_gateway(self, gateway_id: str) -> bool: ...  # detaches it first
    async def find_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable | None: ...
    async def route_table(self, route_table_id: str) -> RouteTable | None: ...
    async def route_table_of_subnet(self, subnet_id: str) -> RouteTable | None: ...
    async def create_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable: ...
    async def create_route(self, route_table_id: str, destination: str, target_id: str) -> None: ...
    async def associate(self, route_table_id: str, subnet_id: str) -> str: ...
    async def disassociate(self, association_id: str) -> bool: ...
    async def delete_route_table(self, route_table_id: str) -> bool: ...
    async def find_address(self, tags: Mapping[str, str]) -> str | None: ...
    async def allocate_address(self, tags: Mapping[str, str]) -> str: ...
    async def release_address(self, allocation_id: str) -> bool: ...
    async def find_nat_gateway(self, vpc_id: str, tags: Mapping[str, str]) -> NatGateway | None: ...
    async def nat_gateway(self, nat_gateway_id: str) -> NatGateway | None: ...
    async def create_nat_gateway(
        self, subnet_id: str, allocation_id: str, tags: Mapping[str, str]
    ) -> NatGateway: ...
    async def delete_nat_gateway(self, nat_gateway_id: str) -> bool: ...
    async def find_security_group(self, vpc_id: str, name: str) -> SecurityGroup | None: ...
    async def security_group(self, group_id: str) -> SecurityGroup | None: ...
    async def create_security_group(
        self, vpc_id: str, name: str, description: str, tags: Mapping[str, str]
    ) -> SecurityGroup: ...
    async def authorize(self, group_id: str, direction: str, rule: Rule) -> None: ...
    async def delete_security_group(self, group_id: str) -> bool: ...


# ---- tags -------------------------------------------------------------------------------------


def cluster_tags(spec: ClusterSpec | str, role: str | None = None, **extra: str) -> dict[str, str]:
    """The tags of everything made for a cluster (the user's tags first, ours win)."""
    name = spec if isinstance(spec, str) else spec.name
    user = {} if isinstance(spec, str) else dict(spec.tags)
    tags = {**user, **MANAGED_BY, CLUSTER_TAG: name}
    if role is not None:
        tags[ROLE_TAG] = role
    tags.update(extra)
    return tags


def _ours(tags: Mapping[str, str], cluster: str, role: str | None = None) -> bool:
    return tags.get(CLUSTER_TAG) == cluster and (role is None or tags.get(ROLE_TAG) == role)


# ---- the compute-subnet function -------------------------------------------------------------


async def ensure_compute_subnet(
    ec2: Ec2,
    vpc_id: str,
    zone_id: str,
    requested_subnet_id: str | None = None,
    *,
    cluster: str,
) -> tuple[str, str, bool]:
    """The one way every capacity path gets a zone's /20 compute subnet (see
    `subnets.plan_compute_subnet`); returns (subnet id, CIDR, made by Hyperpilot for `cluster`)."""
    vpc = await ec2.vpc(vpc_id)
    if vpc is None:
        raise PermanentError(
            "InvalidVpcID.NotFound",
            f"VPC {vpc_id} does not exist",
            "check the cluster's network (the VPC may have been deleted outside Hyperpilot)",
        )
    for attempt in range(3):
        subnets = await ec2.subnets(vpc_id)
        if requested_subnet_id and all(s.subnet_id != requested_subnet_id for s in subnets):
            named = await ec2.subnet(requested_subnet_id)
            subnets = [*subnets, named] if named else subnets
        decision = plan_compute_subnet(
            vpc_id, vpc.cidrs, subnets, zone_id, requested_subnet_id, cluster
        )
        if not isinstance(decision, CreateSubnet):
            made = requested_subnet_id is None and _ours(decision.subnet.tags, cluster)
            return decision.subnet.subnet_id, decision.subnet.cidr, made
        tags = cluster_tags(
            cluster,
            **{COMPUTE_TAG: COMPUTE_TAG_VALUE, "Name": f"hyperpilot-{cluster}-compute-{zone_id}"},
        )
        try:
            subnet = await ec2.create_subnet(vpc_id, decision.cidr, zone_id, tags)
        except PermanentError as exc:
            # Another capacity path took the block between our read and our create: plan again.
            if exc.code == "InvalidSubnet.Conflict" and attempt < 2:
                continue
            raise
        return subnet.subnet_id, subnet.cidr, True
    raise AssertionError("unreachable")


# ---- create -----------------------------------------------------------------------------------


def create_stages(ec2: Ec2) -> list[Stage]:
    """`network`, `security_group` and `compute_subnet` (docs/cluster-lifecycle.md)."""

    async def network(ctx: StageContext[CreateCluster]) -> Done | Submitted:
        spec = ctx.cmd.spec
        outputs = await _network_up_to_nat(ec2, spec)
        nat = await ec2.nat_gateway(outputs["nat_gateway_id"])
        if nat is not None and nat.state == "available":
            return Done(await _default_route(ec2, outputs))
        return Submitted(outputs["nat_gateway_id"], outputs)

    async def network_poll(ctx: StageContext[Any]) -> Done | Pending:
        assert ctx.external_id is not None
        nat = await ec2.nat_gateway(ctx.external_id)
        if nat is None or nat.state in ("deleting", "deleted"):
            raise PermanentError(
                "NatGatewayGone",
                f"NAT gateway {ctx.external_id} was deleted while it was being created",
                "retry the operation: a new NAT gateway will be made",
            )
        if nat.state == "failed":
            raise PermanentError(
                "NatGatewayFailed",
                f"NAT gateway {nat.nat_gateway_id} failed: {nat.failure or 'no reason given'}",
                "check the Elastic IP quota (aws service-quotas get-service-quota --service-code "
                "ec2 --quota-code L-0263D0A3), then retry the operation",
            )
        if nat.state != "available":
            return Pending(f"NAT gateway {nat.nat_gateway_id} is {nat.state}")
        return Done(await _default_route(ec2, dict(ctx.own_outputs)))

    async def security_group(ctx: StageContext[CreateCluster]) -> Done:
        spec = ctx.cmd.spec
        return await _security_group(ec2, spec, ctx.output("network", "vpc_id"))

    async def compute_subnet(ctx: StageContext[CreateCluster]) -> Done:
        spec = ctx.cmd.spec
        return await _compute_subnets(
            ec2,
            spec,
            ctx.output("network", "vpc_id"),
            ctx.output("network", "private_route_table_id"),
        )

    return [
        Stage("network", "Create the VPC, subnets and gateways", network, poll=network_poll),
        Stage(
            "security_group",
            "Create the EFA security group",
            security_group,
            needs=("network",),
        ),
        Stage(
            "compute_subnet",
            "Prepare the /20 compute subnets",
            compute_subnet,
            needs=("network",),
        ),
    ]


async def _network_up_to_nat(ec2: Ec2, spec: ClusterSpec) -> dict[str, Any]:
    """VPC, internet gateway, subnets, public routes, Elastic IP and NAT gateway (maybe pending),
    and the private route table; returns the stage's outputs so far."""
    created: dict[str, list[str]] = {
        "vpc": [],
        "internet_gateways": [],
        "subnets": [],
        "route_tables": [],
        "elastic_ips": [],
        "nat_gateways": [],
    }
    vpc = await _vpc(ec2, spec, created)
    await ec2.enable_dns(vpc.vpc_id)
    zone_ids = control_plane_zones(await ec2.zones(), spec.availability_zone_id)
    gateway_id = await _internet_gateway(ec2, spec, vpc.vpc_id, created)
    public, private = await _support_subnets(ec2, spec, vpc, zone_ids, created)

    public_table = await _route_table(ec2, spec, vpc.vpc_id, "public", created)
    await _route(ec2, public_table, ANYWHERE, gateway_id)
    await _associate(ec2, public_table, public)
    private_table = await _route_table(ec2, spec, vpc.vpc_id, "private", created)
    await _associate(ec2, private_table, private)

    nat = await _nat_gateway(ec2, spec, vpc.vpc_id, public[0], created)
    return {
        "vpc_id": vpc.vpc_id,
        "vpc_cidr": vpc.cidrs[0],
        "created_vpc": bool(created["vpc"]),
        "zone_ids": zone_ids,
        "public_subnet_ids": public,
        "private_subnet_ids": private,
        "public_route_table_id": public_table.route_table_id,
        "private_route_table_id": private_table.route_table_id,
        "internet_gateway_id": gateway_id,
        "nat_gateway_id": nat.nat_gateway_id,
        "created": created,
    }


async def _vpc(ec2: Ec2, spec: ClusterSpec, created: dict[str, list[str]]) -> Vpc:
    if spec.network.vpc_id is not None:
        vpc = await ec2.vpc(spec.network.vpc_id)
        if vpc is None:
            raise PermanentError(
                "InvalidVpcID.NotFound",
                f"VPC {spec.network.vpc_id} does not exist in this region",
                "check network.vpc_id and the region, or omit vpc_id to have a VPC made",
            )
        return vpc
    tags = cluster_tags(spec, "vpc", Name=f"hyperpilot-{spec.name}")
    vpc = await ec2.find_vpc(cluster_tags(spec.name, "vpc"))
    if vpc is None:
        vpc = await ec2.create_vpc(spec.network.vpc_cidr, tags)
    created["vpc"].append(vpc.vpc_id)
    return vpc


async def _internet_gateway(
    ec2: Ec2, spec: ClusterSpec, vpc_id: str, created: dict[str, list[str]]
) -> str:
    """The VPC's attached gateway (a user's VPC usually has one), else ours, made if missing."""
    attached = await ec2.attached_internet_gateway(vpc_id)
    mine = await ec2.find_internet_gateway(cluster_tags(spec.name, "internet-gateway"))
    if attached is not None and attached != mine:
        return attached
    if mine is None:
        mine = await ec2.create_internet_gateway(
            cluster_tags(spec, "internet-gateway", Name=f"hyperpilot-{spec.name}")
        )
    if attached is None:
        await ec2.attach_internet_gateway(mine, vpc_id)
    created["internet_gateways"].append(mine)
    return mine


async def _support_subnets(
    ec2: Ec2,
    spec: ClusterSpec,
    vpc: Vpc,
    zone_ids: list[str],
    created: dict[str, list[str]],
) -> tuple[list[str], list[str]]:
    """A public and a private /24 per zone, found by tags or made from the end of the VPC."""
    existing = await ec2.subnets(vpc.vpc_id)
    found: dict[tuple[str, str], Subnet] = {}
    for subnet in existing:
        role = subnet.tags.get(ROLE_TAG, "")
        if _ours(subnet.tags, spec.name) and role in ("public", "private"):
            found.setdefault((role, subnet.zone_id), subnet)
    wanted = [(role, zone) for zone in zone_ids for role in ("public", "private")]
    missing = [key for key in wanted if key not in found]
    cidrs = plan_support_subnets(vpc.cidrs, (s.cidr for s in existing), len(missing))
    for (role, zone), cidr in zip(missing, cidrs, strict=True):
        elb = "kubernetes.io/role/elb" if role == "public" else "kubernetes.io/role/internal-elb"
        tags = cluster_tags(
            spec, role, **{elb: "1", "Name": f"hyperpilot-{spec.name}-{role}-{zone}"}
        )
        found[(role, zone)] = await ec2.create_subnet(vpc.vpc_id, cidr, zone, tags)
    for key in wanted:
        created["subnets"].append(found[key].subnet_id)
    public = [found[("public", zone)].subnet_id for zone in zone_ids]
    private = [found[("private", zone)].subnet_id for zone in zone_ids]
    return public, private


async def _route_table(
    ec2: Ec2, spec: ClusterSpec, vpc_id: str, role: str, created: dict[str, list[str]]
) -> RouteTable:
    table = await ec2.find_route_table(vpc_id, cluster_tags(spec.name, role))
    if table is None:
        table = await ec2.create_route_table(
            vpc_id, cluster_tags(spec, role, Name=f"hyperpilot-{spec.name}-{role}")
        )
    created["route_tables"].append(table.route_table_id)
    return table


async def _route(ec2: Ec2, table: RouteTable, destination: str, target_id: str) -> None:
    current = table.routes.get(destination)
    if current == target_id:
        return
    if current is not None:
        raise PermanentError(
            "RouteConflict",
            f"route table {table.route_table_id} sends {destination} to {current}, not {target_id}",
            f"remove that route (aws ec2 delete-route --route-table-id {table.route_table_id} "
            f"--destination-cidr-block {destination}) and retry",
        )
    await ec2.create_route(table.route_table_id, destination, target_id)


async def _associate(ec2: Ec2, table: RouteTable, subnet_ids: list[str]) -> None:
    for subnet_id in subnet_ids:
        if subnet_id not in table.associations.values():
            await ec2.associate(table.route_table_id, subnet_id)


async def _nat_gateway(
    ec2: Ec2, spec: ClusterSpec, vpc_id: str, public_subnet: str, created: dict[str, list[str]]
) -> NatGateway:
    allocation = await ec2.find_address(cluster_tags(spec.name, "nat"))
    if allocation is None:
        allocation = await ec2.allocate_address(
            cluster_tags(spec, "nat", Name=f"hyperpilot-{spec.name}-nat")
        )
    created["elastic_ips"].append(allocation)
    nat = await ec2.find_nat_gateway(vpc_id, cluster_tags(spec.name, "nat"))
    if nat is None:
        nat = await ec2.create_nat_gateway(
            public_subnet, allocation, cluster_tags(spec, "nat", Name=f"hyperpilot-{spec.name}")
        )
    created["nat_gateways"].append(nat.nat_gateway_id)
    return nat


async def _default_route(ec2: Ec2, outputs: dict[str, Any]) -> dict[str, Any]:
    """Once the NAT gateway is available: the private subnets' default route through it."""
    table_id = outputs["private_route_table_id"]
    table = await ec2.route_table(table_id)
    if table is None:
        raise PermanentError(
            "InvalidRouteTableID.NotFound",
            f"route table {table_id} disappeared while the network was being made",
            "retry the operation: missing parts of the network are made again",
        )
    await _route(ec2, table, ANYWHERE, outputs["nat_gateway_id"])
    return outputs


def _group_name(cluster: str) -> str:
    return f"hyperpilot-{cluster}"


def wanted_rules(group_id: str) -> tuple[list[Rule], list[Rule]]:
    """EFA needs all traffic to and from the group itself; nodes also reach out anywhere."""
    own = Rule(ALL_TRAFFIC, group_id=group_id)
    return [own], [own, Rule(ALL_TRAFFIC, cidr=ANYWHERE)]


async def _security_group(ec2: Ec2, spec: ClusterSpec, vpc_id: str) -> Done:
    name = _group_name(spec.name)
    group = await ec2.find_security_group(vpc_id, name)
    if group is not None and not _ours(group.tags, spec.name):
        raise PermanentError(
            "SecurityGroupNameTaken",
            f"VPC {vpc_id} already has a security group {name} ({group.group_id}) that "
            "Hyperpilot did not make",
            "rename or delete that group, or create the cluster under another name",
        )
    changed = False
    if group is None:
        group = await ec2.create_security_group(
            vpc_id,
            name,
            f"Hyperpilot cluster {spec.name}: EFA traffic between nodes",
            cluster_tags(spec, "security-group", Name=name),
        )
        changed = True
    ingress, egress = wanted_rules(group.group_id)
    for direction, rules, current in (
        ("ingress", ingress, group.ingress),
        ("egress", egress, group.egress),
    ):
        for rule in rules:
            if rule not in current:
                await ec2.authorize(group.group_id, direction, rule)
                changed = True
    return Done({"security_group_id": group.group_id, "created": True}, noop=not changed)


def group_zones(spec: ClusterSpec) -> list[str]:
    """Distinct zones of the instance groups, the cluster's compute zone first."""
    zones = [spec.availability_zone_id]
    for group in spec.instance_groups:
        zone = group.availability_zone_id or spec.availability_zone_id
        if zone not in zones:
            zones.append(zone)
    return zones


async def _compute_subnets(
    ec2: Ec2, spec: ClusterSpec, vpc_id: str, private_route_table_id: str
) -> Done:
    subnets: dict[str, dict[str, Any]] = {}
    created: list[str] = []
    for zone in group_zones(spec):
        subnet_id, cidr, made = await ensure_compute_subnet(ec2, vpc_id, zone, cluster=spec.name)
        await _route_through_nat(ec2, subnet_id, private_route_table_id)
        subnets[zone] = {"subnet_id": subnet_id, "cidr": cidr, "created": made}
        if made:
            created.append(subnet_id)
    home = subnets[spec.availability_zone_id]
    return Done(
        {
            "subnets": subnets,
            "subnet_id": home["subnet_id"],
            "cidr": home["cidr"],
            "availability_zone_id": spec.availability_zone_id,
            "created": created,
        }
    )


async def _route_through_nat(ec2: Ec2, subnet_id: str, private_route_table_id: str) -> None:
    """A subnet on the VPC's main table is routed through the NAT; one the user (or another
    cluster) routes explicitly keeps its routing."""
    if await ec2.route_table_of_subnet(subnet_id) is None:
        await ec2.associate(private_route_table_id, subnet_id)


# ---- delete -----------------------------------------------------------------------------------


Step = Callable[[StageContext[Any]], Awaitable[Done | Pending]]


def _waiting_stage(name: str, title: str, step: Step, needs: tuple[str, ...] = ()) -> Stage:
    """A delete stage that does what it can now and is polled while AWS still holds something
    (a NAT gateway deleting, network interfaces of a deleted cluster not yet released)."""

    async def run(ctx: StageContext[Any]) -> Done | Submitted:
        result = await step(ctx)
        if isinstance(result, Done):
            return result
        return Submitted(name, {"waiting_since": time.time(), "waiting_for": result.progress})

    async def poll(ctx: StageContext[Any]) -> Done | Pending:
        result = await step(ctx)
        if isinstance(result, Done):
            return result
        since = float(ctx.own_outputs.get("waiting_since", time.time()))
        if time.time() - since > RELEASE_DEADLINE_SECONDS:
            raise PermanentError(
                "DependencyViolation",
                f"still waiting after {RELEASE_DEADLINE_SECONDS // 60} minutes: {result.progress}",
                "find what still uses it (aws ec2 describe-network-interfaces --filters "
                "Name=vpc-id,Values=<vpc>), delete that, then retry the operation",
            )
        return result

    return Stage(name, title, run, poll=poll, needs=needs)


def _in_use(exc: PermanentError) -> bool:
    return exc.code in ("DependencyViolation", "InvalidIPAddress.InUse")


def delete_stage_names() -> list[str]:
    """Names of the delete stages, for composing cross-area needs: `delete_compute_subnet` and
    `delete_security_group` must wait for the EKS and HyperPod clusters to be gone."""
    return ["delete_compute_subnet", "delete_security_group", "delete_network"]


def delete_stages(ec2: Ec2) -> list[Stage]:
    """Delete exactly what the create operation recorded under `created`, in reverse order.
    Needs on other areas' stages are added by whoever composes the workflow."""

    async def compute_subnets(ctx: StageContext[Any]) -> Done | Pending:
        ids = list(recorded(ctx, "compute_subnet").get("created") or [])
        deleted = []
        for subnet_id in ids:
            table = await ec2.route_table_of_subnet(subnet_id)
            if table is not None:
                for association, subnet in table.associations.items():
                    if subnet == subnet_id:
                        await ec2.disassociate(association)
            try:
                if await ec2.delete_subnet(subnet_id):
                    deleted.append(subnet_id)
            except PermanentError as exc:
                if _in_use(exc):
                    return Pending(f"subnet {subnet_id} is still in use: {exc.message}")
                raise
        return Done({"deleted": ids}, noop=not deleted)

    async def security_group(ctx: StageContext[Any]) -> Done | Pending:
        outputs = recorded(ctx, "security_group")
        group_id = outputs.get("security_group_id")
        if not outputs.get("created") or not group_id:
            return Done(noop=True)
        try:
            gone = not await ec2.delete_security_group(group_id)
        except PermanentError as exc:
            if _in_use(exc):
                return Pending(f"security group {group_id} is still in use: {exc.message}")
            raise
        return Done({"deleted": [group_id]}, noop=gone)

    async def network(ctx: StageContext[Any]) -> Done | Pending:
        created: dict[str, list[str]] = recorded(ctx, "network").get("created") or {}
        try:
            return await _delete_network(ec2, created)
        except PermanentError as exc:
            if _in_use(exc):
                return Pending(f"still in use: {exc.message}")
            raise

    return [
        _waiting_stage("delete_compute_subnet", "Delete the compute subnets", compute_subnets),
        _waiting_stage("delete_security_group", "Delete the security group", security_group),
        _waiting_stage(
            "delete_network",
            "Delete the NAT gateway, subnets, gateways and VPC",
            network,
            needs=("delete_compute_subnet", "delete_security_group"),
        ),
    ]


async def _delete_network(ec2: Ec2, created: Mapping[str, list[str]]) -> Done | Pending:
    changed = False
    for nat_id in created.get("nat_gateways", []):
        nat = await ec2.nat_gateway(nat_id)
        if nat is None or nat.state in ("deleted", "failed"):
            continue
        if nat.state in ("pending", "available"):
            await ec2.delete_nat_gateway(nat_id)
            changed = True
        return Pending(f"NAT gateway {nat_id} is deleting")
    for allocation in created.get("elastic_ips", []):
        changed |= await ec2.release_address(allocation)
    for table_id in created.get("route_tables", []):
        table = await ec2.route_table(table_id)
        if table is None:
            continue
        for association in table.associations:
            await ec2.disassociate(association)
        changed |= await ec2.delete_route_table(table_id)
    for subnet_id in created.get("subnets", []):
        changed |= await ec2.delete_subnet(subnet_id)
    for gateway_id in created.get("internet_gateways", []):
        changed |= await ec2.delete_internet_gateway(gateway_id)
    for vpc_id in created.get("vpc", []):
        changed |= await ec2.delete_vpc(vpc_id)
    return Done({"deleted": {k: list(v) for k, v in created.items() if v}}, noop=not changed)
