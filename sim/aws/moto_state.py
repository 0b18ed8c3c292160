"""Read-only access to moto's in-process backends: what EC2 and IAM resources exist.

The simulated services check references the way AWS does (a HyperPod cluster's subnets must
exist, an EKS cluster's role too), so they read moto's state for the same account and region.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moto.ec2.models import ec2_backends
from moto.iam.models import iam_backends


@dataclass(frozen=True)
class SubnetInfo:
    subnet_id: str
    vpc_id: str
    cidr: str
    zone_name: str
    zone_id: str


def ec2(account_id: str, region: str) -> Any:
    return ec2_backends[account_id][region]


def iam(account_id: str) -> Any:
    return iam_backends[account_id]["aws"]


def zones(account_id: str, region: str) -> list[tuple[str, str]]:
    """(name, zone id) of every Availability Zone of the region."""
    return [(z.name, z.zone_id) for z in ec2(account_id, region).describe_availability_zones()]


def zone_name(account_id: str, region: str, zone_id: str) -> str:
    for name, zid in zones(account_id, region):
        if zid == zone_id:
            return name
    return zone_id


def subnet(account_id: str, region: str, subnet_id: str) -> SubnetInfo | None:
    backend = ec2(account_id, region)
    for by_id in backend.subnets.values():
        found = by_id.get(subnet_id)
        if found is not None:
            return SubnetInfo(
                found.id,
                found.vpc_id,
                found.cidr_block,
                found.availability_zone,
                found.availability_zone_id,
            )
    return None


def vpc_cidrs(account_id: str, region: str, vpc_id: str) -> list[str]:
    """Every IPv4 CIDR block associated with a VPC (its primary one first)."""
    vpc = ec2(account_id, region).vpcs.get(vpc_id)
    if vpc is None:
        return []
    blocks = [vpc.cidr_block]
    for association in vpc.cidr_block_association_set:
        block = association.get("cidr_block")
        if block and block not in blocks:
            blocks.append(block)
    return blocks


def security_group_exists(account_id: str, region: str, group_id: str) -> bool:
    return ec2(account_id, region).get_security_group_from_id(group_id) is not None


def role_exists(account_id: str, arn: str) -> bool:
    try:
        iam(account_id).get_role_by_arn(arn)
    except Exception:
        return False
    return True
