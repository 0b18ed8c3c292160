"""The emulator's facts about an EKS cluster come from EKS's and EC2's own answers."""

from __future__ import annotations

from sim.k8s.facts import ClusterFacts, private_dns_name

SUBNETS = {
    "subnet-a": {
        "SubnetId": "subnet-a",
        "AvailabilityZone": "eu-west-1a",
        "CidrBlock": "10.0.0.0/24",
    },
    "subnet-b": {
        "SubnetId": "subnet-b",
        "AvailabilityZone": "eu-west-1b",
        "CidrBlock": "10.0.1.0/24",
    },
}


def test_a_node_group_knows_the_zones_and_ranges_of_its_subnets_in_its_order() -> None:
    facts = ClusterFacts.from_description(
        {"version": "1.32", "kubernetesNetworkConfig": {"serviceIpv4Cidr": "10.100.0.0/16"}},
        [{"nodegroupName": "system", "status": "ACTIVE", "subnets": ["subnet-b", "subnet-a"]}],
        SUBNETS,
    )
    assert facts.kubernetes_version == "1.32.0"
    assert facts.service_cidr == "10.100.0.0/16"
    (group,) = facts.node_groups
    assert group.subnets == (("eu-west-1b", "10.0.1.0/24"), ("eu-west-1a", "10.0.0.0/24"))


def test_a_subnet_ec2_does_not_know_is_left_out() -> None:
    facts = ClusterFacts.from_description(
        {"version": "1.33"},
        [{"nodegroupName": "g", "subnets": ["subnet-a", "subnet-gone"]}],
        SUBNETS,
    )
    assert facts.node_groups[0].subnets == (("eu-west-1a", "10.0.0.0/24"),)


def test_private_dns_names_follow_the_region() -> None:
    assert private_dns_name("10.0.1.5", "us-east-1") == "ip-10-0-1-5.ec2.internal"
    assert private_dns_name("10.0.1.5", "eu-west-1") == "ip-10-0-1-5.eu-west-1.compute.internal"
