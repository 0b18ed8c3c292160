"""What exists in the simulated account, by kind: the proof that a delete left nothing behind.

The account's defaults (the default VPC with its subnets, gateway, route table and security
group; AWS-managed IAM policies) are not listed: they exist in every fresh account. Secrets
scheduled for deletion are not listed either: they are on their way out.
"""

from __future__ import annotations

from typing import Any

from moto.cloudformation.models import cloudformation_backends
from moto.fsx.models import fsx_backends
from moto.s3.models import s3_backends
from moto.secretsmanager.models import secretsmanager_backends
from moto.ssm.models import ssm_backends

from sim.aws import moto_state


def moto_inventory(account_id: str, region: str) -> dict[str, list[str]]:
    """Resources moto holds for this account and region."""
    ec2: Any = moto_state.ec2(account_id, region)
    default_vpcs = {v.id for v in ec2.vpcs.values() if v.is_default}
    custom_vpcs = [v for v in ec2.vpcs.values() if not v.is_default]
    subnets = [
        s for by_id in ec2.subnets.values() for s in by_id.values() if s.vpc_id not in default_vpcs
    ]
    gateways = [
        g.id for g in ec2.internet_gateways.values() if not (g.vpc and g.vpc.id in default_vpcs)
    ]
    route_tables = []
    for table in ec2.route_tables.values():
        if table.vpc_id in default_vpcs:
            continue
        if table.main_association_id is None:
            route_tables.append(table.id)
    security_groups = [
        group.id
        for by_vpc in ec2.groups.values()
        for group in by_vpc.values()
        if group.vpc_id not in default_vpcs and group.name != "default"
    ]
    iam: Any = moto_state.iam(account_id)
    result: dict[str, list[str]] = {
        "vpcs": sorted(v.id for v in custom_vpcs),
        "subnets": sorted(s.id for s in subnets),
        "internet_gateways": sorted(gateways),
        "nat_gateways": sorted(
            n.id for n in ec2.nat_gateways.values() if n.state not in ("deleted", "deleting")
        ),
        "route_tables": sorted(route_tables),
        "security_groups": sorted(security_groups),
        "elastic_ips": sorted(a.allocation_id for a in ec2.addresses),
        "ec2_instances": sorted(
            i.id for i in ec2.all_instances() if i.state not in ("terminated", "shutting-down")
        ),
        "iam_roles": sorted(r.name for r in iam.roles.values()),
        "iam_users": sorted(iam.users),
        "iam_policies": sorted(
            p.arn for p in iam.managed_policies.values() if ":aws:policy/" not in p.arn
        ),
        "iam_instance_profiles": sorted(p.name for p in iam.instance_profiles.values()),
        "oidc_providers": sorted(iam.open_id_providers),
        "s3_buckets": sorted(s3_backends[account_id]["aws"].buckets),
        "fsx": sorted(fsx_backends[account_id][region].file_systems),
        "cloudformation_stacks": sorted(
            s.name
            for s in cloudformation_backends[account_id][region].stacks.values()
            if s.status != "DELETE_COMPLETE"
        ),
        "ssm_parameters": sorted(ssm_backends[account_id][region]._parameters),
        "secrets": sorted(
            secret.name
            for secret in dict.values(secretsmanager_backends[account_id][region].secrets)
            if not secret.is_deleted()
        ),
    }
    return result
