"""Fixtures of the network and identity suite: one simulated AWS (fast profile) in an account of
its own, and the adapters pointed at it through unmodified boto3 over HTTP."""

from __future__ import annotations

import pytest

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.ec2 import Ec2Network
from cluster_svc.adapters.iam import IamIdentity
from sim.aws import SimulatedAws
from sim.testing import simulated_aws

ACCOUNT = "444455556666"
MY_KINDS = (
    "vpcs",
    "subnets",
    "internet_gateways",
    "nat_gateways",
    "route_tables",
    "security_groups",
    "elastic_ips",
    "iam_roles",
    "iam_policies",
    "oidc_providers",
)

sim = simulated_aws(profile="fast", account_id=ACCOUNT, set_env=False)


@pytest.fixture(scope="session")
def aws(sim: SimulatedAws) -> AwsClients:
    """Test credentials come from the environment (tests/conftest.py sets them)."""
    return AwsClients(sim.region, endpoint_url=sim.endpoint_url)


@pytest.fixture
def ec2(aws: AwsClients) -> Ec2Network:
    return Ec2Network(aws)


@pytest.fixture
def iam(aws: AwsClients) -> IamIdentity:
    return IamIdentity(aws, thumbprint_timeout=1.0)


def my_inventory(sim: SimulatedAws) -> dict[str, list[str]]:
    """The inventory of the kinds this area makes."""
    everything = sim.inventory()
    return {kind: everything[kind] for kind in MY_KINDS}
