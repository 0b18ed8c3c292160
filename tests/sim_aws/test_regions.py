"""One simulated endpoint, several regions: each region's EKS and HyperPod state is its own (as
moto keeps a backend per account and region), and two EKS clusters of one name in two regions
are two clusters with two Kubernetes API servers."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sim.testing import aws_env, wait_for
from sim.world import World

REGIONS = {"us-east-1": "use1", "us-west-2": "usw2"}


def client(world: World, service: str, region: str) -> Any:
    env = aws_env(world.aws)
    return boto3.client(
        service,
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=region,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(parameter_validation=False),
    )


def eks_in(world: World, region: str, name: str) -> dict[str, Any]:
    ec2, iam, eks = (client(world, s, region) for s in ("ec2", "iam", "eks"))
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    zone = REGIONS[region]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=c, AvailabilityZoneId=f"{zone}-{z}")["Subnet"][
            "SubnetId"
        ]
        for c, z in (("10.9.0.0/20", "az1"), ("10.9.16.0/20", "az2"))
    ]
    role = iam.get_role(RoleName="twin-role")["Role"]["Arn"]
    eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
    described: dict[str, Any] = wait_for(
        lambda: (c := eks.describe_cluster(name=name)["cluster"])["status"] == "ACTIVE" and c
    )
    return described


def test_one_name_in_two_regions_is_two_clusters(tmp_path: Path) -> None:
    from kubernetes import client as kube

    from sim.k8s.auth import make_token

    with World("fast*0.3", kubernetes=True, regions=("us-west-2",)) as world:
        client(world, "iam", "us-east-1").create_role(
            RoleName="twin-role", AssumeRolePolicyDocument="{}"
        )
        east = eks_in(world, "us-east-1", "twin")
        west = eks_in(world, "us-west-2", "twin")
        assert east["arn"].startswith("arn:aws:eks:us-east-1:")
        assert west["arn"].startswith("arn:aws:eks:us-west-2:")
        assert ".us-west-2." in west["identity"]["oidc"]["issuer"]
        assert east["endpoint"] != west["endpoint"]
        # each region lists its own cluster
        for region in REGIONS:
            assert client(world, "eks", region).list_clusters()["clusters"] == ["twin"]
        assert world.aws.in_region("us-west-2").inventory()["eks_clusters"] == ["twin"]

        def core(cluster: dict[str, Any], region: str) -> Any:
            ca = tmp_path / f"{region}.pem"
            ca.write_bytes(base64.b64decode(cluster["certificateAuthority"]["data"]))
            config = kube.Configuration()
            config.host = cluster["endpoint"]
            config.ssl_ca_cert = str(ca)
            config.api_key = {"authorization": "Bearer " + make_token("twin", region)}
            return kube.CoreV1Api(kube.ApiClient(config))

        east_api, west_api = core(east, "us-east-1"), core(west, "us-west-2")
        east_api.create_namespace({"metadata": {"name": "only-in-east"}})
        east_names = {n.metadata.name for n in east_api.list_namespace().items}
        west_names = {n.metadata.name for n in west_api.list_namespace().items}
        assert "only-in-east" in east_names and "only-in-east" not in west_names

        # deleting one region's cluster leaves the other's
        client(world, "eks", "us-west-2").delete_cluster(name="twin")
        wait_for(lambda: client(world, "eks", "us-west-2").list_clusters()["clusters"] == [])
        assert (
            client(world, "eks", "us-east-1").describe_cluster(name="twin")["cluster"]["status"]
            == "ACTIVE"
        )
        assert "only-in-east" in {n.metadata.name for n in east_api.list_namespace().items}


def test_the_admin_api_reaches_the_region_it_names() -> None:
    """A fault armed with `?region=` is armed in that region's simulation only, and each
    region's call log holds its own calls."""
    import httpx

    with World("fast*0.3", kubernetes=False, regions=("us-west-2",)) as world:
        admin = aws_env(world.aws)["AWS_ENDPOINT_URL"] + "/_sim"
        armed = httpx.post(
            f"{admin}/faults",
            params={"region": "us-west-2"},
            json={"kind": "error", "service": "sqs", "operation": "CreateQueue", "times": 1},
        )
        assert armed.status_code == 201, armed.text
        west = httpx.get(f"{admin}/faults", params={"region": "us-west-2"}).json()["faults"]
        assert [f["id"] for f in west] == [armed.json()["id"]]
        assert httpx.get(f"{admin}/faults").json()["faults"] == []
        client(world, "sqs", "us-east-1").create_queue(QueueName="east-q")
        with pytest.raises(ClientError):  # the fault armed in us-west-2 fails its call there
            client(world, "sqs", "us-west-2").create_queue(QueueName="west-q")
        east_calls = httpx.get(f"{admin}/calls", params={"service": "sqs"}).json()["calls"]
        west_calls = httpx.get(
            f"{admin}/calls", params={"service": "sqs", "region": "us-west-2"}
        ).json()["calls"]
        assert [c["params"].get("QueueName") for c in east_calls] == ["east-q"]
        assert [c["params"].get("QueueName") for c in west_calls] == ["west-q"]
