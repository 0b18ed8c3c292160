"""CIDR planning and zone choice for a cluster's network: pure functions, no cloud calls.

Layout of a VPC made by Hyperpilot: the small public and private subnets the control plane and
the NAT gateway need are carved from the END of the VPC's range, so its start stays free for
/20 compute subnets (a /16 leaves room for fifteen of them).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from shared.errors import PermanentError

COMPUTE_PREFIX = 20  # HyperPod nodes and their pods take many addresses: 4091 usable per /20
SUPPORT_PREFIX = 24  # public and private subnets of the control plane and NAT gateway

CLUSTER_TAG = "hyperpilot:cluster"
COMPUTE_TAG = "hyperpilot:subnet"  # value "compute" marks a subnet any capacity path may use
COMPUTE_TAG_VALUE = "compute"

# Zones where EKS cannot place control-plane network interfaces (EKS user guide, "Subnet
# requirements"): a cluster's EKS subnets must be in two zones outside this set.
EKS_UNSUPPORTED_ZONES = frozenset({"use1-az3", "usw1-az2", "cac1-az3"})


@dataclass(frozen=True)
class Zone:
    zone_id: str
    zone_name: str
    available: bool = True


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    vpc_id: str
    cidr: str
    zone_id: str
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def prefix(self) -> int:
        return ipaddress.IPv4Network(self.cidr).prefixlen

    @property
    def for_compute(self) -> bool:
        return self.tags.get(COMPUTE_TAG) == COMPUTE_TAG_VALUE


@dataclass(frozen=True)
class UseSubnet:
    """Decision: an existing subnet serves."""

    subnet: Subnet


@dataclass(frozen=True)
class CreateSubnet:
    """Decision: create a subnet with this CIDR."""

    cidr: str


def _networks(cidrs: Iterable[str]) -> list[ipaddress.IPv4Network]:
    return [ipaddress.IPv4Network(c, strict=False) for c in cidrs]


def free_block(
    vpc_cidrs: Sequence[str], taken: Iterable[str], prefix: int, *, from_end: bool = False
) -> str | None:
    """The first aligned block of size /prefix inside the VPC's CIDRs overlapping no taken block;
    searched from the end of each range when `from_end`. None when there is no room."""
    used = _networks(taken)
    ranges = _networks(vpc_cidrs)
    for vpc in reversed(ranges) if from_end else ranges:
        if vpc.prefixlen > prefix:
            continue
        candidates = list(vpc.subnets(new_prefix=prefix))
        for block in reversed(candidates) if from_end else candidates:
            if not any(block.overlaps(other) for other in used):
                return str(block)
    return None


def plan_compute_subnet(
    vpc_id: str,
    vpc_cidrs: Sequence[str],
    subnets: Sequence[Subnet],
    zone_id: str,
    requested_subnet_id: str | None = None,
    cluster: str | None = None,
) -> UseSubnet | CreateSubnet:
    """The one decision every capacity path makes for a zone's compute subnet.

    `subnets` holds the VPC's subnets (and the named one, wherever it is).
    The named subnet (validated) -> an existing compatible one (tagged for compute, in the zone,
    exactly /20; this cluster's first) -> a new /20 that overlaps nothing in the VPC.
    """
    if requested_subnet_id is not None:
        named = next((s for s in subnets if s.subnet_id == requested_subnet_id), None)
        return UseSubnet(validate_named_subnet(named, requested_subnet_id, vpc_id, zone_id))
    compatible = [
        s
        for s in subnets
        if s.vpc_id == vpc_id
        and s.zone_id == zone_id
        and s.for_compute
        and s.prefix == COMPUTE_PREFIX
    ]
    if compatible:
        mine = [s for s in compatible if cluster and s.tags.get(CLUSTER_TAG) == cluster]
        return UseSubnet(sorted(mine or compatible, key=lambda s: s.subnet_id)[0])
    cidr = free_block(vpc_cidrs, (s.cidr for s in subnets), COMPUTE_PREFIX)
    if cidr is None:
        raise PermanentError(
            "NoFreeComputeSubnet",
            f"VPC {vpc_id} ({', '.join(vpc_cidrs)}) has no free /{COMPUTE_PREFIX} for a compute "
            f"subnet in {zone_id}: its {len(subnets)} subnets leave no aligned gap",
            "add a secondary CIDR block to the VPC (e.g. a /16), free a /20, or name an "
            "existing /20 subnet in the zone",
        )
    return CreateSubnet(cidr)


def validate_named_subnet(
    subnet: Subnet | None, subnet_id: str, vpc_id: str, zone_id: str
) -> Subnet:
    """A subnet the user names must be in the cluster's VPC and zone and hold a /20 or more."""
    if subnet is None:
        raise PermanentError(
            "InvalidSubnetID.NotFound",
            f"subnet {subnet_id} does not exist",
            "list the VPC's subnets (aws ec2 describe-subnets --filters Name=vpc-id,Values="
            f"{vpc_id}) and name one of them, or omit the subnet to have one made",
        )
    if subnet.vpc_id != vpc_id:
        raise PermanentError(
            "SubnetNotInVpc",
            f"subnet {subnet_id} is in VPC {subnet.vpc_id}, not the cluster's VPC {vpc_id}",
            "name a subnet of the cluster's VPC",
        )
    if subnet.zone_id != zone_id:
        raise PermanentError(
            "SubnetNotInZone",
            f"subnet {subnet_id} is in {subnet.zone_id}, but the instance group runs in {zone_id}",
            f"name a subnet in {zone_id}, or set the group's zone to {subnet.zone_id}",
        )
    if subnet.prefix > COMPUTE_PREFIX:
        raise PermanentError(
            "SubnetTooSmall",
            f"subnet {subnet_id} is {subnet.cidr}; compute nodes need a /{COMPUTE_PREFIX} or larger",
            f"name a /{COMPUTE_PREFIX} (or larger) subnet, or omit it to have one made",
        )
    return subnet


def control_plane_zones(zones: Sequence[Zone], compute_zone: str) -> list[str]:
    """The zones of the public/private subnets: the compute zone first, then further zones (by
    id, for a stable choice) until two of them can host EKS control-plane interfaces."""
    by_id = {z.zone_id: z for z in zones}
    if compute_zone not in by_id:
        known = ", ".join(sorted(by_id))
        raise PermanentError(
            "InvalidAvailabilityZoneId",
            f"zone {compute_zone} is not a zone of this region (zones: {known})",
            "pick the compute zone from the region's zone ids",
        )
    if not by_id[compute_zone].available:
        raise PermanentError(
            "ZoneUnavailable",
            f"zone {compute_zone} is not available",
            "pick another compute zone",
        )
    chosen = [compute_zone]
    supported = 0 if compute_zone in EKS_UNSUPPORTED_ZONES else 1
    for zone in sorted(zones, key=lambda z: z.zone_id):
        if supported >= 2:
            break
        if zone.zone_id in chosen or not zone.available:
            continue
        if zone.zone_id in EKS_UNSUPPORTED_ZONES:
            continue
        chosen.append(zone.zone_id)
        supported += 1
    if supported < 2:
        raise PermanentError(
            "NotEnoughZones",
            f"the region offers fewer than two zones EKS supports besides {compute_zone}",
            "create the cluster in a region with at least two available zones",
        )
    return chosen


def plan_support_subnets(
    vpc_cidrs: Sequence[str], existing: Iterable[str], count: int
) -> list[str]:
    """CIDRs for `count` new /24 support subnets from the end of the VPC, overlapping nothing."""
    taken = list(existing)
    planned: list[str] = []
    for _ in range(count):
        cidr = free_block(vpc_cidrs, taken, SUPPORT_PREFIX, from_end=True)
        if cidr is None:
            raise PermanentError(
                "NoFreeSupportSubnet",
                f"the VPC ({', '.join(vpc_cidrs)}) has no free /{SUPPORT_PREFIX} for the "
                "control plane's public and private subnets",
                "use a VPC with free address space (a /16 is the default) or add a CIDR block",
            )
        planned.append(cidr)
        taken.append(cidr)
    return planned
