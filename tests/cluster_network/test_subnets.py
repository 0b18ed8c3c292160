"""CIDR planning and zone choice: pure functions."""

from __future__ import annotations

import ipaddress

import pytest

from cluster_svc.domain.subnets import (
    COMPUTE_TAG,
    CreateSubnet,
    Subnet,
    UseSubnet,
    Zone,
    control_plane_zones,
    free_block,
    plan_compute_subnet,
    plan_support_subnets,
)
from shared.errors import PermanentError

VPC = "vpc-0000000a"
COMPUTE = {COMPUTE_TAG: "compute"}


def subnet(
    subnet_id: str, cidr: str, zone: str = "use1-az2", vpc: str = VPC, **tags: str
) -> Subnet:
    return Subnet(subnet_id, vpc, cidr, zone, dict(tags))


def overlaps(cidr: str, others: list[str]) -> bool:
    net = ipaddress.IPv4Network(cidr)
    return any(net.overlaps(ipaddress.IPv4Network(o)) for o in others)


def test_first_free_block_is_aligned_and_skips_every_overlap() -> None:
    taken = ["10.0.0.0/24", "10.0.16.0/20", "10.0.40.0/22"]
    block = free_block(["10.0.0.0/16"], taken, 20)
    assert block == "10.0.48.0/20"  # 10.0.0/20 holds a /24, 10.0.32/20 holds a /22
    assert not overlaps(block, taken)


def test_free_block_from_the_end_and_across_secondary_cidrs() -> None:
    assert free_block(["10.0.0.0/16"], [], 24, from_end=True) == "10.0.255.0/24"
    full = [f"10.0.{i * 16}.0/20" for i in range(16)]
    assert free_block(["10.0.0.0/16", "10.1.0.0/16"], full, 20) == "10.1.0.0/20"
    assert free_block(["10.0.0.0/16"], full, 20) is None
    assert free_block(["10.0.0.0/22"], [], 20) is None  # a /22 cannot hold a /20


def test_new_compute_subnet_avoids_the_support_subnets_at_the_end() -> None:
    support = plan_support_subnets(["10.192.0.0/16"], [], 4)
    assert support == ["10.192.255.0/24", "10.192.254.0/24", "10.192.253.0/24", "10.192.252.0/24"]
    existing = [subnet(f"subnet-{i}", cidr) for i, cidr in enumerate(support)]
    decision = plan_compute_subnet(VPC, ["10.192.0.0/16"], existing, "use1-az2")
    assert decision == CreateSubnet("10.192.0.0/20")
    second = [*existing, subnet("subnet-c", "10.192.0.0/20", **COMPUTE)]
    again = plan_compute_subnet(VPC, ["10.192.0.0/16"], second, "use1-az4")
    assert again == CreateSubnet("10.192.16.0/20")


def test_existing_compute_subnet_in_the_zone_is_reused_and_this_clusters_first() -> None:
    subnets = [
        subnet("subnet-a", "10.0.0.0/20", **COMPUTE, **{"hyperpilot:cluster": "other"}),
        subnet("subnet-b", "10.0.16.0/20", **COMPUTE, **{"hyperpilot:cluster": "mine"}),
        subnet("subnet-c", "10.0.32.0/20", zone="use1-az4", **COMPUTE),
    ]
    decision = plan_compute_subnet(VPC, ["10.0.0.0/16"], subnets, "use1-az2", cluster="mine")
    assert decision == UseSubnet(subnets[1])
    other = plan_compute_subnet(VPC, ["10.0.0.0/16"], subnets, "use1-az2", cluster="third")
    assert other == UseSubnet(subnets[0])


def test_untagged_or_wrong_sized_subnets_are_not_compatible() -> None:
    subnets = [
        subnet("subnet-a", "10.0.0.0/20"),  # not tagged for compute
        subnet("subnet-b", "10.0.16.0/21", **COMPUTE),  # too small
        subnet("subnet-c", "10.0.32.0/19", **COMPUTE),  # not a /20
    ]
    decision = plan_compute_subnet(VPC, ["10.0.0.0/16"], subnets, "use1-az2")
    assert decision == CreateSubnet("10.0.64.0/20")


def test_exhausted_vpc_is_a_permanent_error_with_a_next_step() -> None:
    full = [subnet(f"subnet-{i}", f"10.0.{i * 16}.0/20", zone="use1-az1") for i in range(16)]
    with pytest.raises(PermanentError) as err:
        plan_compute_subnet(VPC, ["10.0.0.0/16"], full, "use1-az2")
    assert err.value.code == "NoFreeComputeSubnet"
    assert "no free /20" in err.value.message
    assert err.value.hint and "secondary CIDR" in err.value.hint


def test_named_subnet_is_validated() -> None:
    ok = subnet("subnet-ok", "10.0.0.0/19")
    elsewhere = subnet("subnet-x", "172.16.0.0/20", vpc="vpc-0000000b")
    wrong_zone = subnet("subnet-z", "10.0.32.0/20", zone="use1-az1")
    small = subnet("subnet-s", "10.0.48.0/24")
    pool = [ok, elsewhere, wrong_zone, small]
    cidrs = ["10.0.0.0/16"]
    assert plan_compute_subnet(VPC, cidrs, pool, "use1-az2", "subnet-ok") == UseSubnet(ok)
    codes = {}
    for named in ("subnet-x", "subnet-z", "subnet-s", "subnet-missing"):
        with pytest.raises(PermanentError) as err:
            plan_compute_subnet(VPC, cidrs, pool, "use1-az2", named)
        codes[named] = err.value.code
    assert codes == {
        "subnet-x": "SubnetNotInVpc",
        "subnet-z": "SubnetNotInZone",
        "subnet-s": "SubnetTooSmall",
        "subnet-missing": "InvalidSubnetID.NotFound",
    }


def test_control_plane_zones_take_the_compute_zone_and_a_supported_second() -> None:
    zones = [
        Zone("use1-az1", "us-east-1b"),
        Zone("use1-az2", "us-east-1c"),
        Zone("use1-az3", "us-east-1e"),
        Zone("use1-az4", "us-east-1d", available=False),
    ]
    assert control_plane_zones(zones, "use1-az2") == ["use1-az2", "use1-az1"]
    # use1-az3 cannot hold EKS control-plane interfaces: two more zones are needed.
    assert control_plane_zones([*zones, Zone("use1-az6", "us-east-1a")], "use1-az3") == [
        "use1-az3",
        "use1-az1",
        "use1-az2",
    ]
    with pytest.raises(PermanentError) as err:
        control_plane_zones(zones, "use1-az9")
    assert err.value.code == "InvalidAvailabilityZoneId"
    with pytest.raises(PermanentError) as err:
        control_plane_zones(zones[1:3], "use1-az2")
    assert err.value.code == "NotEnoughZones"
