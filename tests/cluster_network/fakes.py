"""In-memory fakes of the network and identity ports, counting every mutation."""

from __future__ import annotations

import ipaddress
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cluster_svc.domain.identity import OidcProvider, Role
from cluster_svc.domain.network import NatGateway, RouteTable, Rule, SecurityGroup, Vpc
from cluster_svc.domain.subnets import Subnet, Zone
from shared.errors import PermanentError

ZONES = [
    Zone("use1-az1", "us-east-1b"),
    Zone("use1-az2", "us-east-1c"),
    Zone("use1-az3", "us-east-1e"),
    Zone("use1-az4", "us-east-1d"),
    Zone("use1-az6", "us-east-1a"),
]


def _matches(tags: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(tags.get(k) == v for k, v in wanted.items())


class FakeEc2:
    def __init__(self, zones: list[Zone] | None = None) -> None:
        self._ids = itertools.count(1)
        self.calls: Counter[str] = Counter()
        self.zone_list = zones or list(ZONES)
        self.vpcs: dict[str, Vpc] = {}
        self.dns: set[str] = set()
        self.subnet_map: dict[str, Subnet] = {}
        self.gateways: dict[str, tuple[dict[str, str], str | None]] = {}  # id -> (tags, vpc)
        self.tables: dict[str, RouteTable] = {}
        self.addresses: dict[str, dict[str, str]] = {}
        self.nats: dict[str, NatGateway] = {}
        self.groups: dict[str, SecurityGroup] = {}
        self.in_use: set[str] = set()  # ids whose delete answers DependencyViolation
        self.nat_starts = "pending"
        self.hold_deleting = False

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):08x}"

    def _count(self, name: str) -> None:
        self.calls[name] += 1

    def _check_in_use(self, resource_id: str) -> None:
        if resource_id in self.in_use:
            raise PermanentError("DependencyViolation", f"resource {resource_id} has a dependent")

    # zones and VPCs
    async def zones(self) -> list[Zone]:
        return list(self.zone_list)

    async def vpc(self, vpc_id: str) -> Vpc | None:
        return self.vpcs.get(vpc_id)

    async def find_vpc(self, tags: Mapping[str, str]) -> Vpc | None:
        return next((v for v in self.vpcs.values() if _matches(v.tags, tags)), None)

    async def create_vpc(self, cidr: str, tags: Mapping[str, str]) -> Vpc:
        self._count("create_vpc")
        vpc = Vpc(self._id("vpc"), (cidr,), dict(tags))
        self.vpcs[vpc.vpc_id] = vpc
        main = RouteTable(self._id("rtb"), vpc.vpc_id, {cidr: "local"}, {}, main=True)
        self.tables[main.route_table_id] = main
        return vpc

    async def enable_dns(self, vpc_id: str) -> bool:
        if vpc_id in self.dns:
            return False
        self._count("enable_dns")
        self.dns.add(vpc_id)
        return True

    async def delete_vpc(self, vpc_id: str) -> bool:
        if vpc_id not in self.vpcs:
            return False
        self._check_in_use(vpc_id)
        if any(s.vpc_id == vpc_id for s in self.subnet_map.values()):
            raise PermanentError("DependencyViolation", f"VPC {vpc_id} has subnets")
        self._count("delete_vpc")
        del self.vpcs[vpc_id]
        for table_id in [t for t, v in self.tables.items() if v.vpc_id == vpc_id and v.main]:
            del self.tables[table_id]
        return True

    # subnets
    async def subnets(self, vpc_id: str) -> list[Subnet]:
        return [s for s in self.subnet_map.values() if s.vpc_id == vpc_id]

    async def subnet(self, subnet_id: str) -> Subnet | None:
        return self.subnet_map.get(subnet_id)

    def add_subnet(self, vpc_id: str, cidr: str, zone_id: str, tags: Mapping[str, str]) -> Subnet:
        new = ipaddress.IPv4Network(cidr)
        for other in self.subnet_map.values():
            if other.vpc_id == vpc_id and ipaddress.IPv4Network(other.cidr).overlaps(new):
                raise PermanentError("InvalidSubnet.Conflict", f"{cidr} conflicts")
        subnet = Subnet(self._id("subnet"), vpc_id, cidr, zone_id, dict(tags))
        self.subnet_map[subnet.subnet_id] = subnet
        return subnet

    async def create_subnet(
        self, vpc_id: str, cidr: str, zone_id: str, tags: Mapping[str, str]
    ) -> Subnet:
        self._count("create_subnet")
        return self.add_subnet(vpc_id, cidr, zone_id, tags)

    async def delete_subnet(self, subnet_id: str) -> bool:
        if subnet_id not in self.subnet_map:
            return False
        self._check_in_use(subnet_id)
        self._count("delete_subnet")
        del self.subnet_map[subnet_id]
        for table in list(self.tables.values()):
            kept = {a: s for a, s in table.associations.items() if s != subnet_id}
            self.tables[table.route_table_id] = replace(table, associations=kept)
        return True

    # internet gateways
    async def attached_internet_gateway(self, vpc_id: str) -> str | None:
        return next((g for g, (_, v) in self.gateways.items() if v == vpc_id), None)

    async def find_internet_gateway(self, tags: Mapping[str, str]) -> str | None:
        return next((g for g, (t, _) in self.gateways.items() if _matches(t, tags)), None)

    async def create_internet_gateway(self, tags: Mapping[str, str]) -> str:
        self._count("create_internet_gateway")
        gateway_id = self._id("igw")
        self.gateways[gateway_id] = (dict(tags), None)
        return gateway_id

    async def attach_internet_gateway(self, gateway_id: str, vpc_id: str) -> None:
        self._count("attach_internet_gateway")
        self.gateways[gateway_id] = (self.gateways[gateway_id][0], vpc_id)

    async def delete_internet_gateway(self, gateway_id: str) -> bool:
        if gateway_id not in self.gateways:
            return False
        self._count("delete_internet_gateway")
        del self.gateways[gateway_id]
        return True

    # route tables
    async def find_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable | None:
        return next(
            (t for t in self.tables.values() if t.vpc_id == vpc_id and _matches(t.tags, tags)),
            None,
        )

    async def route_table(self, route_table_id: str) -> RouteTable | None:
        return self.tables.get(route_table_id)

    async def route_table_of_subnet(self, subnet_id: str) -> RouteTable | None:
        return next((t for t in self.tables.values() if subnet_id in t.associations.values()), None)

    async def create_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable:
        self._count("create_route_table")
        vpc = self.vpcs[vpc_id]
        table = RouteTable(self._id("rtb"), vpc_id, {vpc.cidrs[0]: "local"}, {}, tags=dict(tags))
        self.tables[table.route_table_id] = table
        return table

    async def create_route(self, route_table_id: str, destination: str, target_id: str) -> None:
        self._count("create_route")
        table = self.tables[route_table_id]
        if destination in table.routes:
            raise PermanentError("RouteAlreadyExists", f"route {destination} exists")
        routes = {**table.routes, destination: target_id}
        self.tables[route_table_id] = replace(table, routes=routes)

    async def associate(self, route_table_id: str, subnet_id: str) -> str:
        self._count("associate")
        if await self.route_table_of_subnet(subnet_id) is not None:
            raise PermanentError("Resource.AlreadyAssociated", f"{subnet_id} is associated")
        table = self.tables[route_table_id]
        association = self._id("rtbassoc")
        associations = {**table.associations, association: subnet_id}
        self.tables[route_table_id] = replace(table, associations=associations)
        return association

    async def disassociate(self, association_id: str) -> bool:
        for table in list(self.tables.values()):
            if association_id in table.associations:
                self._count("disassociate")
                kept = {a: s for a, s in table.associations.items() if a != association_id}
                self.tables[table.route_table_id] = replace(table, associations=kept)
                return True
        return False

    async def delete_route_table(self, route_table_id: str) -> bool:
        table = self.tables.get(route_table_id)
        if table is None:
            return False
        if table.associations:
            raise PermanentError("DependencyViolation", f"{route_table_id} has associations")
        self._count("delete_route_table")
        del self.tables[route_table_id]
        return True

    # addresses and NAT gateways
    async def find_address(self, tags: Mapping[str, str]) -> str | None:
        return next((a for a, t in self.addresses.items() if _matches(t, tags)), None)

    async def allocate_address(self, tags: Mapping[str, str]) -> str:
        self._count("allocate_address")
        allocation = self._id("eipalloc")
        self.addresses[allocation] = dict(tags)
        return allocation

    async def release_address(self, allocation_id: str) -> bool:
        if allocation_id not in self.addresses:
            return False
        if any(n.state in ("pending", "available", "deleting") for n in self.nats.values()):
            raise PermanentError("InvalidIPAddress.InUse", f"{allocation_id} is in use")
        self._count("release_address")
        del self.addresses[allocation_id]
        return True

    async def find_nat_gateway(self, vpc_id: str, tags: Mapping[str, str]) -> NatGateway | None:
        return next(
            (
                n
                for n in self.nats.values()
                if n.state in ("pending", "available") and _matches(n.tags, tags)
            ),
            None,
        )

    async def nat_gateway(self, nat_gateway_id: str) -> NatGateway | None:
        """A deleting gateway reads `deleting` once, then `deleted` (unless held)."""
        nat = self.nats.get(nat_gateway_id)
        if nat is not None and nat.state == "deleting" and not self.hold_deleting:
            self.set_nat_state(nat_gateway_id, "deleted")
        return nat

    async def create_nat_gateway(
        self, subnet_id: str, allocation_id: str, tags: Mapping[str, str]
    ) -> NatGateway:
        self._count("create_nat_gateway")
        nat = NatGateway(self._id("nat"), self.nat_starts, subnet_id, None, dict(tags))
        self.nats[nat.nat_gateway_id] = nat
        return nat

    def set_nat_state(self, nat_gateway_id: str, state: str, failure: str | None = None) -> None:
        self.nats[nat_gateway_id] = replace(self.nats[nat_gateway_id], state=state, failure=failure)

    async def delete_nat_gateway(self, nat_gateway_id: str) -> bool:
        if nat_gateway_id not in self.nats:
            return False
        self._count("delete_nat_gateway")
        self.set_nat_state(nat_gateway_id, "deleting")
        return True

    # security groups
    async def find_security_group(self, vpc_id: str, name: str) -> SecurityGroup | None:
        return next(
            (g for g in self.groups.values() if g.vpc_id == vpc_id and g.name == name), None
        )

    async def security_group(self, group_id: str) -> SecurityGroup | None:
        return self.groups.get(group_id)

    async def create_security_group(
        self, vpc_id: str, name: str, description: str, tags: Mapping[str, str]
    ) -> SecurityGroup:
        self._count("create_security_group")
        group = SecurityGroup(
            self._id("sg"),
            vpc_id,
            name,
            frozenset(),
            frozenset({Rule("-1", cidr="0.0.0.0/0")}),
            dict(tags),
        )
        self.groups[group.group_id] = group
        return group

    async def authorize(self, group_id: str, direction: str, rule: Rule) -> None:
        self._count(f"authorize_{direction}")
        group = self.groups[group_id]
        if direction == "ingress":
            self.groups[group_id] = replace(group, ingress=group.ingress | {rule})
        else:
            self.groups[group_id] = replace(group, egress=group.egress | {rule})

    async def delete_security_group(self, group_id: str) -> bool:
        if group_id not in self.groups:
            return False
        self._check_in_use(group_id)
        self._count("delete_security_group")
        del self.groups[group_id]
        return True

    def mutations(self) -> int:
        return sum(self.calls.values())


class FakeIam:
    def __init__(self, account: str = "123456789012", thumbprint: str | None = None) -> None:
        self.account = account
        self.thumbprint = thumbprint
        self.calls: Counter[str] = Counter()
        self.roles: dict[str, Role] = {}
        self.policies: dict[str, dict[str, dict[str, Any]]] = {}
        self.attached: dict[str, list[str]] = {}
        self.providers: dict[str, OidcProvider] = {}

    async def role(self, name: str) -> Role | None:
        return self.roles.get(name)

    async def create_role(
        self, name: str, trust: Mapping[str, Any], description: str, tags: Mapping[str, str]
    ) -> Role:
        self.calls["create_role"] += 1
        role = Role(name, f"arn:aws:iam::{self.account}:role/{name}", dict(trust), dict(tags))
        self.roles[name] = role
        self.policies[name] = {}
        return role

    async def update_trust(self, name: str, trust: Mapping[str, Any]) -> None:
        self.calls["update_trust"] += 1
        self.roles[name] = replace(self.roles[name], trust=dict(trust))

    async def inline_policy(self, role: str, policy: str) -> dict[str, Any] | None:
        return self.policies.get(role, {}).get(policy)

    async def inline_policy_names(self, role: str) -> list[str]:
        return list(self.policies.get(role, {}))

    async def put_inline_policy(self, role: str, policy: str, document: Mapping[str, Any]) -> None:
        self.calls["put_inline_policy"] += 1
        self.policies[role][policy] = dict(document)

    async def delete_inline_policy(self, role: str, policy: str) -> bool:
        self.calls["delete_inline_policy"] += 1
        return self.policies.get(role, {}).pop(policy, None) is not None

    async def attached_policy_arns(self, role: str) -> list[str]:
        return list(self.attached.get(role, []))

    async def detach_policy(self, role: str, policy_arn: str) -> bool:
        self.calls["detach_policy"] += 1
        self.attached[role].remove(policy_arn)
        return True

    async def delete_role(self, name: str) -> bool:
        if name not in self.roles:
            return False
        if self.policies.get(name) or self.attached.get(name):
            raise PermanentError("DeleteConflict", f"role {name} still has policies")
        self.calls["delete_role"] += 1
        del self.roles[name]
        self.policies.pop(name, None)
        return True

    async def oidc_provider(self, url: str) -> OidcProvider | None:
        return next((p for p in self.providers.values() if p.url == url), None)

    async def create_oidc_provider(
        self, url: str, client_ids: list[str], thumbprints: list[str], tags: Mapping[str, str]
    ) -> str:
        self.calls["create_oidc_provider"] += 1
        arn = f"arn:aws:iam::{self.account}:oidc-provider/{url}"
        self.providers[arn] = OidcProvider(arn, url, tuple(client_ids), dict(tags))
        self.last_thumbprints = thumbprints
        return arn

    async def add_client_id(self, arn: str, client_id: str) -> None:
        self.calls["add_client_id"] += 1
        provider = self.providers[arn]
        self.providers[arn] = replace(provider, client_ids=(*provider.client_ids, client_id))

    async def delete_oidc_provider(self, arn: str) -> bool:
        if arn not in self.providers:
            return False
        self.calls["delete_oidc_provider"] += 1
        del self.providers[arn]
        return True

    async def issuer_thumbprint(self, issuer_url: str) -> str | None:
        return self.thumbprint

    def mutations(self) -> int:
        return sum(self.calls.values())
