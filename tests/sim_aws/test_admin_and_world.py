"""The admin API, the inventory, moto's share of the endpoint, World and `python -m sim`."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.profile import get_profile
from sim.testing import AdminClient, aws_client, call_log, inject_fault, inventory, wait_for
from sim.world import World

ROOT = Path(__file__).resolve().parents[2]


def test_admin_api_over_http(sim: SimulatedAws, clean_faults: None) -> None:
    admin = AdminClient(sim.endpoint_url)
    health = admin.health()
    assert health["status"] == "ok" and health["endpoint"] == sim.endpoint_url
    assert health["profile"] == sim.profile.name

    fault = admin.inject_fault(
        "throttle", service="sagemaker", operation="ListClusters", times=None
    )
    assert [f["id"] for f in admin.faults()] == [fault["id"]]
    assert [f.id for f in sim.faults.armed()] == [fault["id"]]
    with pytest.raises(ClientError):
        aws_client(sim, "sagemaker", config=_no_retries()).list_clusters()
    admin.clear_faults(fault["id"])
    aws_client(sim, "sagemaker").list_clusters()

    changed = admin.update_account(
        {
            "quotas": {"sagemaker": {"ml.p5.48xlarge for cluster usage": 7}},
            "offerings": {"ml.p5.48xlarge": ["use1-az2"]},
            "training_plans": [
                {
                    "name": "http-plan",
                    "reserved_capacity": [
                        {
                            "instance_type": "ml.p5.48xlarge",
                            "count": 2,
                            "availability_zone_id": "use1-az2",
                        }
                    ],
                }
            ],
        }
    )
    assert changed["quotas"]["sagemaker"]["ml.p5.48xlarge for cluster usage"]["value"] == 7
    assert changed["offerings"]["ml.p5.48xlarge"] == ["use1-az2"]
    plan = aws_client(sim, "sagemaker").describe_training_plan(TrainingPlanName="http-plan")
    assert plan["TotalInstanceCount"] == 2
    admin.update_account({"offerings": {"ml.p5.48xlarge": None}})
    assert "ml.p5.48xlarge" not in admin.account()["offerings"]

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(sim.endpoint_url + "/_sim/nothing")
    assert err.value.code == 404
    request = urllib.request.Request(
        sim.endpoint_url + "/_sim/faults", data=b'{"kind": "meteor"}', method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request)
    assert err.value.code == 400 and "unknown fault kind" in json.loads(err.value.read())["error"]


def _no_retries() -> Any:
    from botocore.config import Config

    return Config(retries={"mode": "standard", "total_max_attempts": 1})


def test_call_log_records_mutations_once_and_skips_reads(sim: SimulatedAws) -> None:
    s3 = aws_client(sim, "s3")
    s3.create_bucket(Bucket="log-proof")
    s3.list_buckets()
    s3.head_bucket(Bucket="log-proof")
    s3.put_object(Bucket="log-proof", Key="k", Body=b"x")
    over_http = call_log(sim.endpoint_url, service="s3")
    in_process = call_log(sim, service="s3")
    assert over_http == in_process
    mine = [
        (c["operation"], c["params"].get("Bucket"))
        for c in in_process
        if c["params"].get("Bucket") == "log-proof"
    ]
    assert mine == [("CreateBucket", "log-proof"), ("PutObject", "log-proof")]
    assert all(c["simulated"] is False for c in in_process)
    assert not [
        c for c in sim.call_log() if c["operation"].startswith(("List", "Describe", "Get", "Head"))
    ]
    s3.delete_object(Bucket="log-proof", Key="k")
    s3.delete_bucket(Bucket="log-proof")


def test_moto_serves_what_it_covers(sim: SimulatedAws) -> None:
    sts = aws_client(sim, "sts")
    assert sts.get_caller_identity()["Account"] == "111111111111"
    ec2 = aws_client(sim, "ec2")
    zones = {z["ZoneId"] for z in ec2.describe_availability_zones()["AvailabilityZones"]}
    assert {"use1-az1", "use1-az2"} <= zones
    ssm = aws_client(sim, "ssm")
    ssm.put_parameter(Name="/sim/p", Value="v", Type="String")
    assert ssm.get_parameter(Name="/sim/p")["Parameter"]["Value"] == "v"
    ssm.delete_parameter(Name="/sim/p")


def test_delete_leaves_nothing_behind() -> None:
    """A fresh account lists nothing; what is created shows in the inventory; deleting it all
    brings the inventory back to empty."""
    with SimulatedAws(get_profile("fast*0.2"), account_id="555555555555") as sim:
        assert all(v == [] for v in inventory(sim).values()), inventory(sim)
        ec2, iam, eks, sm, s3 = (
            aws_client(sim, s) for s in ("ec2", "iam", "eks", "sagemaker", "s3")
        )
        vpc = ec2.create_vpc(CidrBlock="10.5.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=c, AvailabilityZoneId=z)["Subnet"]["SubnetId"]
            for c, z in (("10.5.0.0/20", "use1-az1"), ("10.5.16.0/20", "use1-az2"))
        ]
        gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
        nat = ec2.create_nat_gateway(SubnetId=subnets[0], AllocationId=allocation)["NatGateway"][
            "NatGatewayId"
        ]
        table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]
        s3.create_bucket(Bucket="inventory-bucket")
        secrets = aws_client(sim, "secretsmanager")
        secrets.create_secret(Name="hf-token", SecretString="x")
        eks.create_cluster(
            name="inv",
            roleArn=role["Arn"],
            resourcesVpcConfig={"subnetIds": subnets},
            accessConfig={"authenticationMode": "API"},
        )
        cluster = wait_for(
            lambda: (c := eks.describe_cluster(name="inv")["cluster"])["status"] == "ACTIVE" and c
        )
        iam.create_open_id_connect_provider(
            Url=cluster["identity"]["oidc"]["issuer"], ClientIDList=["sts.amazonaws.com"]
        )
        eks.create_addon(clusterName="inv", addonName="coredns")
        sm.create_cluster(
            ClusterName="inv-hp",
            InstanceGroups=[
                {
                    "InstanceGroupName": "w",
                    "InstanceType": "ml.g5.xlarge",
                    "InstanceCount": 1,
                    "ExecutionRole": role["Arn"],
                    "LifeCycleConfig": {
                        "SourceS3Uri": "s3://inventory-bucket/l",
                        "OnCreate": "a.sh",
                    },
                }
            ],
            VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
            Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        )
        seen = inventory(sim.endpoint_url)
        assert seen["vpcs"] == [vpc] and sorted(seen["subnets"]) == sorted(subnets)
        assert seen["internet_gateways"] == [gateway] and seen["nat_gateways"] == [nat]
        assert seen["route_tables"] == [table] and seen["security_groups"] == [group]
        assert seen["elastic_ips"] == [allocation] and seen["iam_roles"] == ["r"]
        assert seen["s3_buckets"] == ["inventory-bucket"] and len(seen["oidc_providers"]) == 1
        assert seen["eks_clusters"] == ["inv"] and seen["eks_addons"] == ["inv/coredns"]
        assert seen["eks_access_entries"] == [
            "inv/arn:aws:iam::555555555555:role/r",
            "inv/arn:aws:iam::555555555555:user/moto",
        ]
        assert seen["hyperpod_clusters"] == ["inv-hp"]
        assert seen["secrets"] == ["hf-token"]

        sm.delete_cluster(ClusterName="inv-hp")
        eks.delete_cluster(name="inv")
        wait_for(
            lambda: not inventory(sim)["eks_clusters"] and not inventory(sim)["hyperpod_clusters"]
        )
        iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=seen["oidc_providers"][0])
        s3.delete_bucket(Bucket="inventory-bucket")
        secrets.delete_secret(SecretId="hf-token")
        iam.delete_role(RoleName="r")
        ec2.delete_nat_gateway(NatGatewayId=nat)
        ec2.release_address(AllocationId=allocation)
        ec2.delete_route_table(RouteTableId=table)
        ec2.delete_security_group(GroupId=group)
        ec2.detach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        ec2.delete_internet_gateway(InternetGatewayId=gateway)
        for subnet in subnets:
            ec2.delete_subnet(SubnetId=subnet)
        ec2.delete_vpc(VpcId=vpc)
        left = {kind: items for kind, items in inventory(sim).items() if items}
        assert left == {}


def test_world_composes_the_simulated_aws() -> None:
    with World("fast*0.2") as world:
        assert re.match(r"^http://127\.0\.0\.1:\d+$", world.aws_endpoint_url)
        assert AdminClient(world.aws_endpoint_url).health()["status"] == "ok"
        with inject_fault(world.aws, "throttle", service="eks"):
            assert len(world.aws.faults.armed()) == 1
        assert world.aws.faults.armed() == []


def test_python_m_sim_prints_its_endpoint_and_stops_cleanly() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sim", "--profile", "fast", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        # Not a pipe nobody reads: a full pipe would block the process on its way out.
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.match(r"^AWS endpoint: (http://127\.0\.0\.1:\d+)$", line.strip())
        assert match, line
        endpoint = match.group(1)
        assert AdminClient(endpoint).health()["profile"] == "fast"
        eks = aws_client(endpoint, "eks")
        assert eks.list_clusters()["clusters"] == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_world_with_kubernetes_serves_hyperpod_nodes_to_the_kubernetes_client(
    tmp_path: Path,
) -> None:
    """The seam end to end: EKS ACTIVE starts an API server; HyperPod nodes become Nodes."""
    from kubernetes import client

    from sim.k8s.auth import make_token

    with World("fast*0.3", kubernetes=True) as world:
        sim = world.aws
        ec2, iam, eks, sm = (aws_client(sim, s) for s in ("ec2", "iam", "eks", "sagemaker"))
        vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=c, AvailabilityZoneId=z)["Subnet"]["SubnetId"]
            for c, z in (("10.7.0.0/20", "use1-az1"), ("10.7.16.0/20", "use1-az2"))
        ]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        role = iam.create_role(RoleName="world-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        eks.create_cluster(
            name="world",
            roleArn=role,
            resourcesVpcConfig={"subnetIds": subnets},
            accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"},
        )
        cluster = wait_for(
            lambda: (c := eks.describe_cluster(name="world")["cluster"])["status"] == "ACTIVE" and c
        )
        sm.create_cluster(
            ClusterName="world-hp",
            InstanceGroups=[
                {
                    "InstanceGroupName": "gpu",
                    "InstanceType": "ml.p5.48xlarge",
                    "InstanceCount": 2,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "a.sh"},
                }
            ],
            VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
            Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        )
        ca = tmp_path / "ca.pem"
        ca.write_bytes(base64.b64decode(cluster["certificateAuthority"]["data"]))
        config = client.Configuration()
        config.host = cluster["endpoint"]
        config.ssl_ca_cert = str(ca)
        config.api_key = {"authorization": "Bearer " + make_token("world")}
        core = client.CoreV1Api(client.ApiClient(config))
        wait_for(
            lambda: sm.describe_cluster(ClusterName="world-hp")["ClusterStatus"] == "InService"
        )
        instance_ids = {
            n["InstanceId"]
            for n in sm.list_cluster_nodes(ClusterName="world-hp")["ClusterNodeSummaries"]
        }

        def hyperpod_nodes() -> set[str]:
            return {
                n.metadata.name.removeprefix("hyperpod-")
                for n in core.list_node().items
                if n.metadata.labels.get("sagemaker.amazonaws.com/cluster-name") == "world-hp"
            }

        wait_for(lambda: hyperpod_nodes() == instance_ids)
        sm.delete_cluster(ClusterName="world-hp")
        wait_for(lambda: hyperpod_nodes() == set())
