"""Adopting an EKS cluster made outside Hyperpilot (directly with boto3 against the simulated
AWS, with its own node group and a pre-installed add-on): inspected read-only, planned, adopted;
its dependencies reconcile; a HyperPod cluster and a second instance group are added; deleting
it from Hyperpilot leaves the EKS cluster, its node group, its add-on and its VPC in place (the
simulator's inventory before and after)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from hyperpilot.cli import app as cli_app
from sim.aws import SimulatedAws
from sim.testing import aws_client
from tests.e2e.conftest import TOKEN, RunningStack, cluster_spec, unique

# A cluster built and exercised end to end, several minutes: in `make reliability`.
pytestmark = pytest.mark.slow

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": ["eks.amazonaws.com", "ec2.amazonaws.com"]},
            "Action": "sts:AssumeRole",
        }
    ],
}


def _until(probe: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def outside_cluster(sim_aws: SimulatedAws, name: str) -> dict[str, Any]:
    """An EKS cluster as a team would have made it: a VPC with a public subnet (NAT gateway)
    and a private one routed through it, a node group, the vpc-cni add-on."""
    eks = aws_client(sim_aws, "eks")
    iam = aws_client(sim_aws, "iam")
    ec2 = aws_client(sim_aws, "ec2")
    role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument=json.dumps(TRUST))
    vpc = ec2.create_vpc(CidrBlock="10.70.0.0/16")["Vpc"]["VpcId"]
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    public, private = (
        ec2.create_subnet(
            VpcId=vpc, CidrBlock=f"10.70.{250 + i}.0/24", AvailabilityZone=zones[i]["ZoneName"]
        )["Subnet"]["SubnetId"]
        for i in range(2)
    )
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    public_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    ec2.associate_route_table(RouteTableId=public_table, SubnetId=public)
    address = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=address)["NatGateway"]
    private_table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(
        RouteTableId=private_table,
        DestinationCidrBlock="0.0.0.0/0",
        NatGatewayId=nat["NatGatewayId"],
    )
    ec2.associate_route_table(RouteTableId=private_table, SubnetId=private)
    eks.create_cluster(
        name=name,
        version="1.32",
        roleArn=role["Role"]["Arn"],
        resourcesVpcConfig={"subnetIds": [public, private]},
    )
    _until(lambda: eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE")
    eks.create_nodegroup(
        clusterName=name,
        nodegroupName="system",
        nodeRole=role["Role"]["Arn"],
        subnets=[private],
        scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 1},
        instanceTypes=["m5.large"],
    )
    eks.create_addon(clusterName=name, addonName="vpc-cni", addonVersion="v1.20.0-eksbuild.1")
    _until(
        lambda: (
            eks.describe_nodegroup(clusterName=name, nodegroupName="system")["nodegroup"]["status"]
            == "ACTIVE"
            and eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"]
            == "ACTIVE"
        )
    )
    return {"vpc": vpc, "private_table": private_table}


def test_adopt_an_outside_cluster_add_hyperpod_and_delete_only_what_was_added(
    running_stack: RunningStack, sim_aws: SimulatedAws
) -> None:
    api = running_stack.client
    eks = aws_client(sim_aws, "eks")
    name = unique("team")
    made = outside_cluster(sim_aws, name)
    before = sim_aws.inventory()
    spec = cluster_spec(api, name, count=1)
    body = {
        "eks_cluster_name": name,
        "availability_zone_id": spec["availability_zone_id"],
        "instance_groups": spec["instance_groups"],
    }

    # Imported only, its dependencies are its owner's: the refusal names the way to adopt it.
    imported = api.post("/api/v1/clusters/import", {"eks_cluster_name": name})
    assert api.wait(imported.json()["operation_id"])["status"] == "succeeded"
    refused = api.post(f"/api/v1/clusters/{name}/dependencies/reconcile")
    assert refused.status_code == 422 and "/api/v1/clusters/adopt" in refused.text
    forgotten = api.delete(f"/api/v1/clusters/{name}")
    assert api.wait(forgotten.json()["operation_id"])["status"] in ("succeeded", "noop")
    assert sim_aws.inventory() == before

    # Read-only first: what it has and what HyperPod still needs.
    inspected = api.get("/api/v1/inspect/adoption", params={"eks_cluster_name": name})
    assert inspected.status_code == 200, inspected.text
    found = inspected.json()
    assert found["adoptable"] is True, found["blockers"]
    assert found["cluster"]["version"] == "1.32"
    assert found["cluster"]["vpc_id"] == made["vpc"]
    assert found["cluster"]["authentication_mode"] == "CONFIG_MAP"
    assert [n["name"] for n in found["nodegroups"]] == ["system"]
    assert [a["name"] for a in found["addons"]] == ["vpc-cni"]
    assert found["private_route_table_id"] == made["private_table"]
    missing = {m["stage"] for m in found["missing"]}
    assert {"authentication_mode", "access_entries", "hyperpod_cluster"} <= missing

    planned = api.post("/api/v1/clusters/adopt", body, params={"dry_run": "true"})
    assert planned.status_code == 200, planned.text
    plan = planned.json()["plan"]
    assert plan["command"] == "AdoptCluster"
    assert plan["diff"]["authentication_mode"]["requested"] == "API_AND_CONFIG_MAP"
    assert any("kept on delete" in n for n in plan["notes"])
    assert any("system (1 x m5.large" in n for n in plan["notes"])
    # The CLI shows the same inspection, and its dry run the same plan.
    env = {"HYPERPILOT_URL": running_stack.stack.url, "HYPERPILOT_TOKEN": TOKEN, "COLUMNS": "200"}
    runner = CliRunner()
    shown = runner.invoke(cli_app, ["clusters", "inspect-adoption", name], env=env)
    assert shown.exit_code == 0, shown.output
    assert (
        "authentication mode CONFIG_MAP" in shown.stdout and "system (1 x m5.large)" in shown.stdout
    )
    group = spec["instance_groups"][0]
    cli_plan = runner.invoke(
        cli_app,
        [
            "clusters",
            "adopt",
            name,
            "--zone",
            spec["availability_zone_id"],
            "-g",
            f"name={group['name']},type={group['instance_type']},count=1",
            "--dry-run",
            "-o",
            "json",
        ],
        env=env,
    )
    assert cli_plan.exit_code == 0, cli_plan.output
    assert json.loads(cli_plan.stdout)["plan"]["command"] == "AdoptCluster"
    assert sim_aws.inventory() == before  # the dry runs changed nothing
    assert api.get(f"/api/v1/clusters/{name}").status_code == 404

    # A name that is not an EKS cluster is refused on its field.
    refused = api.post("/api/v1/clusters/adopt", {**body, "eks_cluster_name": unique("none")})
    assert refused.status_code == 422, refused.text
    assert "eks_cluster_name" in refused.text

    accepted = api.post("/api/v1/clusters/adopt", body)
    assert accepted.status_code == 202, accepted.text
    op = api.wait(accepted.json()["operation_id"], timeout=240)
    assert op["status"] == "succeeded", op.get("error")
    stages = {s["name"] for s in op["stages"]}
    assert {"preflight", "authentication_mode", "access_entries", "dependencies"} <= stages
    assert "network" in stages and "eks_role" not in stages  # the VPC and role are the owner's

    adopted = api.get(f"/api/v1/clusters/{name}").json()
    assert adopted["status"] == "active" and adopted["hyperpod_cluster_arn"]
    assert adopted["resources"]["eks_cluster"]["created"] is False
    assert adopted["resources"]["network"]["created"] == {}
    kept = adopted["resources"]["adoption"]["kept"]
    assert kept["nodegroups"] == ["system"] and kept["addons"] == ["vpc-cni"]
    added = adopted["resources"]["adoption"]["added"]
    assert "hyperpod_cluster" in added and "compute_subnet" in added
    assert "eks_cluster" not in added and "network" not in added
    auth = eks.describe_cluster(name=name)["cluster"]["accessConfig"]["authenticationMode"]
    assert auth == "API_AND_CONFIG_MAP"

    # Day 2 works on it like on a created cluster: dependencies, a second group.
    reconciled = api.post(f"/api/v1/clusters/{name}/dependencies/reconcile")
    assert reconciled.status_code == 202, reconciled.text
    assert api.wait(reconciled.json()["operation_id"], timeout=120)["status"] in (
        "succeeded",
        "noop",
    )
    group = {**spec["instance_groups"][0], "name": "extra"}
    grown = api.post(f"/api/v1/clusters/{name}/instance-groups", group)
    assert grown.status_code == 202, grown.text
    assert api.wait(grown.json()["operation_id"], timeout=240)["status"] == "succeeded"
    groups = {g["name"] for g in api.get(f"/api/v1/clusters/{name}/instance-groups").json()}
    assert groups == {spec["instance_groups"][0]["name"], "extra"}

    # Delete: its plan says what stays; the run removes only what the adoption added.
    delete_plan = api.delete(f"/api/v1/clusters/{name}", params={"dry_run": "true"}).json()
    notes = " ".join(delete_plan["plan"]["notes"])
    assert f"EKS cluster {name}" in notes and "system" in notes and "vpc-cni" in notes
    assert not any(
        c["operation"] == "DeleteCluster" and c["service"] == "eks"
        for c in delete_plan["plan"]["calls"]
    )
    deleted = api.delete(f"/api/v1/clusters/{name}")
    assert deleted.status_code == 202, deleted.text
    op = api.wait(deleted.json()["operation_id"], timeout=240)
    assert op["status"] == "succeeded", op.get("error")
    assert api.get(f"/api/v1/clusters/{name}").status_code == 404
    deadline = time.monotonic() + 30
    while sim_aws.inventory() != before and time.monotonic() < deadline:
        time.sleep(0.5)  # network interfaces of a deleted HyperPod cluster are released late
    assert sim_aws.inventory() == before
    assert eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE"
    assert eks.list_nodegroups(clusterName=name)["nodegroups"] == ["system"]
    assert eks.list_addons(clusterName=name)["addons"] == ["vpc-cni"]
