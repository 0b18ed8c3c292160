"""EC2 networking for the network stages: the `network.Ec2` port over boto3.

Everything is created with its tags in the same call (TagSpecifications), so a resource never
exists untagged and a re-run finds it. Deleting something already gone is not an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.domain.network import NatGateway, RouteTable, Rule, SecurityGroup, Vpc
from cluster_svc.domain.subnets import Subnet, Zone
from shared.errors import PermanentError, StageError

NOT_FOUND = frozenset(
    {
        "InvalidVpcID.NotFound",
        "InvalidSubnetID.NotFound",
        "InvalidInternetGatewayID.NotFound",
        "InvalidRouteTableID.NotFound",
        "InvalidAssociationID.NotFound",
        "InvalidAllocationID.NotFound",
        "NatGatewayNotFound",
        "InvalidNatGatewayID.NotFound",
        "InvalidGroup.NotFound",
        "InvalidGroupId.NotFound",
        "InvalidGatewayID.NotFound",
    }
)


# The next step for refusals a user can act on (AWS's own message is kept as the message).
HINTS = {
    "VpcLimitExceeded": "delete an unused VPC or raise the quota 'VPCs per Region' "
    "(aws service-quotas request-service-quota-increase --service-code vpc --quota-code "
    "L-F678F1CE), then retry",
    "AddressLimitExceeded": "release an unused Elastic IP or raise the quota 'EC2-VPC Elastic "
    "IPs' (service code ec2, quota code L-0263D0A3), then retry",
    "NatGatewayLimitExceeded": "delete an unused NAT gateway in the zone or raise the quota "
    "'NAT gateways per Availability Zone' (service code vpc, quota code L-FE5A380F)",
    "InternetGatewayLimitExceeded": "delete an unused internet gateway or raise the quota "
    "'Internet gateways per Region' (service code vpc, quota code L-A4707A72)",
    "SecurityGroupLimitExceeded": "delete unused security groups in the VPC or raise the quota "
    "'VPC security groups per Region' (service code vpc, quota code L-E79EC296)",
    "RulesPerSecurityGroupLimitExceeded": "remove rules from the group or raise the quota "
    "'Inbound or outbound rules per security group'",
    "InvalidSubnet.Conflict": "another subnet took this range; retry the operation to plan again",
    "InvalidParameterValue": "check the cluster's network settings (zone ids, VPC CIDR) against "
    "the message, then retry",
    "UnauthorizedOperation": "grant Hyperpilot's credentials the EC2 permission named in the "
    "message, then retry",
}


def _tag_dict(tags: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or []}


def _tagging(kind: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """TagSpecifications for a create call (none at all when there are no tags)."""
    if not tags:
        return {}
    tag_list = [{"Key": k, "Value": v} for k, v in tags.items()]
    return {"TagSpecifications": [{"ResourceType": kind, "Tags": tag_list}]}


def _tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{k}", "Values": [v]} for k, v in tags.items()]


def _vpc(raw: dict[str, Any]) -> Vpc:
    cidrs = [
        a["CidrBlock"]
        for a in raw.get("CidrBlockAssociationSet", [])
        if a.get("CidrBlockState", {}).get("State", "associated") == "associated"
    ]
    primary = raw["CidrBlock"]
    ordered = [primary, *[c for c in cidrs if c != primary]]
    return Vpc(raw["VpcId"], tuple(ordered), _tag_dict(raw.get("Tags")))


def _subnet(raw: dict[str, Any]) -> Subnet:
    return Subnet(
        raw["SubnetId"],
        raw["VpcId"],
        raw["CidrBlock"],
        raw["AvailabilityZoneId"],
        _tag_dict(raw.get("Tags")),
    )


def _route_table(raw: dict[str, Any]) -> RouteTable:
    routes: dict[str, str] = {}
    for route in raw.get("Routes", []):
        destination = route.get("DestinationCidrBlock")
        target = route.get("GatewayId") or route.get("NatGatewayId") or route.get("InstanceId")
        if destination and target:
            routes[destination] = target
    associations = {
        a["RouteTableAssociationId"]: a["SubnetId"]
        for a in raw.get("Associations", [])
        if not a.get("Main") and a.get("SubnetId")
    }
    main = any(a.get("Main") for a in raw.get("Associations", []))
    return RouteTable(
        raw["RouteTableId"], raw["VpcId"], routes, associations, main, _tag_dict(raw.get("Tags"))
    )


def _nat(raw: dict[str, Any]) -> NatGateway:
    return NatGateway(
        raw["NatGatewayId"],
        raw["State"],
        raw.get("SubnetId", ""),
        raw.get("FailureMessage"),
        _tag_dict(raw.get("Tags")),
    )


def _rules(permissions: list[dict[str, Any]]) -> frozenset[Rule]:
    rules: set[Rule] = set()
    for permission in permissions:
        protocol = str(permission.get("IpProtocol", "-1"))
        for pair in permission.get("UserIdGroupPairs", []):
            rules.add(Rule(protocol, group_id=pair["GroupId"]))
        for ip_range in permission.get("IpRanges", []):
            rules.add(Rule(protocol, cidr=ip_range["CidrIp"]))
    return frozenset(rules)


def _group(raw: dict[str, Any]) -> SecurityGroup:
    return SecurityGroup(
        raw["GroupId"],
        raw.get("VpcId", ""),
        raw["GroupName"],
        _rules(raw.get("IpPermissions", [])),
        _rules(raw.get("IpPermissionsEgress", [])),
        _tag_dict(raw.get("Tags")),
    )


class Ec2Network:
    """The network stages' view of EC2 in one region."""

    def __init__(self, aws: AwsClients) -> None:
        self.aws = aws

    async def _call(self, operation: str, **params: Any) -> Any:
        try:
            return await self.aws.call("ec2", operation, **params)
        except StageError as exc:
            if exc.hint is None and exc.code in HINTS:
                exc.hint = HINTS[exc.code]
            raise

    async def _gone_ok(self, operation: str, **params: Any) -> bool:
        """Run a delete; False when the thing was already gone."""
        try:
            await self._call(operation, **params)
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return False
            raise
        return True

    async def _describe(self, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
        """A describe call, all pages; a missing id reads as an empty answer."""
        items: list[dict[str, Any]] = []
        try:
            while True:
                page = await self._call(operation, **params)
                items.extend(page.get(key, []))
                token = page.get("NextToken")
                if not token:
                    return items
                params["NextToken"] = token
        except PermanentError as exc:
            if exc.code in NOT_FOUND:
                return []
            raise

    # ---- zones and VPCs --------------------------------------------------------------------

    async def zones(self) -> list[Zone]:
        raw = await self._describe(
            "describe_availability_zones",
            "AvailabilityZones",
            Filters=[{"Name": "zone-type", "Values": ["availability-zone"]}],
        )
        return [Zone(z["ZoneId"], z["ZoneName"], z.get("State") == "available") for z in raw]

    async def vpc(self, vpc_id: str) -> Vpc | None:
        found = await self._describe("describe_vpcs", "Vpcs", VpcIds=[vpc_id])
        return _vpc(found[0]) if found else None

    async def find_vpc(self, tags: Mapping[str, str]) -> Vpc | None:
        found = await self._describe("describe_vpcs", "Vpcs", Filters=_tag_filters(tags))
        return _vpc(sorted(found, key=lambda v: v["VpcId"])[0]) if found else None

    async def create_vpc(self, cidr: str, tags: Mapping[str, str]) -> Vpc:
        raw = await self._call("create_vpc", CidrBlock=cidr, **_tagging("vpc", tags))
        return _vpc(raw["Vpc"])

    async def enable_dns(self, vpc_id: str) -> bool:
        """EKS private endpoints need DNS support and hostnames; returns True if either changed."""
        changed = False
        for attribute, key in (
            ("enableDnsSupport", "EnableDnsSupport"),
            ("enableDnsHostnames", "EnableDnsHostnames"),
        ):
            raw = await self._call("describe_vpc_attribute", VpcId=vpc_id, Attribute=attribute)
            if not raw.get(key, {}).get("Value"):
                await self._call("modify_vpc_attribute", VpcId=vpc_id, **{key: {"Value": True}})
                changed = True
        return changed

    async def delete_vpc(self, vpc_id: str) -> bool:
        return await self._gone_ok("delete_vpc", VpcId=vpc_id)

    # ---- subnets ---------------------------------------------------------------------------

    async def subnets(self, vpc_id: str) -> list[Subnet]:
        raw = await self._describe(
            "describe_subnets", "Subnets", Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]
        )
        return [_subnet(s) for s in raw]

    async def subnet(self, subnet_id: str) -> Subnet | None:
        found = await self._describe("describe_subnets", "Subnets", SubnetIds=[subnet_id])
        return _subnet(found[0]) if found else None

    async def create_subnet(
        self, vpc_id: str, cidr: str, zone_id: str, tags: Mapping[str, str]
    ) -> Subnet:
        raw = await self._call(
            "create_subnet",
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZoneId=zone_id,
            **_tagging("subnet", tags),
        )
        return _subnet(raw["Subnet"])

    async def delete_subnet(self, subnet_id: str) -> bool:
        return await self._gone_ok("delete_subnet", SubnetId=subnet_id)

    # ---- internet gateways -----------------------------------------------------------------

    async def attached_internet_gateway(self, vpc_id: str) -> str | None:
        found = await self._describe(
            "describe_internet_gateways",
            "InternetGateways",
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}],
        )
        return str(found[0]["InternetGatewayId"]) if found else None

    async def find_internet_gateway(self, tags: Mapping[str, str]) -> str | None:
        found = await self._describe(
            "describe_internet_gateways", "InternetGateways", Filters=_tag_filters(tags)
        )
        return str(sorted(g["InternetGatewayId"] for g in found)[0]) if found else None

    async def create_internet_gateway(self, tags: Mapping[str, str]) -> str:
        raw = await self._call("create_internet_gateway", **_tagging("internet-gateway", tags))
        return str(raw["InternetGateway"]["InternetGatewayId"])

    async def attach_internet_gateway(self, gateway_id: str, vpc_id: str) -> None:
        await self._call("attach_internet_gateway", InternetGatewayId=gateway_id, VpcId=vpc_id)

    async def delete_internet_gateway(self, gateway_id: str) -> bool:
        """Detaches the gateway from its VPC first (AWS refuses to delete an attached one)."""
        found = await self._describe(
            "describe_internet_gateways", "InternetGateways", InternetGatewayIds=[gateway_id]
        )
        if not found:
            return False
        for attachment in found[0].get("Attachments", []):
            await self._gone_ok(
                "detach_internet_gateway", InternetGatewayId=gateway_id, VpcId=attachment["VpcId"]
            )
        return await self._gone_ok("delete_internet_gateway", InternetGatewayId=gateway_id)

    # ---- route tables ----------------------------------------------------------------------

    async def find_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable | None:
        found = await self._describe(
            "describe_route_tables",
            "RouteTables",
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, *_tag_filters(tags)],
        )
        return _route_table(sorted(found, key=lambda t: t["RouteTableId"])[0]) if found else None

    async def route_table(self, route_table_id: str) -> RouteTable | None:
        found = await self._describe(
            "describe_route_tables", "RouteTables", RouteTableIds=[route_table_id]
        )
        return _route_table(found[0]) if found else None

    async def route_table_of_subnet(self, subnet_id: str) -> RouteTable | None:
        found = await self._describe(
            "describe_route_tables",
            "RouteTables",
            Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}],
        )
        return _route_table(found[0]) if found else None

    async def create_route_table(self, vpc_id: str, tags: Mapping[str, str]) -> RouteTable:
        raw = await self._call("create_route_table", VpcId=vpc_id, **_tagging("route-table", tags))
        return _route_table(raw["RouteTable"])

    async def create_route(self, route_table_id: str, destination: str, target_id: str) -> None:
        target = "NatGatewayId" if target_id.startswith("nat-") else "GatewayId"
        await self._call(
            "create_route",
            RouteTableId=route_table_id,
            DestinationCidrBlock=destination,
            **{target: target_id},
        )

    async def associate(self, route_table_id: str, subnet_id: str) -> str:
        raw = await self._call(
            "associate_route_table", RouteTableId=route_table_id, SubnetId=subnet_id
        )
        return str(raw["AssociationId"])

    async def disassociate(self, association_id: str) -> bool:
        return await self._gone_ok("disassociate_route_table", AssociationId=association_id)

    async def delete_route_table(self, route_table_id: str) -> bool:
        return await self._gone_ok("delete_route_table", RouteTableId=route_table_id)

    # ---- Elastic IPs and NAT gateways ------------------------------------------------------

    async def find_address(self, tags: Mapping[str, str]) -> str | None:
        found = await self._describe("describe_addresses", "Addresses", Filters=_tag_filters(tags))
        return str(sorted(a["AllocationId"] for a in found)[0]) if found else None

    async def allocate_address(self, tags: Mapping[str, str]) -> str:
        raw = await self._call("allocate_address", Domain="vpc", **_tagging("elastic-ip", tags))
        return str(raw["AllocationId"])

    async def release_address(self, allocation_id: str) -> bool:
        return await self._gone_ok("release_address", AllocationId=allocation_id)

    async def find_nat_gateway(self, vpc_id: str, tags: Mapping[str, str]) -> NatGateway | None:
        """A live (pending or available) gateway with these tags; failed ones are ignored."""
        found = await self._describe(
            "describe_nat_gateways",
            "NatGateways",
            Filter=[
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "state", "Values": ["pending", "available"]},
                *_tag_filters(tags),
            ],
        )
        return _nat(sorted(found, key=lambda n: n["NatGatewayId"])[0]) if found else None

    async def nat_gateway(self, nat_gateway_id: str) -> NatGateway | None:
        found = await self._describe(
            "describe_nat_gateways", "NatGateways", NatGatewayIds=[nat_gateway_id]
        )
        return _nat(found[0]) if found else None

    async def create_nat_gateway(
        self, subnet_id: str, allocation_id: str, tags: Mapping[str, str]
    ) -> NatGateway:
        raw = await self._call(
            "create_nat_gateway",
            SubnetId=subnet_id,
            AllocationId=allocation_id,
            **_tagging("natgateway", tags),
        )
        return _nat(raw["NatGateway"])

    async def delete_nat_gateway(self, nat_gateway_id: str) -> bool:
        return await self._gone_ok("delete_nat_gateway", NatGatewayId=nat_gateway_id)

    # ---- security groups -------------------------------------------------------------------

    async def find_security_group(self, vpc_id: str, name: str) -> SecurityGroup | None:
        found = await self._describe(
            "describe_security_groups",
            "SecurityGroups",
            Filters=[
                {"Name": "vpc-id", "Values": [vpc_id]},
                {"Name": "group-name", "Values": [name]},
            ],
        )
        return _group(found[0]) if found else None

    async def security_group(self, group_id: str) -> SecurityGroup | None:
        found = await self._describe(
            "describe_security_groups", "SecurityGroups", GroupIds=[group_id]
        )
        return _group(found[0]) if found else None

    async def create_security_group(
        self, vpc_id: str, name: str, description: str, tags: Mapping[str, str]
    ) -> SecurityGroup:
        raw = await self._call(
            "create_security_group",
            VpcId=vpc_id,
            GroupName=name,
            Description=description,
            **_tagging("security-group", tags),
        )
        group = await self.security_group(raw["GroupId"])
        if group is None:
            raise PermanentError(
                "InvalidGroup.NotFound",
                f"security group {raw['GroupId']} vanished right after it was created",
                "retry the operation",
            )
        return group

    async def authorize(self, group_id: str, direction: str, rule: Rule) -> None:
        permission: dict[str, Any] = {"IpProtocol": rule.protocol}
        if rule.group_id is not None:
            permission["UserIdGroupPairs"] = [{"GroupId": rule.group_id}]
        if rule.cidr is not None:
            permission["IpRanges"] = [{"CidrIp": rule.cidr}]
        operation = (
            "authorize_security_group_ingress"
            if direction == "ingress"
            else "authorize_security_group_egress"
        )
        try:
            await self._call(operation, GroupId=group_id, IpPermissions=[permission])
        except PermanentError as exc:
            if exc.code != "InvalidPermission.Duplicate":
                raise

    async def delete_security_group(self, group_id: str) -> bool:
        return await self._gone_ok("delete_security_group", GroupId=group_id)
