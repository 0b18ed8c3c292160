"""Where moto serves the call but the simulation corrects the world it describes."""

from __future__ import annotations

import time

from sim.aws import SimulatedAws
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network


def test_nat_gateway_is_pending_then_available(sim: SimulatedAws, network: Network) -> None:
    ec2 = aws_client(sim, "ec2")
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    started = time.monotonic()
    gateway = ec2.create_nat_gateway(SubnetId=network.subnets["use1-az1"], AllocationId=allocation)[
        "NatGateway"
    ]
    assert gateway["State"] == "pending"
    assert gateway["NatGatewayAddresses"][0]["AllocationId"] == allocation
    ec2.get_waiter("nat_gateway_available").wait(
        NatGatewayIds=[gateway["NatGatewayId"]], WaiterConfig={"Delay": 0.1, "MaxAttempts": 100}
    )
    assert time.monotonic() - started >= sim.profile.nat_gateway_create
    ec2.delete_nat_gateway(NatGatewayId=gateway["NatGatewayId"])
    ec2.release_address(AllocationId=allocation)


def test_fsx_lustre_has_lifecycle_and_mount_name(sim: SimulatedAws, network: Network) -> None:
    fsx = aws_client(sim, "fsx")
    created = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=[network.subnets["use1-az1"]],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
    )["FileSystem"]
    assert created["Lifecycle"] == "CREATING"
    assert created["VpcId"] == network.vpc_id and created["OwnerId"] == "111111111111"
    mount_name = created["LustreConfiguration"]["MountName"]
    assert len(mount_name) == 8
    file_system_id = created["FileSystemId"]

    def described() -> dict[str, object]:
        systems = fsx.describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"]
        return dict(systems[0])

    wait_for(lambda: described()["Lifecycle"] == "AVAILABLE")
    assert described()["LustreConfiguration"] == {
        **created["LustreConfiguration"],
        "MountName": mount_name,
    }
    fsx.delete_file_system(FileSystemId=file_system_id)
    assert file_system_id not in sim.inventory()["fsx"]
