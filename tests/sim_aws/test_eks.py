"""EKS as the simulation serves it to unmodified boto3."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sim.aws import SimulatedAws
from sim.interfaces import ClusterEndpoint, SimNode
from sim.profile import get_profile
from sim.testing import aws_client, wait_for
from tests.sim_aws.conftest import Network, create_eks, unique


def test_fast_profile_cluster_is_creating_then_active_after_the_configured_delay() -> None:
    profile = get_profile("fast")
    with SimulatedAws(profile, account_id="222222222222") as sim:
        ec2, iam, eks = aws_client(sim, "ec2"), aws_client(sim, "iam"), aws_client(sim, "eks")
        vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone)["Subnet"][
                "SubnetId"
            ]
            for cidr, zone in (("10.1.0.0/20", "use1-az1"), ("10.1.16.0/20", "use1-az2"))
        ]
        role = iam.create_role(RoleName="eks", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        started = time.monotonic()
        created = eks.create_cluster(
            name="timed", roleArn=role, resourcesVpcConfig={"subnetIds": subnets}
        )
        assert created["cluster"]["status"] == "CREATING"
        assert "endpoint" not in created["cluster"]
        time.sleep(profile.eks_create * 0.5)
        assert eks.describe_cluster(name="timed")["cluster"]["status"] == "CREATING"
        wait_for(
            lambda: eks.describe_cluster(name="timed")["cluster"]["status"] == "ACTIVE", timeout=10
        )
        elapsed = time.monotonic() - started
        assert profile.eks_create <= elapsed < profile.eks_create + 1.0
        cluster = eks.describe_cluster(name="timed")["cluster"]
        assert cluster["endpoint"].startswith("https://")
        pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
        assert pem.startswith("-----BEGIN CERTIFICATE-----")
        assert cluster["identity"]["oidc"]["issuer"].startswith(
            "https://oidc.eks.us-east-1.amazonaws.com/id/"
        )

        eks.delete_cluster(name="timed")
        assert eks.describe_cluster(name="timed")["cluster"]["status"] == "DELETING"
        time.sleep(profile.eks_delete + 0.2)
        with pytest.raises(ClientError) as err:
            eks.describe_cluster(name="timed")
        assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_create_checks_role_and_subnets_like_eks(sim: SimulatedAws, network: Network) -> None:
    eks = aws_client(sim, "eks")
    one_zone = {"subnetIds": [network.subnets["use1-az1"]]}
    with pytest.raises(ClientError) as err:
        eks.create_cluster(name=unique("e"), roleArn=network.role_arn, resourcesVpcConfig=one_zone)
    assert err.value.response["Error"]["Code"] == "InvalidParameterException"
    assert "two different AZs" in err.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name=unique("e"),
            roleArn="arn:aws:iam::111111111111:role/missing",
            resourcesVpcConfig={"subnetIds": list(network.subnets.values())},
        )
    assert err.value.response["Error"]["Code"] == "InvalidParameterException"
    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name=unique("e"),
            roleArn=network.role_arn,
            resourcesVpcConfig={"subnetIds": ["subnet-0nope", network.subnets["use1-az1"]]},
        )
    assert "subnet-0nope" in err.value.response["Error"]["Message"]


def test_duplicate_cluster_is_resource_in_use(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks")
    with pytest.raises(ClientError) as err:
        eks.create_cluster(
            name=eks_cluster["name"],
            roleArn=network.role_arn,
            resourcesVpcConfig={"subnetIds": list(network.subnets.values())},
        )
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert eks_cluster["name"] in eks.list_clusters()["clusters"]


def test_addons_install_over_time_and_update_and_delete(
    sim: SimulatedAws, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks")
    name = eks_cluster["name"]
    versions = eks.describe_addon_versions(
        addonName="vpc-cni", kubernetesVersion=eks_cluster["version"]
    )
    available = [v["addonVersion"] for v in versions["addons"][0]["addonVersions"]]
    assert len(available) >= 2
    created = eks.create_addon(clusterName=name, addonName="vpc-cni", addonVersion=available[1])[
        "addon"
    ]
    assert created["status"] == "CREATING"
    wait_for(
        lambda: (
            eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"] == "ACTIVE"
        )
    )
    assert "vpc-cni" in eks.list_addons(clusterName=name)["addons"]
    with pytest.raises(ClientError) as err:
        eks.create_addon(clusterName=name, addonName="vpc-cni")
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"

    update = eks.update_addon(clusterName=name, addonName="vpc-cni", addonVersion=available[0])[
        "update"
    ]
    assert update["status"] == "InProgress"
    assert (
        eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["status"] == "UPDATING"
    )
    wait_for(
        lambda: (
            eks.describe_update(name=name, updateId=update["id"])["update"]["status"]
            == "Successful"
        )
    )
    assert (
        eks.describe_addon(clusterName=name, addonName="vpc-cni")["addon"]["addonVersion"]
        == available[0]
    )

    eks.delete_addon(clusterName=name, addonName="vpc-cni")
    wait_for(lambda: "vpc-cni" not in eks.list_addons(clusterName=name)["addons"])
    with pytest.raises(ClientError) as err:
        eks.describe_addon(clusterName=name, addonName="vpc-cni")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as err:
        eks.create_addon(clusterName=name, addonName="not-an-addon")
    assert err.value.response["Error"]["Code"] == "InvalidParameterException"


def test_access_entries_and_policies(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks")
    name = eks_cluster["name"]
    creator = eks.list_access_entries(clusterName=name)["accessEntries"]
    assert creator == ["arn:aws:iam::111111111111:user/moto"]
    entry = eks.create_access_entry(
        clusterName=name, principalArn=network.role_arn, kubernetesGroups=["ops"]
    )
    assert entry["accessEntry"]["principalArn"] == network.role_arn
    policies = {p["name"]: p["arn"] for p in eks.list_access_policies()["accessPolicies"]}
    admin = policies["AmazonEKSClusterAdminPolicy"]
    eks.associate_access_policy(
        clusterName=name,
        principalArn=network.role_arn,
        policyArn=admin,
        accessScope={"type": "cluster"},
    )
    eks.associate_access_policy(
        clusterName=name,
        principalArn=network.role_arn,
        policyArn=policies["AmazonEKSViewPolicy"],
        accessScope={"type": "namespace", "namespaces": ["ml"]},
    )
    associated = eks.list_associated_access_policies(
        clusterName=name, principalArn=network.role_arn
    )["associatedAccessPolicies"]
    assert {p["policyArn"] for p in associated} == {admin, policies["AmazonEKSViewPolicy"]}
    eks.update_access_entry(
        clusterName=name, principalArn=network.role_arn, kubernetesGroups=["ops", "dev"]
    )
    assert eks.describe_access_entry(clusterName=name, principalArn=network.role_arn)[
        "accessEntry"
    ]["kubernetesGroups"] == ["ops", "dev"]
    eks.disassociate_access_policy(clusterName=name, principalArn=network.role_arn, policyArn=admin)
    with pytest.raises(ClientError) as err:
        eks.create_access_entry(clusterName=name, principalArn=network.role_arn)
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    eks.delete_access_entry(clusterName=name, principalArn=network.role_arn)
    with pytest.raises(ClientError) as err:
        eks.describe_access_entry(clusterName=name, principalArn=network.role_arn)
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_access_entries_need_an_api_authentication_mode(
    sim: SimulatedAws, network: Network
) -> None:
    eks = aws_client(sim, "eks")
    cluster = create_eks(sim, network, unique("cfgmap"))
    assert cluster["accessConfig"]["authenticationMode"] == "CONFIG_MAP"
    with pytest.raises(ClientError) as err:
        eks.create_access_entry(clusterName=cluster["name"], principalArn=network.role_arn)
    assert err.value.response["Error"]["Code"] == "InvalidRequestException"
    update = eks.update_cluster_config(
        name=cluster["name"], accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}
    )["update"]
    wait_for(
        lambda: (
            eks.describe_update(name=cluster["name"], updateId=update["id"])["update"]["status"]
            == "Successful"
        )
    )
    eks.create_access_entry(clusterName=cluster["name"], principalArn=network.role_arn)
    eks.delete_cluster(name=cluster["name"])


def test_pod_identity_associations(
    sim: SimulatedAws, network: Network, eks_cluster: dict[str, Any]
) -> None:
    eks = aws_client(sim, "eks")
    name = eks_cluster["name"]
    association = eks.create_pod_identity_association(
        clusterName=name, namespace="ml", serviceAccount="trainer", roleArn=network.role_arn
    )["association"]
    assert association["associationId"].startswith("a-")
    with pytest.raises(ClientError) as err:
        eks.create_pod_identity_association(
            clusterName=name, namespace="ml", serviceAccount="trainer", roleArn=network.role_arn
        )
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    listed = eks.list_pod_identity_associations(clusterName=name, namespace="ml")["associations"]
    assert [a["associationId"] for a in listed] == [association["associationId"]]
    eks.update_pod_identity_association(
        clusterName=name, associationId=association["associationId"], disableSessionTags=True
    )
    described = eks.describe_pod_identity_association(
        clusterName=name, associationId=association["associationId"]
    )
    assert described["association"]["disableSessionTags"] is True
    eks.delete_pod_identity_association(
        clusterName=name, associationId=association["associationId"]
    )
    assert eks.list_pod_identity_associations(clusterName=name)["associations"] == []


def test_nodegroups_and_tags(sim: SimulatedAws, network: Network) -> None:
    eks = aws_client(sim, "eks")
    cluster = create_eks(sim, network, unique("ng"))
    name = cluster["name"]
    eks.create_nodegroup(
        clusterName=name,
        nodegroupName="sys",
        subnets=[network.subnets["use1-az1"]],
        nodeRole=network.role_arn,
        scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2},
    )
    wait_for(
        lambda: (
            eks.describe_nodegroup(clusterName=name, nodegroupName="sys")["nodegroup"]["status"]
            == "ACTIVE"
        )
    )
    eks.update_nodegroup_config(
        clusterName=name, nodegroupName="sys", scalingConfig={"desiredSize": 3}
    )
    wait_for(
        lambda: (
            eks.describe_nodegroup(clusterName=name, nodegroupName="sys")["nodegroup"][
                "scalingConfig"
            ]["desiredSize"]
            == 3
        )
    )
    with pytest.raises(ClientError) as err:
        eks.delete_cluster(name=name)
    assert err.value.response["Error"]["Code"] == "ResourceInUseException"
    eks.tag_resource(resourceArn=cluster["arn"], tags={"team": "ml"})
    assert eks.list_tags_for_resource(resourceArn=cluster["arn"])["tags"] == {"team": "ml"}
    eks.untag_resource(resourceArn=cluster["arn"], tagKeys=["team"])
    assert eks.list_tags_for_resource(resourceArn=cluster["arn"])["tags"] == {}
    eks.delete_nodegroup(clusterName=name, nodegroupName="sys")
    wait_for(lambda: eks.list_nodegroups(clusterName=name)["nodegroups"] == [])
    eks.delete_cluster(name=name)
    wait_for(lambda: name not in eks.list_clusters()["clusters"])


class RecordingKube:
    """A KubeHooks that records what the simulated AWS asked of it."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopped: list[str] = []
        self.synced: list[tuple[str, list[SimNode]]] = []
        self.installed: list[tuple[str, str]] = []

    def start_cluster(self, name: str) -> ClusterEndpoint:
        self.started.append(name)
        return ClusterEndpoint(
            endpoint="https://127.0.0.1:6443",
            ca_pem="-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n",
            oidc_issuer=f"https://127.0.0.1:6443/oidc/{name}",
        )

    def stop_cluster(self, name: str) -> None:
        self.stopped.append(name)

    def sync_nodes(self, cluster_name: str, nodes: list[SimNode]) -> None:
        self.synced.append((cluster_name, list(nodes)))

    def install(self, cluster_name: str, component: str) -> None:
        self.installed.append((cluster_name, component))


def test_kube_hooks_follow_the_cluster_and_its_hyperpod_nodes() -> None:
    kube = RecordingKube()
    with SimulatedAws(get_profile("fast*0.2"), kube=kube, account_id="333333333333") as sim:
        ec2, iam = aws_client(sim, "ec2"), aws_client(sim, "iam")
        eks, sm = aws_client(sim, "eks"), aws_client(sim, "sagemaker")
        vpc = ec2.create_vpc(CidrBlock="10.2.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone)["Subnet"][
                "SubnetId"
            ]
            for cidr, zone in (("10.2.0.0/20", "use1-az1"), ("10.2.16.0/20", "use1-az2"))
        ]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        eks.create_cluster(
            name="k",
            roleArn=role,
            resourcesVpcConfig={"subnetIds": subnets},
            accessConfig={"authenticationMode": "API"},
        )
        assert kube.started == []
        cluster = wait_for(
            lambda: (c := eks.describe_cluster(name="k")["cluster"])["status"] == "ACTIVE" and c
        )
        assert kube.started == ["k"]
        assert cluster["endpoint"] == "https://127.0.0.1:6443"
        assert (
            base64.b64decode(cluster["certificateAuthority"]["data"])
            .decode()
            .startswith("-----BEGIN CERTIFICATE-----\nfake")
        )
        assert cluster["identity"]["oidc"]["issuer"] == "https://127.0.0.1:6443/oidc/k"

        # An add-on becoming ACTIVE installs what it brings into the cluster.
        eks.create_addon(clusterName="k", addonName="aws-mountpoint-s3-csi-driver")
        wait_for(
            lambda: (
                eks.describe_addon(clusterName="k", addonName="aws-mountpoint-s3-csi-driver")[
                    "addon"
                ]["status"]
                == "ACTIVE"
            )
        )
        assert ("k", "aws-mountpoint-s3-csi-driver") in kube.installed

        sm.create_cluster(
            ClusterName="hp",
            InstanceGroups=[
                {
                    "InstanceGroupName": "gpu",
                    "InstanceType": "ml.p5.48xlarge",
                    "InstanceCount": 2,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://b/l", "OnCreate": "on_create.sh"},
                    "KubernetesConfig": {
                        "Labels": {"team": "ml"},
                        "Taints": [{"Key": "gpu", "Value": "true", "Effect": "NoSchedule"}],
                    },
                }
            ],
            VpcConfig={"Subnets": subnets, "SecurityGroupIds": [group]},
            Orchestrator={"Eks": {"ClusterArn": cluster["arn"]}},
        )
        assert kube.synced, "nodes were not synced at create"
        name, pending = kube.synced[-1]
        assert name == "k"
        assert {n.status for n in pending} == {"Pending"}
        assert all(n.instance_id.startswith("i-") and n.hyperpod_cluster == "hp" for n in pending)
        wait_for(lambda: sm.describe_cluster(ClusterName="hp")["ClusterStatus"] == "InService")
        running = wait_for(
            lambda: (
                kube.synced[-1][1]
                if {n.status for n in kube.synced[-1][1]} == {"Running"}
                else None
            )
        )
        assert running[0].labels["team"] == "ml"
        assert running[0].labels["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
        assert running[0].taints == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]

        sm.delete_cluster(ClusterName="hp")
        wait_for(lambda: kube.synced[-1][1] == [])
        eks.delete_cluster(name="k")
        wait_for(lambda: kube.stopped == ["k"])


class FailingKube(RecordingKube):
    def start_cluster(self, name: str) -> ClusterEndpoint:
        raise RuntimeError("no port left")


def test_cluster_fails_when_its_api_server_cannot_start() -> None:
    with SimulatedAws(
        get_profile("fast*0.2"), kube=FailingKube(), account_id="666666666666"
    ) as sim:
        ec2, iam, eks = aws_client(sim, "ec2"), aws_client(sim, "iam"), aws_client(sim, "eks")
        vpc = ec2.create_vpc(CidrBlock="10.6.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone)["Subnet"][
                "SubnetId"
            ]
            for cidr, zone in (("10.6.0.0/20", "use1-az1"), ("10.6.16.0/20", "use1-az2"))
        ]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        eks.create_cluster(name="f", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
        cluster = wait_for(
            lambda: (c := eks.describe_cluster(name="f")["cluster"])["status"] != "CREATING" and c
        )
        assert cluster["status"] == "FAILED"
        assert "no port left" in cluster["health"]["issues"][0]["message"]


def test_real_profile_takes_minutes() -> None:
    profile = get_profile("real")
    assert profile.eks_create >= 480
    with SimulatedAws(profile, account_id="888888888888") as sim:
        ec2, iam, eks = aws_client(sim, "ec2"), aws_client(sim, "iam"), aws_client(sim, "eks")
        vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZoneId=zone)["Subnet"][
                "SubnetId"
            ]
            for cidr, zone in (("10.8.0.0/20", "use1-az1"), ("10.8.16.0/20", "use1-az2"))
        ]
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        eks.create_cluster(name="slow", roleArn=role, resourcesVpcConfig={"subnetIds": subnets})
        time.sleep(1.0)
        assert eks.describe_cluster(name="slow")["cluster"]["status"] == "CREATING"
        assert sim.ctx.scheduler.pending() == 1
