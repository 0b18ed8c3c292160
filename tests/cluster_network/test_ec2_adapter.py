"""The network stages through the EC2 adapter against the simulated AWS (boto3 over HTTP)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from cluster_svc.adapters.ec2 import Ec2Network
from cluster_svc.domain import network
from cluster_svc.domain.network import ensure_compute_subnet
from shared.errors import PermanentError, TemporaryError
from shared.stages import Submitted
from sim.aws import SimulatedAws
from sim.testing import aws_client, inject_fault
from tests.cluster_network.conftest import my_inventory
from tests.cluster_network.helpers import by_name, context, create_command, delete_command, drive

CREATES = (
    "CreateVpc",
    "CreateSubnet",
    "CreateInternetGateway",
    "AttachInternetGateway",
    "CreateRouteTable",
    "CreateRoute",
    "AssociateRouteTable",
    "AllocateAddress",
    "CreateNatGateway",
    "CreateSecurityGroup",
    "AuthorizeSecurityGroupIngress",
    "AuthorizeSecurityGroupEgress",
    "ModifyVpcAttribute",
)


def unique() -> str:
    return f"net-{uuid.uuid4().hex[:6]}"


def counts(sim: SimulatedAws) -> dict[str, int]:
    return {op: len(sim.call_log("ec2", op)) for op in CREATES}


async def create(ec2: Ec2Network, command: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stages = by_name(network.create_stages(ec2))
    outputs: dict[str, dict[str, Any]] = {}
    outputs["network"] = (await drive(stages["network"], command)).outputs
    for name in ("security_group", "compute_subnet"):
        outputs[name] = (await drive(stages[name], command, outputs)).outputs
    return outputs


async def test_create_builds_the_network_aws_shows_then_delete_restores_the_account(
    sim: SimulatedAws, ec2: Ec2Network
) -> None:
    before = my_inventory(sim)
    name = unique()
    command = create_command(name)
    first_run = await by_name(network.create_stages(ec2))["network"].run(
        context("network", command)
    )
    assert isinstance(first_run, Submitted)  # the simulated NAT gateway starts pending
    outputs = await create(ec2, command)
    net, group, compute = outputs["network"], outputs["security_group"], outputs["compute_subnet"]
    client = aws_client(sim, "ec2")

    vpc = client.describe_vpcs(VpcIds=[net["vpc_id"]])["Vpcs"][0]
    assert vpc["CidrBlock"] == "10.192.0.0/16"
    tags = {t["Key"]: t["Value"] for t in vpc["Tags"]}
    assert tags["managed-by"] == "hyperpilot" and tags["hyperpilot:cluster"] == name
    hostnames = client.describe_vpc_attribute(VpcId=net["vpc_id"], Attribute="enableDnsHostnames")
    assert hostnames["EnableDnsHostnames"]["Value"] is True

    subnets = {
        s["SubnetId"]: s
        for s in client.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [net["vpc_id"]]}])[
            "Subnets"
        ]
    }
    zones = [subnets[s]["AvailabilityZoneId"] for s in net["private_subnet_ids"]]
    assert zones == net["zone_ids"] and zones[0] == "use1-az2" and len(set(zones)) == 2
    assert [subnets[s]["AvailabilityZoneId"] for s in net["public_subnet_ids"]] == zones

    nat = client.describe_nat_gateways(NatGatewayIds=[net["nat_gateway_id"]])["NatGateways"][0]
    assert nat["State"] == "available" and nat["SubnetId"] == net["public_subnet_ids"][0]
    tables = {
        t["RouteTableId"]: t
        for t in client.describe_route_tables(
            Filters=[{"Name": "vpc-id", "Values": [net["vpc_id"]]}]
        )["RouteTables"]
    }
    private = tables[net["private_route_table_id"]]
    default = [r for r in private["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
    assert default and default[0]["NatGatewayId"] == net["nat_gateway_id"]
    private_members = {a["SubnetId"] for a in private["Associations"] if a.get("SubnetId")}
    assert {*net["private_subnet_ids"], compute["subnet_id"]} <= private_members
    public = tables[net["public_route_table_id"]]
    assert any(r.get("GatewayId") == net["internet_gateway_id"] for r in public["Routes"])

    home = subnets[compute["subnet_id"]]
    assert home["CidrBlock"] == compute["cidr"] == "10.192.0.0/20"
    assert home["AvailabilityZoneId"] == compute["availability_zone_id"] == "use1-az2"

    sg = client.describe_security_groups(GroupIds=[group["security_group_id"]])["SecurityGroups"][0]
    own = group["security_group_id"]

    def self_referencing(permissions: list[dict[str, Any]]) -> bool:
        return any(
            p["IpProtocol"] == "-1" and any(g["GroupId"] == own for g in p["UserIdGroupPairs"])
            for p in permissions
        )

    assert self_referencing(sg["IpPermissions"]) and self_referencing(sg["IpPermissionsEgress"])
    assert any(r["CidrIp"] == "0.0.0.0/0" for p in sg["IpPermissionsEgress"] for r in p["IpRanges"])

    made = counts(sim)
    again = await create(ec2, command)
    assert counts(sim) == made  # a second run finds everything: no create call at all
    assert again == outputs

    delete = delete_command(name, outputs)
    for stage in network.delete_stages(ec2):
        await drive(stage, delete)
    assert my_inventory(sim) == before
    assert sim.call_log("ec2", "ReleaseAddress") and sim.call_log("ec2", "DetachInternetGateway")


async def test_compute_subnet_in_an_existing_vpc_avoids_its_subnets(
    sim: SimulatedAws, ec2: Ec2Network
) -> None:
    client = aws_client(sim, "ec2")
    vpc_id = client.create_vpc(CidrBlock="10.60.0.0/16")["Vpc"]["VpcId"]
    taken = client.create_subnet(
        VpcId=vpc_id, CidrBlock="10.60.0.0/20", AvailabilityZoneId="use1-az1"
    )["Subnet"]
    small = client.create_subnet(
        VpcId=vpc_id, CidrBlock="10.60.16.0/24", AvailabilityZoneId="use1-az2"
    )["Subnet"]
    try:
        subnet_id, cidr, created = await ensure_compute_subnet(
            ec2, vpc_id, "use1-az2", cluster="shared"
        )
        assert (cidr, created) == ("10.60.32.0/20", True)
        found = client.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
        assert found["AvailabilityZoneId"] == "use1-az2"
        assert await ensure_compute_subnet(ec2, vpc_id, "use1-az2", cluster="other") == (
            subnet_id,
            cidr,
            False,
        )
        with pytest.raises(PermanentError) as err:
            await ensure_compute_subnet(ec2, vpc_id, "use1-az2", small["SubnetId"], cluster="x")
        assert err.value.code == "SubnetTooSmall"
        with pytest.raises(PermanentError) as err:
            await ensure_compute_subnet(ec2, vpc_id, "use1-az2", taken["SubnetId"], cluster="x")
        assert err.value.code == "SubnetNotInZone"
        with pytest.raises(PermanentError) as err:
            await ensure_compute_subnet(
                ec2, vpc_id, "use1-az2", "subnet-0123456789abcdef0", cluster="x"
            )
        assert err.value.code == "InvalidSubnetID.NotFound"
        client.delete_subnet(SubnetId=subnet_id)
    finally:
        client.delete_subnet(SubnetId=taken["SubnetId"])
        client.delete_subnet(SubnetId=small["SubnetId"])
        client.delete_vpc(VpcId=vpc_id)


async def test_a_full_vpc_fails_with_the_next_step(sim: SimulatedAws, ec2: Ec2Network) -> None:
    client = aws_client(sim, "ec2")
    vpc_id = client.create_vpc(CidrBlock="10.70.0.0/20")["Vpc"]["VpcId"]
    subnet = client.create_subnet(
        VpcId=vpc_id, CidrBlock="10.70.0.0/24", AvailabilityZoneId="use1-az2"
    )["Subnet"]
    try:
        with pytest.raises(PermanentError) as err:
            await ensure_compute_subnet(ec2, vpc_id, "use1-az2", cluster="full")
        assert err.value.code == "NoFreeComputeSubnet" and err.value.hint
    finally:
        client.delete_subnet(SubnetId=subnet["SubnetId"])
        client.delete_vpc(VpcId=vpc_id)


async def test_throttling_is_temporary_and_aws_refusals_keep_their_code_and_message(
    sim: SimulatedAws, ec2: Ec2Network
) -> None:
    with (
        inject_fault(sim, "throttle", service="ec2", operation="DescribeVpcs"),
        pytest.raises(TemporaryError),
    ):
        await ec2.vpc("vpc-0123456789abcdef0")
    assert await ec2.vpc("vpc-0123456789abcdef0") is None
    with pytest.raises(PermanentError) as err:
        await ec2.create_subnet("vpc-0123456789abcdef0", "10.0.0.0/20", "use1-az2", {})
    assert (
        err.value.code == "InvalidVpcID.NotFound" and "vpc-0123456789abcdef0" in err.value.message
    )


async def test_a_lost_answer_after_each_create_never_makes_a_second_resource(
    sim: SimulatedAws, ec2: Ec2Network
) -> None:
    """Each create takes effect and its answer is lost (a 500 after the fact); the retried stage
    finds what the first attempt made by its tags."""
    before = my_inventory(sim)
    name = unique()
    command = create_command(name)
    stage = by_name(network.create_stages(ec2))["network"]
    lost = (  # in the order the stage makes them
        "CreateVpc",
        "CreateInternetGateway",
        "CreateSubnet",
        "CreateRouteTable",
        "AllocateAddress",
        "CreateNatGateway",
    )
    for operation in lost:
        fault = inject_fault(sim, "server_error", service="ec2", operation=operation, phase="after")
        with fault, pytest.raises(TemporaryError):
            await stage.run(context("network", command))
    outputs = await create(ec2, command)
    vpc_id = outputs["network"]["vpc_id"]
    applied = {
        op: [c for c in sim.call_log("ec2", op) if c["applied"] and name in str(c["params"])]
        for op in lost
    }
    assert {op: len(calls) for op, calls in applied.items()} == {
        "CreateVpc": 1,
        "CreateRouteTable": 2,
        "CreateSubnet": 5,  # four support subnets and the compute subnet
        "CreateInternetGateway": 1,
        "AllocateAddress": 1,
        "CreateNatGateway": 1,
    }
    assert (
        len(
            aws_client(sim, "ec2").describe_subnets(
                Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]
            )["Subnets"]
        )
        == 5
    )
    for stage_to_delete in network.delete_stages(ec2):
        await drive(stage_to_delete, delete_command(name, outputs))
    assert my_inventory(sim) == before
